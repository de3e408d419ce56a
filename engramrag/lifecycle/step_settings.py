"""The settings each global step's outputs depend on (``lifecycle.freshness``: changed settings, the step runs
again). One owner for the Dagster resource and for ``engram build``'s check that nothing needs to run, which must
not pay for importing Dagster."""

from __future__ import annotations

from engramrag.resolve.candidate_config import CandidateConfig
from engramrag.resolve.judge_config import JudgeConfig
from engramrag.revise.model_review_config import ModelReviewConfig
from engramrag.revise.supersession import SupersessionConfig
from engramrag.revise.versions import VersionConfig


def version_config(single_valued: str = "") -> VersionConfig:
    """The version chains' settings with more single-valued properties, ``single_valued`` being
    'name=word|word' entries separated by ';' ('sla=sla|응답 시간;tier=tier|등급')."""
    extra = tuple(entry.strip() for entry in single_valued.split(";") if entry.strip())
    return VersionConfig(extra_properties=extra)


def step_settings(embedder: str, versions: VersionConfig) -> dict[str, str]:
    """Per global step, its settings as text: the knobs of its config, the embedder (``embedder``, its name) the
    candidates compare labels with, the judge and model reviewer servers (from the environment), the version
    table."""
    judge = JudgeConfig.from_env()
    candidates = repr(CandidateConfig())
    proposals = repr(SupersessionConfig())
    model_review = ModelReviewConfig.from_env().settings()  # the model proposer and verifier, or "off"
    return {
        "resolution_candidates": f"{candidates}|{embedder}|{judge.enabled}|{judge.base_url}|{judge.model}",
        "resolution_overlay": candidates,
        "supersession_candidates": proposals,
        "accepted_supersessions": f"{proposals}|{model_review}",
        "document_timeline": repr(versions),
    }
