"""Provenance checks on the catalog, run after every build."""

import dagster as dg

from assets.catalog import document_catalog
from assets.resolution import resolution_overlay
from assets.resources import EngramStores, is_consistency_pass
from engramrag.checks import provenance, resolution
from engramrag.checks.expectations import CheckOutcome
from engramrag.lifecycle.summary import documents_written_in


def _result(outcome: CheckOutcome) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=outcome.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=outcome.description,
        metadata={key: dg.MetadataValue.json(value) if isinstance(value, list | dict) else value
                  for key, value in outcome.metadata.items()},
    )


@dg.asset_check(asset=document_catalog, description="Every named graph is <doc> or <doc>#analysis of a document "
                "the catalog holds as live; the default graph is empty. Checks the graphs of the documents the run "
                "wrote or deleted; the consistency pass checks all.")
def quads_belong_to_live_documents(
    context: dg.AssetCheckExecutionContext, engram: EngramStores
) -> dg.AssetCheckResult:
    return _result(provenance.quads_belong_to_live_documents(engram.home_dir(), _written_scope(context, engram)))


def _written_scope(context: dg.AssetCheckExecutionContext, engram: EngramStores) -> list[str] | None:
    """Graphs change only when a run writes them, so a run checks what it wrote; the nightly consistency
    pass (and any run tagged engram/pass=consistency) checks everything."""
    if is_consistency_pass(context):
        return None
    return documents_written_in(engram.home_dir(), context.run.run_id)


@dg.asset_check(asset=document_catalog, description="Every Statement node names the document it was derived "
                "from (prov:wasDerivedFrom, its own graph's document) and its extractor (pav:createdBy), on "
                "itself or through its graph, which states both once. Checks the graphs the run wrote; the "
                "consistency pass checks all.")
def statements_name_document_and_extractor(
    context: dg.AssetCheckExecutionContext, engram: EngramStores
) -> dg.AssetCheckResult:
    home = engram.home_dir()
    return _result(provenance.statements_name_document_and_extractor(home, _written_scope(context, engram)))


@dg.asset_check(asset=document_catalog, description="Analysis graphs hold machine inferences only: no "
                "pav:authoredBy triple appears in any <doc>#analysis graph. Checks the graphs the run wrote; "
                "the consistency pass checks all.")
def analysis_graphs_hold_no_author_assertions(
    context: dg.AssetCheckExecutionContext, engram: EngramStores
) -> dg.AssetCheckResult:
    home = engram.home_dir()
    return _result(provenance.analysis_graphs_hold_no_author_assertions(home, _written_scope(context, engram)))


@dg.asset_check(asset=resolution_overlay, description="No cluster holds two entities a person marked distinct "
                "(directly or through a third entity).")
def clusters_respect_distinct_verdicts(engram: EngramStores) -> dg.AssetCheckResult:
    return _result(resolution.clusters_respect_distinct_verdicts(engram.home_dir()))


@dg.asset_check(asset=resolution_overlay, description="Every overlay row names the stable key of a live entity "
                "mention (great-expectations: values in set, keys unique).")
def overlay_names_existing_entities(engram: EngramStores) -> dg.AssetCheckResult:
    return _result(resolution.overlay_names_existing_entities(engram.home_dir()))


resolution_checks = [clusters_respect_distinct_verdicts, overlay_names_existing_entities]

provenance_checks = [
    quads_belong_to_live_documents,
    statements_name_document_and_extractor,
    analysis_graphs_hold_no_author_assertions,
]
