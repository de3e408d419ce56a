"""The asset checks pass on a clean build and fail on a corrupted catalog or quad store."""

from __future__ import annotations

import dagster as dg
import duckdb
import pyoxigraph as ox

from assets.catalog import document_catalog
from assets.resolution import resolution_overlay
from engramrag.checks import provenance
from engramrag.lifecycle.summary import documents_written_in
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import ENGRAM, PAV, PROV, analysis_graph_iri, document_iri
from pipelines.checks import provenance_checks, resolution_checks
from tests.conftest import Lifecycle


def check_results(lifecycle: Lifecycle, consistency_pass: bool = True) -> dict[str, bool]:
    result = dg.materialize(
        [document_catalog, *provenance_checks],
        instance=lifecycle.instance,
        resources={"engram": lifecycle.stores},
        raise_on_error=False,
        tags={"engram/pass": "consistency"} if consistency_pass else {},
    )
    return {evaluation.check_name: evaluation.passed for evaluation in result.get_asset_check_evaluations()}


def test_checks_pass_after_a_clean_build(lifecycle: Lifecycle):
    result = lifecycle.run_all()
    evaluations = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert evaluations == {
        "quads_belong_to_live_documents": True,
        "statements_name_document_and_extractor": True,
        "analysis_graphs_hold_no_author_assertions": True,
        "clusters_respect_distinct_verdicts": True,
        "overlay_names_existing_entities": True,
    }


def test_a_document_missing_from_the_catalog_fails_quads_belong_to_live_documents(lifecycle: Lifecycle):
    lifecycle.run_all()
    with lifecycle.home.writing():
        connection = duckdb.connect(str(lifecycle.home.catalog_path))
        connection.execute("DELETE FROM documents WHERE path = 'tools/duckdb.md'")
        connection.close()
    assert check_results(lifecycle)["quads_belong_to_live_documents"] is False
    # One check alone, as the UI runs it: the others of its step are not evaluated.
    alone = dg.materialize(
        [document_catalog, *provenance_checks],
        instance=lifecycle.instance,
        resources={"engram": lifecycle.stores},
        raise_on_error=False,
        selection=dg.AssetSelection.checks(dg.AssetCheckKey(document_catalog.key, "quads_belong_to_live_documents")),
        tags={"engram/pass": "consistency"},
    )
    assert {e.check_name: e.passed for e in alone.get_asset_check_evaluations()} == {
        "quads_belong_to_live_documents": False
    }


def test_a_statement_without_its_document_fails_statements_name_document_and_extractor(lifecycle: Lifecycle):
    lifecycle.run_all()
    graph = str(document_iri("tools/duckdb.md"))
    # the graph states its document once, as its own node: without it, its statements name no document
    with lifecycle.home.writing(), QuadStore.opened(lifecycle.home.quads_path) as store:
        store._store.update(
            f"DELETE {{ GRAPH <{graph}> {{ <{graph}> a <{ENGRAM.Document}> }} }} "
            f"WHERE {{ GRAPH <{graph}> {{ <{graph}> a <{ENGRAM.Document}> }} }}"
        )
    results = check_results(lifecycle)
    assert results["statements_name_document_and_extractor"] is False
    assert results["quads_belong_to_live_documents"] is True
    # an ordinary build checks only the graphs it wrote; the nightly consistency pass catches this one
    assert check_results(lifecycle, consistency_pass=False)["statements_name_document_and_extractor"] is True


