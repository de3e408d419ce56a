"""Model review of the machine's supersession proposals: a proposer, then an independent verifier (off by default).

With ``ENGRAM_LLM_SUPERSESSION=1`` and a model server configured (``revise.model_chat``), every proposal the
machine inferred (not one an author declared: those already count) is, best score first:

1. skipped as ``unverifiable`` (``decision-text``) when a side has no located text to quote from;
2. put to the proposer (``revise.proposer``): it stands only when it says the later decision supersedes the
   earlier one with a quote from each side verbatim in that side's text; otherwise the pair is ``not_proposed``
   (``proposer-proposes``), ``unverifiable`` (``quote-verbatim``, ``answer-format``) or ``failed`` (no answer:
   ``server-answered``);
3. put to the verifier (``revise.verifier``), a second call with other instructions that sees only the two texts
   and the claim: ``confirmed`` when it confirms with a verbatim quote from each side, else ``rejected``
   (``verifier-confirms``, with its reason), ``unverifiable`` or ``failed``.

Only ``confirmed`` counts: ``lifecycle.revision.apply_supersessions`` applies it like an author's declaration
(reason ``verified``, curated by the model as a software agent, in the later document's analysis graph) unless a
person rejects it. Everything else stays in the person's queue with the reason and the failed check. A person's
verdict always wins over both calls. A pair whose inputs (both texts, the model, the prompts) are unchanged keeps
its review without a new call, unless it failed. Without the setting or a server nothing is asked and the queue is
as it was.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engramrag.gitgraph.grounding import Failure
from engramrag.revise import proposer, verifier
from engramrag.revise.model_checks import PROPOSER_PROPOSES, SERVER_ANSWERED, VERIFIER_CONFIRMS, missing_text
from engramrag.revise.model_review_config import ModelReviewConfig
from engramrag.revise.supersession import SupersessionProposal

if TYPE_CHECKING:
    from engramrag.revise.model_chat import ModelChat

CONFIRMED, REJECTED, UNVERIFIABLE, NOT_PROPOSED, FAILED = (
    "confirmed", "rejected", "unverifiable", "not_proposed", "failed"
)  # fmt: skip
OUTCOMES = (CONFIRMED, REJECTED, UNVERIFIABLE, NOT_PROPOSED, FAILED)
PROPOSER, VERIFIER = "proposer", "verifier"
MODEL_AGENT_PREFIX = "model:"
PROMPTS = hashlib.blake2b(
    repr((proposer.SYSTEM_PROMPT, proposer.SCHEMA, verifier.SYSTEM_PROMPT, verifier.SCHEMA)).encode(), digest_size=8
).hexdigest()


@dataclass(frozen=True)
class ModelReview:
    """One pair's review, a row of ``supersession_model_reviews`` (same columns, same order)."""

    earlier_key: str
    later_key: str
    inputs: str
    outcome: str  # one of OUTCOMES
    stage: str  # the call that decided it: "proposer" | "verifier"
    failed_check: str | None
    failure: str | None
    proposer_supersedes: bool | None
    proposer_reason: str | None
    proposer_earlier_quote: str | None
    proposer_later_quote: str | None
    verifier_verdict: str | None
    verifier_reason: str | None
    verifier_earlier_quote: str | None
    verifier_later_quote: str | None
    model: str
    tokens_in: int
    tokens_out: int
    reviewed_at: datetime

    @property
    def pair(self) -> tuple[str, str]:
        return self.earlier_key, self.later_key

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ModelReview:
        return cls(**{spec.name: row[spec.name] for spec in fields(cls)})


COLUMNS = [spec.name for spec in fields(ModelReview)]


@dataclass
class ReviewSummary:
    """What the review did in one recomputation, for the asset's metadata."""

    enabled: bool = False
    problem: str = ""  # why the review is off although asked for (the server settings)
    asked: int = 0  # pairs sent to the model now
    reused: int = 0  # reviews kept: same texts, model and prompts as when they were made
    not_asked: int = 0  # beyond max_pairs, or after the server stopped answering
    proposed: int = 0  # pairs the proposer proposed with verbatim quotes (they went to the verifier)
    confirmed: int = 0
    rejected: int = 0
    unverifiable: int = 0
    not_proposed: int = 0
    failed: int = 0

    def metadata(self) -> dict[str, Any]:
        return asdict(self)


def model_agent(model: str) -> str:
    """The name a model's confirmation is attributed to (``supersessions.decided_by``, ``pav:curatedBy``)."""
    return MODEL_AGENT_PREFIX + model


def inputs_digest(proposal: SupersessionProposal, model: str) -> str:
    """What a review depends on: both decisions as the model sees them, the model and the prompts."""
    parts = [PROMPTS, model]
    for side in (proposal.earlier, proposal.later):
        parts += [side.title, side.decided_on or "", side.status or "", side.path, side.quote]
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=16).hexdigest()


