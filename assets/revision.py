"""Decision supersession: proposals for people to review, and the accepted ones written into the graphs."""

import dagster as dg

from assets.catalog import document_catalog
from assets.resources import STORE_POOL, EngramStores, is_consistency_pass, unless_fresh
from engramrag.lifecycle.revision import apply_supersessions, refresh_supersession_candidates
from engramrag.lifecycle.timeline import refresh_timeline


@dg.asset(
    deps=[document_catalog],
    group_name="revision",
    kinds={"duckdb"},
    pool=STORE_POOL,
    description="Pairs (earlier, later) of dated decisions about the same subject where the later may replace the "
    "earlier: explicit Supersedes fields, shared subjects, similar titles, superseded statuses. Same-day pairs are "
    "flagged, not ordered.",
)
def supersession_candidates(context: dg.AssetExecutionContext, engram: EngramStores) -> dg.MaterializeResult:
    refresh = unless_fresh(
        context, engram, "supersession_candidates",
        lambda: refresh_supersession_candidates(engram.home_dir(), engram.vault_config())[0],
    )  # fmt: skip
    if (summary := refresh.result) is None:
        return dg.MaterializeResult(metadata=refresh.metadata())
    return dg.MaterializeResult(
        metadata=refresh.metadata()
        | {"decisions": summary.decisions, "proposals": summary.proposals, "same_day": summary.same_day}
    )


@dg.asset(
    deps=[supersession_candidates],
    group_name="revision",
    kinds={"oxigraph", "duckdb", "sqlite"},
    pool=STORE_POOL,
    description="People's accepted supersessions as `supersedes` edges in the later document's analysis graph, "
    "with who accepted them, and the ones authors declared unless a person rejected them. With "
    "ENGRAM_LLM_SUPERSESSION=1 and a model server, a model proposes and an independent call verifies the inferred "
    "ones, each with a verbatim quote from both decisions; a confirmed one is applied unless a person rejected it. "
    "The earlier decision stays; search labels it and ranks it below its successor.",
)
def accepted_supersessions(context: dg.AssetExecutionContext, engram: EngramStores) -> dg.MaterializeResult:
    refresh = unless_fresh(
        context, engram, "accepted_supersessions", lambda: apply_supersessions(engram.home_dir(), engram.vault_config())
    )
    if (summary := refresh.result) is None:
        return dg.MaterializeResult(metadata=refresh.metadata())
    return dg.MaterializeResult(
        metadata=refresh.metadata() | {
            "accepted": summary.accepted,
            "applied": summary.applied,
            "quads_added": summary.quads_added,
            "quads_removed": summary.quads_removed,
            "declared": summary.declared,
            "verified": summary.verified,
            "dormant": dg.MetadataValue.json(summary.dormant),
            **{f"model_{name}": value for name, value in summary.model_review.metadata().items()},
        }
    )


@dg.asset(
    deps=[accepted_supersessions, dg.AssetKey("resolution_overlay")],
    group_name="revision",
    kinds={"oxigraph", "duckdb"},
    pool=STORE_POOL,
    description="Time: notes their authors declared replaced (front matter superseded_by/supersedes, 'this "
    "replaces [[X]]'), applied without review and attributed to the author; and version chains of single-valued "
    "properties (owner, price, vendor, status, deadline...), whose older values are proposed as superseded by "
    "the later notes. A person's rejection wins. Search reads both to label and rank.",
)
def document_timeline(context: dg.AssetExecutionContext, engram: EngramStores) -> dg.MaterializeResult:
    refresh = unless_fresh(
        context, engram, "document_timeline",
        lambda: refresh_timeline(engram.home_dir(), engram.vault_config(), engram.version_config(),
                                 derive_all=is_consistency_pass(context)),
    )  # fmt: skip
    if (summary := refresh.result) is None:
        return dg.MaterializeResult(metadata=refresh.metadata())
    return dg.MaterializeResult(
        metadata=refresh.metadata() | {
            "declared": summary.declared,
            "values": summary.values,
            "chains": summary.chains,
            "proposed": summary.proposed,
            "rejected": summary.rejected,
            "quads_added": summary.quads_added,
            "quads_removed": summary.quads_removed,
            "notes_derived": summary.notes_derived,
            "notes_kept": summary.notes_kept,
            "notes_observed": summary.notes_observed,
            "observations_kept": summary.observations_kept,
            "outcome_reused": summary.outcome_reused,
        }
    )
