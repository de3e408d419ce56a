"""Provenance checks: every quad's graph belongs to a live document; every statement names its document and
extractor; analysis graphs hold no author assertions.

A statement names its document and extractor itself (``prov:wasDerivedFrom``, ``pav:createdBy`` on the node: a
reviewed supersession, a later value, graphs written before issue 16) or through its graph, which states them once
(``ontology/graphs.py``): the assertion graph is its document's node and names the extractor; the analysis graph
names its document and extractor about itself. Either way the document must be the graph's own."""

from __future__ import annotations

import pandas as pd

from engramrag.catalog.connection import catalog_reader
from engramrag.checks.expectations import CheckOutcome, validate_frame
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import ANALYSIS_SUFFIX, ENGRAM, PAV, PROV, document_graphs, path_of_graph
from engramrag.store import Home

STATEMENT_PROVENANCE = f"""
SELECT ?g ?statement ?document ?extractor WHERE {{
  GRAPH %(graph)s {{
    ?statement a <{ENGRAM.Statement}> .
    OPTIONAL {{ ?statement <{PROV.wasDerivedFrom}> ?document }}
    OPTIONAL {{ ?statement <{PAV.createdBy}> ?extractor }}
  }}
  %(bind)s
}}"""

# What each graph states about itself: its document (the node itself for an assertion graph) and its extractor.
GRAPH_PROVENANCE = f"""
SELECT ?g ?document ?extractor WHERE {{
  GRAPH %(graph)s {{
    {{ %(self)s a <{ENGRAM.Document}> BIND(%(self)s AS ?document) }}
    UNION {{ %(self)s <{PROV.wasDerivedFrom}> ?document }}
    OPTIONAL {{ %(self)s <{PAV.createdBy}> ?extractor }}
  }}
  %(bind)s
}}"""

AUTHOR_ASSERTIONS = f"""
SELECT ?g ?s ?author WHERE {{
  GRAPH %(graph)s {{ ?s <{PAV.authoredBy}> ?author }}
  %(bind)s
}}"""

# Past this many documents a scoped check reads the whole store in one query instead of graph by graph.
SCOPE_LIMIT = 2000


def _solutions(quads: QuadStore, template: str, graphs: list[str] | None):
    """Run ``template`` over every graph (None) or graph by graph. A constant ``GRAPH <g>`` lets Oxigraph read
    only that graph's quads; a VALUES block over ?g does not (measured: 10.6 s against 0.02 s for one
    document in a 1,000-document store)."""
    if graphs is None:
        yield from quads.query(template % {"graph": "?g", "self": "?g", "bind": ""})
        return
    for graph in graphs:
        yield from quads.query(
            template % {"graph": f"<{graph}>", "self": f"<{graph}>", "bind": f"BIND(<{graph}> AS ?g)"}
        )


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
    frame["document_not_live"] = frame["document"].where(~frame["document"].isin(live))
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

    # One narrow row per statement (a million statements at 10,000 documents): flags, and the IRI only where a
    # flag fails, so that the frame stays small and the failures still name their statements.
    rows = []
    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        scope = _scoped_graphs(documents)
        stated = {
            solution["g"].value: (solution["document"], solution["extractor"])
            for solution in _solutions(quads, GRAPH_PROVENANCE, scope)
        }
        for solution in _solutions(quads, STATEMENT_PROVENANCE, scope):
            graph_document, graph_extractor = stated.get(solution["g"].value, (None, None))
            document = solution["document"] or graph_document
            extractor = solution["extractor"] or graph_extractor
            own = document is not None and solution["g"].value.removesuffix(ANALYSIS_SUFFIX) == document.value
            ok = own and extractor is not None
            rows.append((None if ok else solution["statement"].value, document is not None, extractor is not None,
                         own))
    frame = pd.DataFrame(rows, columns=["failing_statement", "names_document", "names_extractor",
                                        "names_own_document"])
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
        graphs = _scoped_graphs(documents, analysis_only=True)
        if graphs is None:
            graphs = [graph for graph in quads.named_graphs() if graph.endswith(ANALYSIS_SUFFIX)]
        solutions = _solutions(quads, AUTHOR_ASSERTIONS, graphs)
        rows = [(s["g"].value, s["s"].value, str(s["author"].value)) for s in solutions]
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


def _described(documents: list[str] | None) -> str:
    return "every document" if documents is None else f"{len(documents)} documents this run wrote or deleted"