def review_proposals(
    proposals: Sequence[SupersessionProposal],
    config: ModelReviewConfig,
    previous: Mapping[tuple[str, str], ModelReview] | None = None,
    chat: ModelChat | None = None,
) -> tuple[list[ModelReview], ReviewSummary]:
    """The reviews of the inferred ``proposals`` (declared ones are left out), best score first, and what was
    done. ``previous`` reviews whose inputs are unchanged are kept without a call (failed ones are asked again).
    Nothing is asked, and nothing returned, when the review is not active."""
    summary = ReviewSummary(enabled=config.active, problem=config.problem)
    if not config.active:
        return [], summary
    previous = previous or {}
    inferred = sorted((p for p in proposals if p.declared_in is None),
                      key=lambda p: (-p.score, p.earlier.key, p.later.key))  # fmt: skip
    kept: dict[tuple[str, str], ModelReview] = {}
    to_ask: list[tuple[SupersessionProposal, str]] = []
    for proposal in inferred:
        pair, digest = (proposal.earlier.key, proposal.later.key), inputs_digest(proposal, config.model)
        earlier = previous.get(pair)
        if earlier is not None and earlier.inputs == digest and earlier.outcome != FAILED:
            kept[pair] = earlier
        else:
            to_ask.append((proposal, digest))
    summary.reused = len(kept)
    summary.not_asked = max(0, len(to_ask) - config.max_pairs)
    to_ask = to_ask[: config.max_pairs]
    own = chat is None
    if chat is None:
        # The one place the client (and ``openai``) is imported: every build imports this module, few ask a model.
        from engramrag.revise.model_chat import ModelChat

        chat = ModelChat(config)
    breaker = _Breaker(config.unreachable_after)
    try:
        workers = max(1, min(config.server.concurrency if config.server else 1, len(to_ask) or 1))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="supersession-review") as pool:
            asked = list(pool.map(lambda item: breaker.run(lambda: _review(chat, *item, config.model)), to_ask))
    finally:
        if own:
            chat.close()
    new = {review.pair: review for review in asked if review is not None}
    summary.asked = len(new)
    summary.not_asked += sum(review is None for review in asked)
    reviews = [kept.get(pair) or new[pair] for pair in ((p.earlier.key, p.later.key) for p in inferred)
               if pair in kept or pair in new]  # fmt: skip
    for review in reviews:
        setattr(summary, review.outcome, getattr(summary, review.outcome) + 1)
    summary.proposed = sum(review.stage == VERIFIER for review in reviews)
    return reviews, summary


def review_reason(outcome: str | None, failure: str | None, proposer_reason: str | None,
                  verifier_reason: str | None) -> str | None:  # fmt: skip
    """One line for a person: why the review came out as it did."""
    if outcome in (CONFIRMED, REJECTED):
        return verifier_reason
    if outcome == NOT_PROPOSED:
        return proposer_reason
    if outcome == UNVERIFIABLE and verifier_reason:
        return f"{failure} (the verifier's own reason: {verifier_reason})"
    return failure


def _review(chat: ModelChat, proposal: SupersessionProposal, digest: str, model: str) -> tuple[ModelReview, bool]:
    """One pair's review, and whether the server answered (for the breaker)."""
    base = {"earlier_key": proposal.earlier.key, "later_key": proposal.later.key, "inputs": digest, "model": model,
            "proposer_supersedes": None, "proposer_reason": None, "proposer_earlier_quote": None,
            "proposer_later_quote": None, "verifier_verdict": None, "verifier_reason": None,
            "verifier_earlier_quote": None, "verifier_later_quote": None, "tokens_in": 0, "tokens_out": 0}  # fmt: skip
    missing = missing_text(proposal.earlier, proposal.later)
    if missing is not None:
        return _row(base, UNVERIFIABLE, PROPOSER, [missing]), True
    proposed = proposer.propose(chat, proposal)
    base |= {"proposer_supersedes": proposed.supersedes, "proposer_reason": proposed.reason or None,
             "proposer_earlier_quote": proposed.earlier_quote or None,
             "proposer_later_quote": proposed.later_quote or None,
             "tokens_in": proposed.tokens_in, "tokens_out": proposed.tokens_out}  # fmt: skip
    if not proposed.stands:
        return _row(base, _outcome(proposed.failures, PROPOSER_PROPOSES, NOT_PROPOSED), PROPOSER,
                    proposed.failures), proposed.reached
    verified = verifier.verify(chat, proposal)
    base |= {"verifier_verdict": verified.verdict, "verifier_reason": verified.reason or None,
             "verifier_earlier_quote": verified.earlier_quote or None,
             "verifier_later_quote": verified.later_quote or None,
             "tokens_in": base["tokens_in"] + verified.tokens_in,
             "tokens_out": base["tokens_out"] + verified.tokens_out}  # fmt: skip
    if verified.confirmed:
        return _row(base, CONFIRMED, VERIFIER, []), True
    return _row(base, _outcome(verified.failures, VERIFIER_CONFIRMS, REJECTED), VERIFIER,
                verified.failures), verified.reached


def _outcome(failures: Iterable[Failure], refusal: str, refused: str) -> str:
    checks = {failure.check for failure in failures}
    if SERVER_ANSWERED in checks:
        return FAILED
    return refused if checks == {refusal} else UNVERIFIABLE


def _row(base: dict[str, Any], outcome: str, stage: str, failures: Sequence[Failure]) -> ModelReview:
    return ModelReview(
        **base,
        outcome=outcome,
        stage=stage,
        failed_check=failures[0].check if failures else None,
        failure="; ".join(failure.detail for failure in failures) or None,
        reviewed_at=datetime.now(UTC).replace(tzinfo=None),
    )


class _Breaker:
    """After ``limit`` pairs in a row whose call reached no server, the remaining pairs are not asked."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.unreached = 0
        self.lock = threading.Lock()

    def run(self, review: Callable[[], tuple[ModelReview, bool]]) -> ModelReview | None:
        with self.lock:
            if self.unreached >= self.limit:
                return None
        result, reached = review()
        with self.lock:
            self.unreached = 0 if reached else self.unreached + 1
        return result


__all__ = [
    "COLUMNS",
    "CONFIRMED",
    "FAILED",
    "NOT_PROPOSED",
    "OUTCOMES",
    "REJECTED",
    "UNVERIFIABLE",
    "ModelReview",
    "ReviewSummary",
    "inputs_digest",
    "model_agent",
    "review_proposals",
    "review_reason",
]
