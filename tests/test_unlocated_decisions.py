"""Decisions a model reports with a quote that is not verbatim in the document, through a real OpenAI-compatible
server on 127.0.0.1 (tests/llm_server.py): the decision is kept without a span (never with an invented one) and
counted with the unlocated quotes; the catalog row has NULL lines, also in a catalog an older program made with
NOT NULL lines; supersession proposes, and a person accepts, a pair with an unlocated side; the retrieval index and
search read it."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from engramrag.catalog.connection import catalog_reader
from engramrag.catalog.schema import SCHEMA_VERSION
from engramrag.decisions.store import SUPERSESSION, DecisionsStore
from engramrag.extract.builder import DOCUMENT_KEY
from engramrag.extract.llm.cache import ResponseCache
from engramrag.extract.llm.config import LLMConfig
from engramrag.extract.llm.extractor import OpenAIExtractor
from engramrag.ontology.graphs import SPAN_START, build_document_graphs
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import analysis_graph_iri
from engramrag.retrieve import Retriever
from engramrag.revise.supersession import SUPERSEDES, decision_key
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.markdown import parse_document
from pipelines.build import run_build
from pipelines.cli import main as engram
from tests.conftest import build_environment, make_catalog_schema_2
from tests.llm_server import LLMServer, decision, entity, extraction, segment_of

EARLIER_NOTE, LATER_NOTE = "notes/catalog-choice.md", "notes/catalog-move.md"
EARLIER_TEXT = "# Catalog choice\n\nOn 2026-01-14 the team chose DuckDB for the catalog. Status: superseded.\n"
LATER_TEXT = "# Catalog move\n\nIn March the team agreed that the catalog moves to PostgreSQL.\n"
EARLIER_QUOTE = "On 2026-01-14 the team chose DuckDB for the catalog."
LATER_QUOTE = "We will move the catalog to PostgreSQL."  # the model's paraphrase: not in the text
EARLIER_TITLE, LATER_TITLE = "Use DuckDB for the catalog", "Move the catalog to PostgreSQL"
ANSWERS = {
    EARLIER_NOTE: extraction(
        [entity("DuckDB", "Artifact", EARLIER_QUOTE)],
        decisions=[decision(EARLIER_TITLE, "2026-01-14", "superseded", EARLIER_QUOTE)],
    ),
    LATER_NOTE: extraction(
        [entity("PostgreSQL", "Artifact", "the catalog moves to PostgreSQL")],
        decisions=[decision(LATER_TITLE, "2026-03-02", "accepted", LATER_QUOTE)],
    ),
}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    return ANSWERS[segment_of(request)["document"]]


def extractor_for(server: LLMServer, cache: Path, **settings: Any) -> OpenAIExtractor:
    config = LLMConfig(base_url=server.url, model="test-model", timeout_s=5.0, **settings)
    return OpenAIExtractor(config, ResponseCache(cache))


# --- the extraction ------------------------------------------------------------------------------------------


def test_an_unlocated_decision_is_kept_without_a_span_and_counted(tmp_path: Path) -> None:
    document = parse_document(LATER_TEXT.encode("utf-8"), LATER_NOTE, VaultConfig())
    with LLMServer(responder=answer) as server:
        result = extractor_for(server, tmp_path / "cache.sqlite").extract(document)

    [record] = result.decisions
    assert (record.title, record.date, record.status, record.span) == (LATER_TITLE, "2026-03-02", "accepted", None)
    assert result.unlocated_quotes == 1  # the decision's quote; the entity's quote is verbatim
    [entity_] = [e for e in result.entities if e.key == record.entity_key]
    assert entity_.kind == "Decision" and entity_.spans == ()
    statements = {s.predicate: s for s in result.statements if record.entity_key in (s.subject, s.obj)}
    assert statements["records_decision"].subject == DOCUMENT_KEY and statements["records_decision"].span is None
    assert statements["decided_on"].obj == "2026-03-02" and statements["decided_on"].span is None

    graphs = build_document_graphs(document, result)  # a statement without a span has no span triples
    decision_statements = [s for s, p, o in graphs.assertion if str(o).endswith(record.entity_key + ">")
                           and str(p).endswith("#object>")]  # fmt: skip
    assert decision_statements
    spans = {s for s, p, _ in graphs.assertion if p == SPAN_START}
    assert not spans & set(decision_statements)


def test_a_decision_located_in_a_later_segment_keeps_that_span(tmp_path: Path) -> None:
    """The same decision (title and date) reported unlocated by one segment and quoted verbatim by another is one
    record, with the verbatim quote's span; the unlocated quote is still counted."""
    text = ("# Handbook\n\n## Storage\n\n" + "The catalog holds every note and its extraction. " * 4
            + "\n\n## Decisions\n\n" + "Decision: keep the catalog in DuckDB (2026-01-14). " * 2 + "\n")  # fmt: skip
    document = parse_document(text.encode("utf-8"), "handbook.md", VaultConfig())
    located = "Decision: keep the catalog in DuckDB (2026-01-14)."

    def by_segment(request: dict[str, Any]) -> dict[str, Any]:
        segment = segment_of(request)
        quote = located if located in segment["text"] else "We keep DuckDB as the catalog."
        return extraction(decisions=[decision("Keep the catalog in DuckDB", "2026-01-14", "accepted", quote)])

    with LLMServer(responder=by_segment) as server:
        result = extractor_for(server, tmp_path / "cache.sqlite", segment_chars=200).extract(document)
        assert len(server.requests) >= 2
    [record] = result.decisions
    assert record.span is not None and text[record.span.start : record.span.end] == located
    assert result.unlocated_quotes == len(server.requests) - 1


# --- the lifecycle -------------------------------------------------------------------------------------------


