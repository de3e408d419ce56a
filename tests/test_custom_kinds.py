"""Custom kinds end to end, through a real OpenAI-compatible server on 127.0.0.1 (tests/llm_server.py): the model
answers "Dataset" (declared ``Dataset=Artifact``); the extraction keeps the kind and its declaration, the document
graph says ``kind:Dataset rdfs:subClassOf kind:Artifact``, the catalog keeps ``core_kind``, and resolution (run by
the build, and again later without the setting) treats the dataset as an Artifact: it merges with an Artifact of the
same name and is vetoed against a Person. A kind nothing declares (a catalog from before ``core_kind``) is compared
as Concept and reported, never an error."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pyoxigraph as ox
import pytest

from assets.resolution import resolution_candidates, resolution_overlay
from assets.resources import EngramStores
from engramrag.catalog.connection import catalog_reader
from engramrag.catalog.schema import SCHEMA_VERSION
from engramrag.embed.registry import make_embedder
from engramrag.extract.llm.cache import ResponseCache
from engramrag.extract.llm.config import LLMConfig, parse_custom_kinds
from engramrag.extract.llm.extractor import OpenAIExtractor
from engramrag.lifecycle.resolution import refresh_candidates, refresh_overlay
from engramrag.ontology.graphs import TYPE, build_document_graphs
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import ENGRAM, RDFS, document_iri, kind_iri
from engramrag.resolve.inputs import live_mentions
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.markdown import parse_document
from pipelines.build import run_build
from tests.conftest import build_environment, make_catalog_schema_2
from tests.llm_server import LLMServer, entity, extraction, segment_of

DATASET_NOTE, TOOLS_NOTE, PEOPLE_NOTE = "notes/dataset.md", "notes/tools.md", "notes/people.md"
NOTES = {
    DATASET_NOTE: "# Training data\n\nThe Iris Dataset trains the flower classifier.\n",
    TOOLS_NOTE: "# Tools\n\nIrisDataset ships as one CSV file in the repository.\n",
    PEOPLE_NOTE: "# People\n\nIris Data-Set is the nickname the team gave to Iris Park.\n",
}
ANSWERS = {
    DATASET_NOTE: extraction([entity("Iris Dataset", "dataset", "The Iris Dataset trains the flower classifier.")]),
    TOOLS_NOTE: extraction([entity("IrisDataset", "Artifact", "IrisDataset ships as one CSV file")]),
    PEOPLE_NOTE: extraction([entity("Iris Data-Set", "Person", "Iris Data-Set is the nickname")]),
}
DATASET, ARTIFACT, PERSON = "iris dataset", "irisdataset", "iris data-set"
SUBCLASS = f"<{kind_iri('Dataset')}> <{RDFS.subClassOf}> <{kind_iri('Artifact')}>"


def answer(request: dict[str, Any]) -> dict[str, Any]:
    return ANSWERS[segment_of(request)["document"]]


@dataclass
class Built:
    home: Home
    vault: Path
    checks: dict[str, bool]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """The three notes built through the model server with ``ENGRAM_LLM_CUSTOM_KINDS=Dataset=Artifact``, which the
    build's own resolution sees; the setting is gone again once the fixture is set up."""
    root = tmp_path_factory.mktemp("custom-kinds")
    vault = root / "vault"
    for relative, text in NOTES.items():
        (vault / relative).parent.mkdir(parents=True, exist_ok=True)
        (vault / relative).write_text(text, encoding="utf-8")
    home = Home.at(root / "home")
    with LLMServer(responder=answer) as server, build_environment(), pytest.MonkeyPatch.context() as patch:
        for name, value in {"ENGRAM_LLM_BASE_URL": server.url, "ENGRAM_LLM_MODEL": "test-model",
                            "ENGRAM_LLM_CUSTOM_KINDS": "Dataset=Artifact, Squad=Organization",
                            "ENGRAM_LLM_TIMEOUT_S": "20"}.items():  # fmt: skip
            patch.setenv(name, value)
        outcome = run_build(home, vault, extractor="openai")
        assert outcome.success, outcome.errors
        assert len(server.requests) == len(NOTES)
    yield Built(home, vault, outcome.checks)


