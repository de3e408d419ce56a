"""The shape of one document's graphs, built without a store: provenance stated once per graph, the author's
statements as Statement nodes with their own span and quote, the machine's co-occurrence pairs as plain triples."""

from __future__ import annotations

from collections import Counter

import pyoxigraph as ox

from engramrag.extract.rules import RulesExtractor
from engramrag.ontology.graphs import (
    AUTHORED_BY,
    CREATED_BY,
    DERIVED_FROM,
    QUOTE,
    STATEMENT,
    TYPE,
    build_document_graphs,
)
from engramrag.ontology.vocab import agent_iri, relation_iri
from engramrag.vault.config import VaultConfig
from engramrag.vault.markdown import parse_document

NOTE = """---
author: Minji Park
---
# Ledger service

Owner: Minji Park

Minji Park and Joon Lee moved the Ledger service to Postgres with Grafana dashboards.
"""


def _graphs():
    document = parse_document(NOTE.encode("utf-8"), "services/ledger.md", VaultConfig())
    extraction = RulesExtractor().extract(document)
    return document, extraction, build_document_graphs(document, extraction)


def test_provenance_is_stated_once_per_graph() -> None:
    _, extraction, graphs = _graphs()
    doc, analysis = graphs.assertion_iri, graphs.analysis_iri
    statements = {s for s, p, o in graphs.assertion if p == TYPE and o == STATEMENT}
    assert len(statements) == sum(1 for s in extraction.statements if s.role == "assertion") > 0
    said_by_statements = {p for s, p, _ in graphs.assertion if s in statements}
    assert not said_by_statements & {DERIVED_FROM, CREATED_BY, AUTHORED_BY}  # the graph says it once
    assert QUOTE in said_by_statements
    assert (doc, AUTHORED_BY, ox.NamedNode(str(agent_iri("Minji Park")))) in graphs.assertion
    created = [o for s, p, o in graphs.assertion if s == doc and p == CREATED_BY]
    assert len(created) == 1
    assert set(graphs.analysis) >= {(analysis, DERIVED_FROM, doc), (analysis, CREATED_BY, created[0])}


def test_co_occurrence_pairs_are_plain_triples_in_the_analysis_graph() -> None:
    _, extraction, graphs = _graphs()
    pairs = {(s.subject, s.obj) for s in extraction.statements if s.predicate == "co_occurs_with"}
    assert len(pairs) >= 3  # Minji Park, Joon Lee, Ledger service, Postgres, Grafana share a sentence
    assert not [t for t in graphs.analysis if t[1] == TYPE]  # no Statement nodes
    predicates = Counter(str(p) for _, p, _ in graphs.analysis)
    assert predicates[f"<{relation_iri('co_occurs_with')}>"] == len(pairs)
    assert len(graphs.analysis) == len(pairs) + 2  # the pairs and the graph's document and extractor


def test_a_document_without_pairs_has_no_analysis_graph() -> None:
    document = parse_document(b"# Alone\n\nNothing here names two things.\n", "alone.md", VaultConfig())
    graphs = build_document_graphs(document, RulesExtractor().extract(document))
    assert graphs.analysis == []

