"""The shape of one document's graphs, built without a store: provenance stated once per graph, the author's
statements as Statement nodes whose start and quote give back their exact span, and what only the catalog needs
(co-occurrence pairs, mention counts) left out of the store."""

from __future__ import annotations

import pyoxigraph as ox

from engramrag.extract.rules import RulesExtractor
from engramrag.ontology.graphs import (
    AUTHORED_BY,
    CREATED_BY,
    DERIVED_FROM,
    LINE_START,
    ORIGINAL_LABEL,
    QUOTE,
    SPAN_START,
    STATEMENT,
    STATEMENT_LABEL_SPARQL,
    TYPE,
    build_document_graphs,
    statement_id,
)
from engramrag.ontology.vocab import ENGRAM, RDFS, STATEMENT_FRAGMENT, agent_iri, document_graphs, relation_iri
from engramrag.vault.config import VaultConfig
from engramrag.vault.document import span_of
from engramrag.vault.markdown import parse_document
from tests.conftest import EXAMPLE_VAULT

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
    doc = graphs.assertion_iri
    statements = {s for s, p, o in graphs.assertion if p == TYPE and o == STATEMENT}
    assert len(statements) == sum(1 for s in extraction.statements if s.role == "assertion") > 0
    said_by_statements = {p for s, p, _ in graphs.assertion if s in statements}
    assert not said_by_statements & {DERIVED_FROM, CREATED_BY, AUTHORED_BY}  # the graph says it once
    assert QUOTE in said_by_statements
    assert (doc, AUTHORED_BY, ox.NamedNode(str(agent_iri("Minji Park")))) in graphs.assertion
    created = [o for s, p, o in graphs.assertion if s == doc and p == CREATED_BY]
    assert len(created) == 1


def test_co_occurrence_pairs_and_mention_counts_stay_in_the_catalog() -> None:
    _, extraction, graphs = _graphs()
    pairs = {(s.subject, s.obj) for s in extraction.statements if s.predicate == "co_occurs_with"}
    assert len(pairs) >= 3  # Minji Park, Joon Lee, Ledger service, Postgres, Grafana share a sentence
    predicates = {str(p) for _, p, _ in graphs.assertion}
    assert f"<{relation_iri('co_occurs_with')}>" not in predicates
    assert {f"<{ENGRAM[name]}>" for name in ("mentionCount", "spanEnd", "lineEnd")}.isdisjoint(predicates)
    _, analysis = document_graphs("services/ledger.md")
    assert {quad.graph_name for quad in graphs.quads()} == {graphs.assertion_iri} != {ox.NamedNode(str(analysis))}


def test_a_statements_start_and_quote_give_back_its_exact_span_and_lines() -> None:
    """The store states where a span starts and its quote, not where it ends nor its lines: the end is the start
    plus the quote's length, and the lines follow from the start in the note's text (``span_of``'s rule)."""
    checked, several_lines = 0, 0
    for path in sorted(EXAMPLE_VAULT.rglob("*.md")):
        relative = path.relative_to(EXAMPLE_VAULT).as_posix()
        document = parse_document(path.read_bytes(), relative, VaultConfig())
        extraction = RulesExtractor().extract(document)
        graphs = build_document_graphs(document, extraction)
        facts: dict[ox.NamedNode, dict[ox.NamedNode, object]] = {}
        for s, p, o in graphs.assertion:
            if p in (SPAN_START, LINE_START, QUOTE):
                facts.setdefault(s, {})[p] = o.value
        prefix = f"{document_graphs(relative)[0]}{STATEMENT_FRAGMENT}"
        for statement in extraction.statements:
            if statement.role != "assertion" or statement.span is None:
                continue
            found = facts[ox.NamedNode(prefix + statement_id(statement))]
            start, quote = int(found[SPAN_START]), str(found[QUOTE])
            assert span_of(document.text, start, start + len(quote)) == statement.span
            assert LINE_START not in found
            checked += 1
            several_lines += statement.span.line_end > statement.span.line_start
    assert checked > 300 and several_lines > 0  # every located statement of the example vault


def test_every_statement_gives_back_its_original_label_from_its_own_node_or_its_graph() -> None:
    """A statement's original label is stated on its node only where it differs from its relation's wording in
    the graph; the SPARQL rule readers use gives back every statement's label as extracted."""
    store, expected, own_labels = ox.Store(), {}, 0
    for path in sorted(EXAMPLE_VAULT.rglob("*.md")):
        relative = path.relative_to(EXAMPLE_VAULT).as_posix()
        document = parse_document(path.read_bytes(), relative, VaultConfig())
        extraction = RulesExtractor().extract(document)
        graphs = build_document_graphs(document, extraction)
        store.extend(graphs.quads())
        prefix = f"{document_graphs(relative)[0]}{STATEMENT_FRAGMENT}"
        for statement in extraction.statements:
            if statement.role == "assertion":
                expected[prefix + statement_id(statement)] = statement.label
        own_labels += sum(1 for s, p, _ in graphs.assertion if p == ORIGINAL_LABEL and s.value.startswith(prefix))
    statements = f"?statement a <{ENGRAM.Statement}>"
    query = f"SELECT ?statement ?label WHERE {{ GRAPH ?g {{ {statements} {STATEMENT_LABEL_SPARQL} }} }}"
    found = {row["statement"].value: row["label"].value for row in store.query(query)}
    assert found == expected and len(expected) > 500
    # Most statements share their relation's wording in their note, so few nodes state a label of their own.
    assert 0 < own_labels < len(expected) / 5



def test_every_entity_is_an_engram_entity_through_the_kinds_its_graph_declares() -> None:
    """Entities are typed with their kind only; ``a/rdfs:subClassOf*`` reaches engram:Entity inside the graph."""
    store, entities = ox.Store(), 0
    for path in sorted(EXAMPLE_VAULT.rglob("*.md"))[:12]:
        relative = path.relative_to(EXAMPLE_VAULT).as_posix()
        document = parse_document(path.read_bytes(), relative, VaultConfig())
        extraction = RulesExtractor().extract(document)
        store.extend(build_document_graphs(document, extraction).quads())
        entities += len({entity.key for entity in extraction.entities})
    typed = store.query(
        "SELECT (COUNT(DISTINCT ?e) AS ?n) WHERE { GRAPH ?g { ?e a ?kind . ?kind rdfs:subClassOf* engram:Entity } }",
        prefixes={"rdfs": str(RDFS), "engram": str(ENGRAM)},
    )
    direct = store.query("ASK { GRAPH ?g { ?e a engram:Entity } }", prefixes={"engram": str(ENGRAM)})
    assert entities > 100 and int(next(iter(typed))["n"].value) == entities and not bool(direct)
