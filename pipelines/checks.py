"""The asset checks run after every build: provenance on the catalog, consistency on the resolution overlay.

Each asset's checks run in one step (``multi_asset_check``): a step costs Dagster about 0.1 s of events and
bookkeeping whatever it does, and a one-note edit ran five check steps. Every check keeps its own name, description
and result, and the UI can still run any one of them alone (``can_subset``)."""

from collections.abc import Callable, Iterator

import dagster as dg

from assets.catalog import document_catalog
from assets.resolution import resolution_overlay
from assets.resources import EngramStores, is_consistency_pass
from engramrag.checks import provenance, resolution
from engramrag.checks.expectations import CheckOutcome
from engramrag.lifecycle.summary import documents_written_in

_PROVENANCE = {
    "quads_belong_to_live_documents": (
        provenance.quads_belong_to_live_documents,
        "Every named graph is <doc> or <doc>#analysis of a document the catalog holds as live; the default graph is "
        "empty. Checks the graphs of the documents the run wrote or deleted; the consistency pass checks all.",
    ),
    "statements_name_document_and_extractor": (
        provenance.statements_name_document_and_extractor,
        "Every Statement node names the document it was derived from (prov:wasDerivedFrom, its own graph's "
        "document) and its extractor (pav:createdBy), on itself or through its graph, which states both once. "
        "Checks the graphs the run wrote; the consistency pass checks all.",
    ),
    "analysis_graphs_hold_no_author_assertions": (
        provenance.analysis_graphs_hold_no_author_assertions,
        "Analysis graphs hold machine inferences only: no pav:authoredBy triple appears in any <doc>#analysis "
        "graph. Checks the graphs the run wrote; the consistency pass checks all.",
    ),
}
_RESOLUTION = {
    "clusters_respect_distinct_verdicts": (
        resolution.clusters_respect_distinct_verdicts,
        "No cluster holds two entities a person marked distinct (directly or through a third entity).",
    ),
    "overlay_names_existing_entities": (
        resolution.overlay_names_existing_entities,
        "Every overlay row names the stable key of a live entity mention (great-expectations: values in set, keys "
        "unique).",
    ),
}


def _specs(asset: dg.AssetsDefinition, checks: dict[str, tuple[Callable, str]]) -> list[dg.AssetCheckSpec]:
    return [dg.AssetCheckSpec(name, asset=asset, description=description)
            for name, (_check, description) in checks.items()]  # fmt: skip


def _result(asset: dg.AssetsDefinition, name: str, outcome: CheckOutcome) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=asset.key,
        check_name=name,
        passed=outcome.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=outcome.description,
        metadata={key: dg.MetadataValue.json(value) if isinstance(value, list | dict) else value
                  for key, value in outcome.metadata.items()},
    )


def _evaluated(
    context: dg.AssetCheckExecutionContext, asset: dg.AssetsDefinition, checks: dict[str, tuple[Callable, str]],
    evaluate: Callable[[Callable], CheckOutcome],
) -> Iterator[dg.AssetCheckResult]:
    """The results of the selected ``checks`` of ``asset``; a check that raises does not keep the others from
    running, and the step then fails with its error (its result is left to Dagster, as for a check of its own)."""
    chosen = {key.name for key in context.selected_asset_check_keys if key.asset_key == asset.key}
    error: Exception | None = None
    for name, (check, _description) in checks.items():
        if name not in chosen:
            continue
        try:
            outcome = evaluate(check)
        except Exception as raised:  # raised again once the other checks have run
            context.log.error(f"{name} could not run: {raised!r}")
            error = error or raised
            continue
        yield _result(asset, name, outcome)
    if error is not None:
        raise error


@dg.multi_asset_check(specs=_specs(document_catalog, _PROVENANCE), can_subset=True, name="provenance_checks")
def document_provenance_holds(
    context: dg.AssetCheckExecutionContext, engram: EngramStores
) -> Iterator[dg.AssetCheckResult]:
    """The catalog's provenance checks, on the graphs of the documents the run wrote or deleted."""
    home = engram.home_dir()
    scope = _written_scope(context, engram)
    yield from _evaluated(context, document_catalog, _PROVENANCE, lambda check: check(home, scope))


def _written_scope(context: dg.AssetCheckExecutionContext, engram: EngramStores) -> list[str] | None:
    """Graphs change only when a run writes them, so a run checks what it wrote; the nightly consistency
    pass (and any run tagged engram/pass=consistency) checks everything."""
    if is_consistency_pass(context):
        return None
    return documents_written_in(engram.home_dir(), context.run.run_id)


@dg.multi_asset_check(specs=_specs(resolution_overlay, _RESOLUTION), can_subset=True, name="overlay_checks")
def overlay_holds(context: dg.AssetCheckExecutionContext, engram: EngramStores) -> Iterator[dg.AssetCheckResult]:
    """The resolution overlay's consistency checks."""
    home = engram.home_dir()
    yield from _evaluated(context, resolution_overlay, _RESOLUTION, lambda check: check(home))


resolution_checks = [overlay_holds]

provenance_checks = [document_provenance_holds]