def catalog_rows(home: Home, query: str) -> list[tuple]:
    with catalog_reader(home) as catalog:
        assert catalog is not None
        return catalog.execute(query).fetchall()


def candidate(home: Home, a: str, b: str) -> tuple:
    rows = catalog_rows(
        home,
        "SELECT left_key, right_key, left_kind, right_kind, vetoed, auto_merge, veto_reason FROM resolution_candidates",
    )
    [row] = [row for row in rows if {row[0], row[1]} == {a, b}]
    return row


def clusters(home: Home) -> dict[str, str]:
    return dict(catalog_rows(home, "SELECT entity_key, cluster_key FROM entity_clusters"))


# --- extraction and ontology ---------------------------------------------------------------------------------


def test_the_extraction_keeps_the_custom_kind_and_declares_only_the_custom_kinds_it_uses(tmp_path: Path) -> None:
    document = parse_document(NOTES[DATASET_NOTE].encode("utf-8"), DATASET_NOTE, VaultConfig())
    with LLMServer(responder=answer) as server:
        config = LLMConfig(base_url=server.url, model="test-model", timeout_s=5.0,
                           custom_kinds=parse_custom_kinds("Dataset=Artifact,Squad=Organization"))  # fmt: skip
        result = OpenAIExtractor(config, ResponseCache(tmp_path / "cache.sqlite")).extract(document)

    [dataset] = [e for e in result.entities if e.label == "Iris Dataset"]
    assert dataset.kind == "Dataset"  # the model's "dataset", as declared
    assert result.custom_kinds == {"Dataset": "Artifact"}  # Squad is declared but unused: not carried
    assert result.core_kind_of("Dataset") == "Artifact" and result.core_kind_of("Person") == "Person"
    assert result.core_kind_of("Squad") is None and result.core_kind_of("Gadget") is None

    graphs = build_document_graphs(document, result)
    declared = [(str(s), str(p), str(o)) for s, p, o in graphs.assertion if str(p) == f"<{RDFS.subClassOf}>"]
    assert [d for d in declared if d[2] != f"<{ENGRAM.Entity}>"] == [tuple(SUBCLASS.split(" "))]
    assert (f"<{kind_iri('Artifact')}>", f"<{RDFS.subClassOf}>", f"<{ENGRAM.Entity}>") in declared  # Dataset's core
    node_types = {str(o) for s, p, o in graphs.assertion if str(s).endswith(dataset.key + ">") and p == TYPE}
    assert node_types == {f"<{kind_iri('Dataset')}>"}  # an engram:Entity through Dataset's declarations


def test_the_quad_store_declares_the_custom_kind_in_the_graph_of_the_document_using_it(built: Built) -> None:
    with built.home.reading(), QuadStore.opened(built.home.quads_path, read_only=True) as quads:
        graphs = [
            str(row["g"].value)
            for row in quads.query(f"SELECT ?g WHERE {{ GRAPH ?g {{ {SUBCLASS} }} }}")
        ]
        typed = list(quads.query(
            f"SELECT ?e WHERE {{ GRAPH ?g {{ ?e a <{kind_iri('Dataset')}> ; <{RDFS.label}> \"Iris Dataset\" }} }}"
        ))
    assert graphs == [str(document_iri(DATASET_NOTE))]
    assert len(typed) == 1
    assert isinstance(typed[0]["e"], ox.NamedNode)


def test_the_catalog_keeps_the_core_kind_of_every_mention(built: Built) -> None:
    rows = catalog_rows(built.home, "SELECT label, kind, core_kind FROM entities ORDER BY label")
    by_label = {label: (kind, core) for label, kind, core in rows}
    assert by_label["Iris Dataset"] == ("Dataset", "Artifact")
    assert by_label["IrisDataset"] == ("Artifact", "Artifact")
    assert by_label["Iris Data-Set"] == ("Person", "Person")
    assert all(core == kind for kind, core in by_label.values() if kind != "Dataset")
    assert catalog_rows(built.home, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]


