"""Entity resolution: the machine's candidate pairs, and the overlay of people's verdicts that clusters them.

A kind nothing declares (neither core nor a custom kind recorded with its core kind at extraction) does not stop
either asset: it is compared as Concept, logged as a warning and listed in the metadata as ``unknown_kinds``.
"""

import dagster as dg

from assets.resources import STORE_POOL, EngramStores, is_consistency_pass, unless_fresh
from assets.retrieval import document_embeddings
from engramrag.lifecycle.resolution import refresh_candidates, refresh_overlay
from engramrag.resolve.judge_config import make_judge


@dg.asset(
    deps=[document_embeddings],
    group_name="resolution",
    kinds={"duckdb"},
    pool=STORE_POOL,
    description="Pairs of entities (stable keys: normalised labels) that may be the same thing, from surface forms, "
    "front-matter aliases, acronyms, label embeddings, kinds (incompatible kinds veto) and shared documents; "
    "with the evidence sentences of both sides. An optional LLM judge (ENGRAM_LLM_JUDGE=1) adds its opinion.",
)
def resolution_candidates(context: dg.AssetExecutionContext, engram: EngramStores) -> dg.MaterializeResult:
    judge = make_judge()  # None unless ENGRAM_LLM_JUDGE=1 (with ENGRAM_LLM_BASE_URL / _MODEL / _API_KEY)
    refresh = unless_fresh(
        context, engram, "resolution_candidates",
        lambda: refresh_candidates(
            engram.home_dir(), engram.vault_config(), engram.make_embedder(), judge=judge,
            search_all=is_consistency_pass(context),
        ),
    )  # fmt: skip
    if (summary := refresh.result) is None:
        return dg.MaterializeResult(metadata=refresh.metadata())
    _warn_unknown_kinds(context, summary.unknown_kinds)
    return dg.MaterializeResult(
        metadata=refresh.metadata() | {
            "keys": summary.keys,
            "candidates": summary.candidates,
            "vetoed": summary.vetoed,
            "automatic_merges": summary.automatic,
            "judged": summary.judged,
            "evidence_quoted": summary.evidence_quoted,
            "evidence_reused": summary.evidence_reused,
            "embedding_keys_searched": summary.embedding_searched,
            "embedding_lists_kept": summary.embedding_kept,
            "embedding_pairs_compared": summary.embedding_pairs_compared,
            "pairs_scored": summary.pairs_scored,
            "pairs_kept": summary.pairs_kept,
            "keys_changed": summary.keys_changed,
            "key_rows_computed": summary.key_rows_computed,
            "surface_pairs_kept": summary.surface_pairs_kept,
            "scored_whole": summary.scored_whole or "no: only pairs touching changed keys, and new pairs",
            "unknown_kinds": dg.MetadataValue.json(summary.unknown_kinds),
        }
    )


@dg.asset(
    deps=[resolution_candidates],
    group_name="resolution",
    kinds={"duckdb", "sqlite"},
    pool=STORE_POOL,
    description="Clusters of stable entity keys: the machine's confident pairs and people's `same` verdicts, never "
    "joining a pair a person marked distinct (also through a third entity). Quads are never rewritten; the "
    "retrieval index joins mentions by these clusters.",
)
def resolution_overlay(context: dg.AssetExecutionContext, engram: EngramStores) -> dg.MaterializeResult:
    refresh = unless_fresh(
        context, engram, "resolution_overlay", lambda: refresh_overlay(engram.home_dir(), engram.vault_config())[0]
    )
    if (summary := refresh.result) is None:
        return dg.MaterializeResult(metadata=refresh.metadata())
    _warn_unknown_kinds(context, summary.unknown_kinds)
    return dg.MaterializeResult(
        metadata=refresh.metadata() | {
            "keys": summary.keys,
            "clusters": summary.clusters,
            "merged_keys": summary.merged_keys,
            "person_verdicts": summary.person_verdicts,
            "clusters_kept": summary.clusters_kept,
            "blocked_automatic_merges": len(summary.blocked),
            "conflicting_person_verdicts": dg.MetadataValue.json(summary.conflicts),
            "unknown_kinds": dg.MetadataValue.json(summary.unknown_kinds),
        }
    )


def _warn_unknown_kinds(context: dg.AssetExecutionContext, unknown: dict[str, int]) -> None:
    if unknown:
        listed = ", ".join(f"{kind} ({count} mentions)" for kind, count in unknown.items())
        context.log.warning(
            f"kinds that no core kind or custom-kind declaration covers were compared as Concept: {listed}"
        )
