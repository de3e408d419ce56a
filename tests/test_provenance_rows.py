"""The statement provenance check reads pattern ranges and counts (checks/provenance.py): on a store with every
kind of statement it gives the rows the check's earlier SPARQL reading gave (kept here as the reference), and it
names the statements that fail. No build: a small Oxigraph store in a temp folder."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyoxigraph as ox
import pytest

from engramrag.checks import provenance
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import ENGRAM, PAV, PROV, RDF, analysis_graph_iri, document_iri
from engramrag.store import Home

TYPE, STATEMENT, DOCUMENT = (
    ox.NamedNode(str(RDF.type)),
    ox.NamedNode(str(ENGRAM.Statement)),
    ox.NamedNode(str(ENGRAM.Document)),
)
DERIVED, CREATED, AUTHORED = (ox.NamedNode(str(PROV.wasDerivedFrom)), ox.NamedNode(str(PAV.createdBy)),
                              ox.NamedNode(str(PAV.authoredBy)))  # fmt: skip
RULES, MODEL = ox.NamedNode("urn:engram:extractor:rules"), ox.NamedNode("urn:engram:extractor:model")

# The check's reading before it used patterns: one SPARQL row per statement, OPTIONAL joins for its own provenance.
STATEMENTS = f"""SELECT ?g ?statement ?document ?extractor WHERE {{ GRAPH ?g {{
  ?statement a <{ENGRAM.Statement}> .
  OPTIONAL {{ ?statement <{PROV.wasDerivedFrom}> ?document }} OPTIONAL {{ ?statement <{PAV.createdBy}> ?extractor }}
}} }}"""
GRAPHS = f"""SELECT ?g ?document ?extractor WHERE {{ GRAPH ?g {{
  {{ ?g a <{ENGRAM.Document}> BIND(?g AS ?document) }} UNION {{ ?g <{PROV.wasDerivedFrom}> ?document }}
  OPTIONAL {{ ?g <{PAV.createdBy}> ?extractor }}
}} }}"""


def reference_rows(quads: QuadStore) -> Counter:
    stated = {row["g"].value: (row["document"], row["extractor"]) for row in quads.query(GRAPHS)}
    rows: Counter = Counter()
    for row in quads.query(STATEMENTS):
        graph_document, graph_extractor = stated.get(row["g"].value, (None, None))
        document = row["document"] or graph_document
        extractor = row["extractor"] or graph_extractor
        own = document is not None and row["g"].value.removesuffix("#analysis") == document.value
        ok = own and extractor is not None
        rows[(None if ok else row["statement"].value, document is not None, extractor is not None, own)] += 1
    return rows


def node(graph: ox.NamedNode, name: str) -> ox.NamedNode:
    return ox.NamedNode(f"{graph.value}#s-{name}")


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """A home whose quad store holds statements of every kind (and nothing else)."""
    quads = QuadStore(Home.at(tmp_path).quads_path)
    a, a_analysis = (ox.NamedNode(str(iri)) for iri in (document_iri("a.md"), analysis_graph_iri("a.md")))
    b = ox.NamedNode(str(document_iri("b.md")))
    damaged = ox.NamedNode(str(document_iri("damaged.md")))
    stray, stray_analysis = (
        ox.NamedNode(str(document_iri("stray.md"))),
        ox.NamedNode(str(analysis_graph_iri("stray.md"))),
    )
    rows = [
        # a.md: the graph states its document and extractor once; statements of every kind.
        (a, TYPE, DOCUMENT, a),
        (a, CREATED, RULES, a),
        (a, AUTHORED, ox.Literal("Minji"), a),
        *[(node(a, f"plain{i}"), TYPE, STATEMENT, a) for i in range(5)],
        (node(a, "reviewed"), TYPE, STATEMENT, a),
        (node(a, "reviewed"), DERIVED, a, a),
        (node(a, "reviewed"), CREATED, MODEL, a),
        (node(a, "elsewhere"), TYPE, STATEMENT, a),
        (node(a, "elsewhere"), DERIVED, b, a),
        (node(a, "two"), TYPE, STATEMENT, a),
        (node(a, "two"), CREATED, RULES, a),
        (node(a, "two"), CREATED, MODEL, a),
        (node(a, "not-a-statement"), DERIVED, b, a),
        (a_analysis, DERIVED, a, a_analysis),
        (a_analysis, CREATED, RULES, a_analysis),
        *[(node(a, f"pair{i}"), TYPE, STATEMENT, a_analysis) for i in range(3)],
        # b.md: its graph states no extractor.
        (b, TYPE, DOCUMENT, b),
        (node(b, "one"), TYPE, STATEMENT, b),
        # damaged.md: its graph lost its document; one statement names its own.
        (damaged, CREATED, RULES, damaged),
        *[(node(damaged, f"lost{i}"), TYPE, STATEMENT, damaged) for i in range(3)],
        (node(damaged, "kept"), TYPE, STATEMENT, damaged),
        (node(damaged, "kept"), DERIVED, damaged, damaged),
        # stray.md: an analysis graph that names another document, with an author assertion.
        (stray_analysis, DERIVED, a, stray_analysis),
        (stray_analysis, CREATED, RULES, stray_analysis),
        (node(stray, "x"), TYPE, STATEMENT, stray_analysis),
        (node(stray, "x"), AUTHORED, ox.Literal("Minji"), stray_analysis),
        (stray, TYPE, DOCUMENT, stray),
    ]
    for subject, predicate, obj, graph in rows:
        quads._store.add(ox.Quad(subject, predicate, obj, graph))
    quads._store.add(ox.Quad(node(a, "default"), TYPE, STATEMENT))  # the default graph is not checked
    quads.close()
    return Home.at(tmp_path)


def test_statement_rows_equal_the_sparql_reading_and_name_the_failing_statements(home: Home) -> None:
    with QuadStore.opened(home.quads_path, read_only=True) as store:
        check_rows(store)


def check_rows(store: QuadStore) -> None:
    found = Counter(tuple(row) for row in provenance._statement_rows(store, None))
    assert found == reference_rows(store)
    failing = {statement for statement, *_ in found if statement is not None}
    damaged = str(document_iri("damaged.md"))
    assert failing == {
        f"{document_iri('a.md')}#s-elsewhere",
        f"{document_iri('b.md')}#s-one",
        *(f"{damaged}#s-lost{i}" for i in range(3)),
        f"{damaged}#s-kept",  # kept: its graph names no extractor
        f"{document_iri('stray.md')}#s-x",
    }
    assert sum(found.values()) == 18 and found[(None, True, True, True)] == 11

    # Scoped to some graphs: the same rows as the whole reading restricted to them.
    scope = [str(document_iri("a.md")), str(document_iri("damaged.md"))]
    scoped = Counter(tuple(row) for row in provenance._statement_rows(store, scope))
    assert sum(scoped.values()) == 9 + 4  # a.md: 5 plain, reviewed, elsewhere, two (a row per extractor); damaged
    assert {key for key in scoped if key[0]} == {
        (f"{document_iri('a.md')}#s-elsewhere", True, True, False),
        *((f"{damaged}#s-lost{i}", False, False, False) for i in range(3)),
        (f"{damaged}#s-kept", True, False, True),
    }
    assert scoped == Counter(
        {key: count for key, count in found.items() if key[0] is None or key[0].startswith(tuple(scope))}
    ) - Counter({(None, True, True, True): 3})  # without a.md's analysis pairs


def test_the_checks_over_the_whole_store_report_the_damage(home: Home) -> None:
    statements = provenance.statements_name_document_and_extractor(home)
    assert not statements.passed and statements.metadata["statements"] == 18
    assert len(statements.metadata["failing_statements"]) == 5  # the first five of the seven
    authors = provenance.analysis_graphs_hold_no_author_assertions(home)
    # a.md's own graph may name its author; stray.md's analysis graph may not
    assert not authors.passed and authors.metadata["examples"] == [
        f"{analysis_graph_iri('stray.md')} {document_iri('stray.md')}#s-x"
    ]
    scoped = provenance.analysis_graphs_hold_no_author_assertions(home, ["a.md"])
    assert scoped.passed and scoped.metadata["violations"] == 0
