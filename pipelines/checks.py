"""Provenance checks on the catalog, run after every build."""

import dagster as dg

from assets.catalog import document_catalog
from assets.resources import EngramStores
from engramrag.checks import provenance
from engramrag.checks.expectations import CheckOutcome


def _result(outcome: CheckOutcome) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=outcome.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=outcome.description,
        metadata={key: dg.MetadataValue.json(value) if isinstance(value, list | dict) else value
                  for key, value in outcome.metadata.items()},
    )


@dg.asset_check(asset=document_catalog, description="Every named graph in the quad store is <doc> or "
                "<doc>#analysis of a document the catalog holds as live; the default graph is empty.")
def quads_belong_to_live_documents(engram: EngramStores) -> dg.AssetCheckResult:
    return _result(provenance.quads_belong_to_live_documents(engram.home_dir()))


@dg.asset_check(asset=document_catalog, description="Every Statement node names the document it was derived "
                "from (prov:wasDerivedFrom, its own graph's document) and its extractor (pav:createdBy).")
def statements_name_document_and_extractor(engram: EngramStores) -> dg.AssetCheckResult:
    return _result(provenance.statements_name_document_and_extractor(engram.home_dir()))


@dg.asset_check(asset=document_catalog, description="Analysis graphs hold machine inferences only: no "
                "pav:authoredBy triple appears in any <doc>#analysis graph.")
def analysis_graphs_hold_no_author_assertions(engram: EngramStores) -> dg.AssetCheckResult:
    return _result(provenance.analysis_graphs_hold_no_author_assertions(engram.home_dir()))


provenance_checks = [
    quads_belong_to_live_documents,
    statements_name_document_and_extractor,
    analysis_graphs_hold_no_author_assertions,
]