def test_a_build_checks_the_graphs_it_wrote(lifecycle: Lifecycle, vault):
    lifecycle.run_all()
    graph = str(document_iri("tools/duckdb.md"))
    with lifecycle.home.writing(), QuadStore.opened(lifecycle.home.quads_path) as store:
        store._store.update(
            f"DELETE {{ GRAPH <{graph}> {{ <{graph}> <{PAV.createdBy}> ?d }} }} "
            f"WHERE {{ GRAPH <{graph}> {{ <{graph}> <{PAV.createdBy}> ?d }} }}"
        )
    assert check_results(lifecycle)["statements_name_document_and_extractor"] is False
    with (vault / "tools/duckdb.md").open("a", encoding="utf-8") as handle:
        handle.write("\nDuckDB keeps the catalog.\n")
    evaluations = {e.check_name: e for e in lifecycle.run_all().get_asset_check_evaluations()}
    # re-extraction replaced the damaged graph, and the check looked at exactly that document
    assert evaluations["statements_name_document_and_extractor"].passed
    assert evaluations["statements_name_document_and_extractor"].metadata["scope"].value == (
        "1 documents this run wrote or deleted"
    )


def test_a_statement_that_names_another_document_fails_its_check(lifecycle: Lifecycle):
    lifecycle.run_all()
    graph = str(document_iri("tools/duckdb.md"))
    elsewhere = str(document_iri("projects/falcon.md"))
    with lifecycle.home.writing(), QuadStore.opened(lifecycle.home.quads_path) as store:
        store._store.update(
            f"INSERT {{ GRAPH <{graph}> {{ ?s <{PROV.wasDerivedFrom}> <{elsewhere}> }} }} "
            f"WHERE {{ GRAPH <{graph}> {{ ?s a <{ENGRAM.Statement}> }} }}"
        )
    outcome = provenance.statements_name_document_and_extractor(lifecycle.home, ["tools/duckdb.md"])
    assert outcome.passed is False
    assert outcome.metadata["failing_statements"]
    assert provenance.statements_name_document_and_extractor(lifecycle.home, ["projects/falcon.md"]).passed


def test_an_author_assertion_in_an_analysis_graph_fails_its_check(lifecycle: Lifecycle):
    lifecycle.run_all()
    analysis = ox.NamedNode(str(analysis_graph_iri("tools/duckdb.md")))
    with lifecycle.home.writing(), QuadStore.opened(lifecycle.home.quads_path) as store:
        store._store.add(ox.Quad(ox.NamedNode("https://example.org/s"), ox.NamedNode(str(PAV.authoredBy)),
                                 ox.NamedNode("https://example.org/someone"), analysis))
    assert check_results(lifecycle)["analysis_graphs_hold_no_author_assertions"] is False


def test_graphs_left_behind_by_a_deleted_document_fail_the_scoped_check(lifecycle: Lifecycle, vault):
    lifecycle.run_all()
    (vault / "tools/grafana.md").unlink()
    run = lifecycle.run_all()
    assert {e.check_name: e.passed for e in run.get_asset_check_evaluations()}["quads_belong_to_live_documents"]
    stray = ox.NamedNode(str(document_iri("tools/grafana.md")))
    with lifecycle.home.writing(), QuadStore.opened(lifecycle.home.quads_path) as store:
        store._store.add(ox.Quad(ox.NamedNode("https://example.org/s"), ox.NamedNode("https://example.org/p"),
                                 ox.Literal("left behind"), stray))
    scope = documents_written_in(lifecycle.home, run.run_id)
    assert scope == ["tools/grafana.md"]
    outcome = provenance.quads_belong_to_live_documents(lifecycle.home, scope)
    assert outcome.passed is False
    assert provenance.quads_belong_to_live_documents(lifecycle.home, ["projects/falcon.md"]).passed is True


def test_a_check_that_cannot_run_fails_its_step_and_the_others_of_the_step_still_report(lifecycle: Lifecycle):
    lifecycle.run_all()
    lifecycle.home.decisions_path.write_bytes(b"not a database")  # the verdicts check cannot read the verdicts
    result = dg.materialize(
        [resolution_overlay, *resolution_checks],
        instance=lifecycle.instance,
        resources={"engram": lifecycle.stores},
        raise_on_error=False,
        selection=dg.AssetSelection.checks_for_assets(resolution_overlay),
    )
    assert not result.success
    assert {e.check_name: e.passed for e in result.get_asset_check_evaluations()} == {
        "overlay_names_existing_entities": True
    }