@dataclass
class Built:
    home: Home
    vault: Path
    server: LLMServer
    first_checks: dict[str, bool]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """The earlier note built first; the catalog then turned into what an older program left (decision lines NOT
    NULL, no ``core_kind``, schema 2); then the later note, whose decision is unlocated, built into it."""
    root = tmp_path_factory.mktemp("unlocated")
    vault = root / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / EARLIER_NOTE).write_text(EARLIER_TEXT, encoding="utf-8")
    home = Home.at(root / "home")
    with LLMServer(responder=answer) as server, build_environment(), pytest.MonkeyPatch.context() as patch:
        for name, value in {"ENGRAM_LLM_BASE_URL": server.url, "ENGRAM_LLM_MODEL": "test-model",
                            "ENGRAM_LLM_TIMEOUT_S": "20"}.items():  # fmt: skip
            patch.setenv(name, value)
        first = run_build(home, vault, extractor="openai")
        assert first.success, first.errors
        make_catalog_schema_2(home.catalog_path)
        (vault / LATER_NOTE).write_text(LATER_TEXT, encoding="utf-8")
        second = run_build(home, vault, extractor="openai")
        assert second.success, second.errors
        yield Built(home, vault, server, second.checks)


def rows(home: Home, query: str, parameters: list | None = None) -> list[tuple]:
    with catalog_reader(home) as catalog:
        assert catalog is not None
        return catalog.execute(query, parameters or []).fetchall()


def test_the_catalog_keeps_the_unlocated_decision_with_null_lines(built: Built) -> None:
    assert all(built.first_checks.values()), built.first_checks
    decisions = rows(built.home, "SELECT d.path, x.title, x.decided_on, x.status, x.line_start, x.line_end "
                                 "FROM decisions x JOIN documents d USING (doc_id) ORDER BY d.path")
    assert decisions == [
        (EARLIER_NOTE, EARLIER_TITLE, "2026-01-14", "superseded", 3, 3),
        (LATER_NOTE, LATER_TITLE, "2026-03-02", "accepted", None, None),
    ]
    assert rows(built.home, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    nullable = dict(rows(built.home, "SELECT column_name, is_nullable FROM information_schema.columns "
                                     "WHERE table_name = 'decisions'"))
    assert nullable["line_start"] == nullable["line_end"] == "YES"


def test_unlocated_quotes_are_counted_per_document_and_run_in_the_cost_report(built: Built) -> None:
    """The old catalog gained the column with 0 for its earlier rows; the later note's unlocated quote is 1."""
    counted = rows(built.home, "SELECT path, unlocated_quotes FROM extraction_runs ORDER BY finished_at, path")
    assert counted == [(EARLIER_NOTE, 0), (LATER_NOTE, 1)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert engram(["cost", "--home", str(built.home.root), "--json"]) == 0
    report = json.loads(out.getvalue())
    per_document = {row["path"]: row["unlocated_quotes"] for row in report["documents"]}
    assert per_document == {EARLIER_NOTE: 0, LATER_NOTE: 1}
    assert [run["unlocated_quotes"] for run in report["runs"]] == [0, 1]
    assert report["totals"]["unlocated_quotes"] == 1
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert engram(["cost", "--home", str(built.home.root)]) == 0
    assert f"{LATER_NOTE}: " in text.getvalue() and "1 quotes not found in the text" in text.getvalue()


def test_supersession_proposes_a_pair_with_an_unlocated_side_without_quoting_it(built: Built) -> None:
    found = rows(built.home, "SELECT earlier_key, later_key, earlier_line_start, earlier_quote, later_line_start, "
                             "later_line_end, later_quote FROM supersession_candidates")
    earlier, later = decision_key(EARLIER_NOTE, EARLIER_TITLE), decision_key(LATER_NOTE, LATER_TITLE)
    assert found == [(earlier, later, 3, EARLIER_TEXT.splitlines()[2], None, None, "")]


def test_an_accepted_supersession_of_an_unlocated_decision_reaches_the_graph_and_search(built: Built) -> None:
    earlier, later = decision_key(EARLIER_NOTE, EARLIER_TITLE), decision_key(LATER_NOTE, LATER_TITLE)
    DecisionsStore.for_home(built.home).decide(SUPERSESSION, earlier, later, "accept", "dana")
    with build_environment(), pytest.MonkeyPatch.context() as patch:
        for name, value in {"ENGRAM_LLM_BASE_URL": built.server.url, "ENGRAM_LLM_MODEL": "test-model"}.items():
            patch.setenv(name, value)
        outcome = run_build(built.home, built.vault, extractor="openai")  # nothing changed: the review assets
    assert outcome.success, outcome.errors
    assert rows(built.home, "SELECT earlier_title, later_title, later_date FROM supersessions") == [
        (EARLIER_TITLE, LATER_TITLE, "2026-03-02")
    ]
    graph = ox.NamedNode(str(analysis_graph_iri(LATER_NOTE)))
    with built.home.reading(), QuadStore.opened(built.home.quads_path, read_only=True) as quads:
        edges = [(row["later"].value, row["earlier"].value) for row in quads.query(
            f"SELECT ?later ?earlier WHERE {{ GRAPH {graph} {{ ?later {SUPERSEDES} ?earlier }} }}")]
    assert [(later.rsplit("/", 1)[-1].split("#")[0], earlier.rsplit("/", 1)[-1].split("#")[0])
            for later, earlier in edges] == [("catalog-move.md", "catalog-choice.md")]
    retriever = Retriever.open(built.home)
    try:
        answer_ = retriever.search("Which database holds the catalog?", k=5)
    finally:
        retriever.close()
    [hit] = [hit for hit in answer_.results if hit.doc == EARLIER_NOTE]
    assert hit.superseded_by and hit.superseded_by[0]["by_doc"] == LATER_NOTE
