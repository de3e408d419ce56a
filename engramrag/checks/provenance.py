"""Provenance checks: every quad's graph belongs to a live document; every statement names its document and
extractor; analysis graphs hold no author assertions.

A statement names its document and extractor itself (``prov:wasDerivedFrom``, ``pav:createdBy`` on the node: a
reviewed supersession, a later value, graphs written before issue 16) or through its graph, which states them once
(``ontology/graphs.py``): the assertion graph is its document's node and names the extractor; the analysis graph
names its document and extractor about itself. Either way the document must be the graph's own."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple

import pandas as pd
import pyoxigraph as ox

from engramrag.catalog.connection import catalog_reader
from engramrag.checks.expectations import CheckOutcome, validate_frame
from engramrag.ontology.graphs import Term
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import ANALYSIS_SUFFIX, ENGRAM, PAV, PROV, RDF, document_graphs, path_of_graph
from engramrag.store import Home

# Past this many documents a scoped check reads the whole store at once instead of graph by graph.
SCOPE_LIMIT = 2000

TYPE, STATEMENT, DOCUMENT = str(RDF.type), str(ENGRAM.Statement), str(ENGRAM.Document)
DERIVED_FROM, CREATED_BY, AUTHORED_BY = str(PROV.wasDerivedFrom), str(PAV.createdBy), str(PAV.authoredBy)
STATEMENTS_PER_GRAPH = f"SELECT ?g (COUNT(?s) AS ?n) WHERE {{ GRAPH ?g {{ ?s a <{STATEMENT}> }} }} GROUP BY ?g"


class _StatementRow(NamedTuple):
    failing_statement: str | None  # the statement's IRI where a flag fails
    names_document: bool
    names_extractor: bool
    names_own_document: bool


def _scoped_graphs(documents: list[str] | None, analysis_only: bool = False) -> list[str] | None:
    if documents is None or len(documents) > SCOPE_LIMIT:
        return None
    graphs = [str(g) for path in documents for g in document_graphs(path)]
    return graphs[1::2] if analysis_only else graphs


def _live_paths(home: Home) -> set[str]:
    with catalog_reader(home) as catalog:
        if catalog is None:
            return set()
        return {row[0] for row in catalog.execute("SELECT path FROM documents WHERE NOT gone").fetchall()}


def quads_belong_to_live_documents(home: Home, documents: list[str] | None = None) -> CheckOutcome:
    """Checks every named graph (None), or the graphs of ``documents`` (those a run wrote or deleted): a
    graph appears only when a run writes it and should vanish when a run deletes its document."""
    import great_expectations.expectations as gxe

    live = _live_paths(home)
    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        if documents is None:
            graphs = quads.named_graphs()
        else:
            candidates = [str(graph) for path in documents for graph in document_graphs(path)]
            graphs = [graph for graph in candidates if quads.has_graph(graph)]
        default_graph = sum(1 for _ in quads.query("SELECT * WHERE { ?s ?p ?o } LIMIT 1"))
    frame = pd.DataFrame({"graph": graphs, "document": [path_of_graph(graph) for graph in graphs]})
    # The membership is computed here (great-expectations carries a value set of 10,000 paths slowly) and the
    # expectation is that no graph names a document outside it.
    # A set lookup per graph: pandas' isin against the 100,000 live paths took 0.8 s for the two graphs of an edit.
    frame["document_not_live"] = [None if document in live else document for document in frame["document"].tolist()]
    passed, failures = validate_frame(
        "named_graphs",
        frame,
        [
            gxe.ExpectColumnValuesToNotBeNull(column="document"),
            gxe.ExpectColumnValuesToBeNull(column="document_not_live"),
        ],
    )
    passed = passed and default_graph == 0
    if default_graph:
        failures.append({"expectation": "no quads in the default graph", "unexpected_count": default_graph})
    return CheckOutcome(
        passed,
        f"{len(graphs)} named graphs of {_described(documents)}, {len(live)} live documents"
        + ("" if passed else f"; {sum(f.get('unexpected_count') or 0 for f in failures)} stray graphs"),
        {"graphs": len(graphs), "scope": _described(documents), "live_documents": len(live), "failures": failures},
    )


def statements_name_document_and_extractor(home: Home, documents: list[str] | None = None) -> CheckOutcome:
    """Checks the graphs of ``documents`` (those a run extracted), or every graph when None."""
    import great_expectations.expectations as gxe

    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        rows = _statement_rows(quads, _scoped_graphs(documents))
    frame = pd.DataFrame(rows, columns=list(_StatementRow._fields))
    passed, failures = validate_frame(
        "statements",
        frame,
        [
            gxe.ExpectColumnValuesToBeInSet(column="names_document", value_set=[True]),
            gxe.ExpectColumnValuesToBeInSet(column="names_extractor", value_set=[True]),
            gxe.ExpectColumnValuesToBeInSet(column="names_own_document", value_set=[True]),
        ],
    )
    return CheckOutcome(
        passed,
        f"{len(frame)} statements checked in {_described(documents)}"
        + ("" if passed else "; some lack their document or extractor"),
        {
            "statements": len(frame),
            "scope": _described(documents),
            "failures": failures,
            "failing_statements": frame["failing_statement"].dropna().head(5).tolist(),
        },
    )


def analysis_graphs_hold_no_author_assertions(home: Home, documents: list[str] | None = None) -> CheckOutcome:
    """Checks the analysis graphs of ``documents``, or every graph when None."""
    import great_expectations.expectations as gxe

    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        rows = [
            (quad.graph_name.value, quad.subject.value, str(quad.object.value))
            for quad in quads.matching(AUTHORED_BY, graphs=_scoped_graphs(documents, analysis_only=True))
            if quad.graph_name.value.endswith(ANALYSIS_SUFFIX)
        ]
    frame = pd.DataFrame(rows, columns=["graph", "subject", "author"])
    passed, failures = validate_frame(
        "analysis_authorship", frame, [gxe.ExpectTableRowCountToEqual(value=0)]
    )
    return CheckOutcome(
        passed,
        (f"no pav:authoredBy in the analysis graphs of {_described(documents)}" if passed
         else f"{len(frame)} author assertions in analysis graphs"),
        {
            "scope": _described(documents),
            "violations": len(frame),
            "examples": [f"{g} {s}" for g, s, _ in rows[:5]],
            "failures": failures,
        },
    )


def _statement_rows(quads: QuadStore, graphs: list[str] | None) -> list[_StatementRow]:
    """One narrow row per statement node of ``graphs`` (None: every named graph): its own
    ``prov:wasDerivedFrom``/``pav:createdBy`` (a row per combination of its values) or else its graph's, and its
    IRI only where a flag fails. The rows of one SPARQL solution per statement with OPTIONAL joins for its own
    provenance (``tests/test_provenance_rows.py`` keeps that query as the reference).

    Read as counts and pattern ranges instead: those OPTIONAL joins cost 21 s at 10,000 notes (403,441 statement
    nodes) and about 1,350 s at 100,000, where counting the statements per graph takes 0.4 s and the few statements
    with provenance of their own (3,931) are found from the two predicates' ranges."""
    if graphs is None:
        counts = {row["g"].value: int(row["n"].value) for row in quads.query(STATEMENTS_PER_GRAPH)}
    else:
        counts = Counter(quad.graph_name.value for quad in quads.matching(TYPE, STATEMENT, graphs))
    graph_document: dict[str, Term] = {
        quad.graph_name.value: quad.subject for quad in quads.matching(TYPE, DOCUMENT, graphs)
        if quad.subject == quad.graph_name
    }  # fmt: skip
    graph_extractor: dict[str, Term] = {}
    # Per graph, per statement with provenance of its own: its documents and its extractors.
    stated: dict[str, dict[str, dict[str, list[Term]]]] = defaultdict(dict)
    statement_type = ox.NamedNode(TYPE), ox.NamedNode(STATEMENT)
    for predicate in (DERIVED_FROM, CREATED_BY):
        for quad in quads.matching(predicate, graphs=graphs):
            graph = quad.graph_name.value
            if quad.subject == quad.graph_name:
                if predicate == DERIVED_FROM:
                    graph_document.setdefault(graph, quad.object)
                else:
                    graph_extractor[graph] = quad.object
            elif quads.contains(ox.Quad(quad.subject, *statement_type, quad.graph_name)):
                own = stated[graph].setdefault(quad.subject.value, {DERIVED_FROM: [], CREATED_BY: []})
                own[predicate].append(quad.object)
    rows: list[_StatementRow] = []
    for graph, count in counts.items():
        # A graph's document counts only where the graph states one (the query's UNION), its extractor with it.
        document = graph_document.get(graph)
        extractor = graph_extractor.get(graph) if document is not None else None
        own_statements = stated.get(graph, {})
        for statement, own in own_statements.items():
            rows += [
                _row(statement, graph, document if own_document is None else own_document,
                     extractor if own_extractor is None else own_extractor)
                for own_document in own[DERIVED_FROM] or [None]
                for own_extractor in own[CREATED_BY] or [None]
            ]  # fmt: skip
        shared = count - len(own_statements)
        if shared and _row("", graph, document, extractor).failing_statement is not None:
            # Rare (a damaged graph): name each failing statement.
            rows += [
                _row(quad.subject.value, graph, document, extractor)
                for quad in quads.matching(TYPE, STATEMENT, [graph])
                if quad.subject.value not in own_statements
            ]
        else:
            rows += [_row("", graph, document, extractor)] * shared
    return rows


def _row(statement: str, graph: str, document: Term | None, extractor: Term | None) -> _StatementRow:
    own = document is not None and graph.removesuffix(ANALYSIS_SUFFIX) == document.value
    ok = own and extractor is not None
    return _StatementRow(None if ok else statement, document is not None, extractor is not None, own)


def _described(documents: list[str] | None) -> str:
    return "every document" if documents is None else f"{len(documents)} documents this run wrote or deleted"