# --- resolution ----------------------------------------------------------------------------------------------


def assert_dataset_resolved_as_artifact(home: Home) -> None:
    _, _, left_kind, right_kind, vetoed, auto_merge, _ = candidate(home, DATASET, ARTIFACT)
    assert {left_kind, right_kind} == {"Dataset", "Artifact"} and not vetoed and auto_merge
    *_, vetoed, auto_merge, reason = candidate(home, DATASET, PERSON)
    assert vetoed and not auto_merge
    assert "Dataset (compared as Artifact)" in reason and "Person" in reason
    grouped = clusters(home)
    assert grouped[DATASET] == grouped[ARTIFACT]
    assert PERSON not in grouped  # a singleton: joined with neither


def test_the_builds_resolution_treats_the_dataset_as_an_artifact(built: Built) -> None:
    assert all(built.checks.values()), built.checks
    assert_dataset_resolved_as_artifact(built.home)


def test_resolution_run_later_without_the_setting_reads_the_declaration_from_the_catalog(
    built: Built, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ENGRAM_LLM_CUSTOM_KINDS", raising=False)
    home = Home.at(tmp_path / "home")
    shutil.copytree(built.home.root, home.root, dirs_exist_ok=True)
    with home.writing():
        duckdb.connect(str(home.catalog_path)).execute(
            "DROP TABLE resolution_candidates; DELETE FROM entity_clusters"
        ).close()
    config = VaultConfig(bucket_count=_bucket_count(home))
    candidates = refresh_candidates(home, config, make_embedder("hash"))
    overlay, clustering = refresh_overlay(home, config)
    assert candidates.unknown_kinds == {} and overlay.unknown_kinds == {} and clustering.unknown_kinds == ()
    assert_dataset_resolved_as_artifact(home)


# --- a kind nothing declares -----------------------------------------------------------------------------------


def test_an_undeclared_kind_is_compared_as_concept_and_reported_in_the_assets_metadata_and_log(
    built: Built, tmp_path: Path
) -> None:
    """A catalog of schema 2 (no ``core_kind``, NOT NULL decision lines), as an older program left it: read-only
    readers still read it; the resolution assets upgrade it, compare "Dataset" as Concept and say so."""
    home = Home.at(tmp_path / "home")
    shutil.copytree(built.home.root, home.root, dirs_exist_ok=True)
    make_catalog_schema_2(home.catalog_path, "DROP TABLE resolution_candidates; DELETE FROM entity_clusters")

    with catalog_reader(home) as reader:  # read-only: it cannot add the column, and need not
        mentions = live_mentions(reader)
    assert mentions["core_kind"].isna().all() and "Dataset" in set(mentions["kind"])

    stores = EngramStores(home=str(home.root), vault=str(built.vault))
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(
            [resolution_candidates, resolution_overlay], instance=instance, resources={"engram": stores}
        )
        assert result.success
        warnings = [
            entry.user_message for entry in instance.all_logs(result.run_id)
            if entry.dagster_event is None and entry.level >= logging.WARNING
        ]
    for step in ("resolution_candidates", "resolution_overlay"):
        [materialization] = result.asset_materializations_for_node(step)
        assert materialization.metadata["unknown_kinds"].value == {"Dataset": 1}
    expected = (
        "kinds that no core kind or custom-kind declaration covers were compared as Concept: Dataset (1 mentions)"
    )
    assert warnings == [expected, expected]

    columns = {name: nullable for name, nullable in catalog_rows(
        home, "SELECT column_name, is_nullable FROM information_schema.columns WHERE table_name = 'entities'")}
    assert columns["core_kind"] == "YES"
    assert catalog_rows(home, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    # Compared as Concept, the dataset is no longer vetoed against the Person: the difference the declaration makes.
    *_, vetoed, _auto, _reason = candidate(home, DATASET, PERSON)
    assert not vetoed


def _bucket_count(home: Home) -> int:
    return int(catalog_rows(home, "SELECT value FROM meta WHERE key = 'bucket_count'")[0][0])
