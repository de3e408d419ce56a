"""Provenance checks: every quad's graph belongs to a live document; every statement names its document and
extractor; analysis graphs hold no author assertions."""

from __future__ import annotations

import pandas as pd

from engramrag.catalog.connection import catalog_reader
from engramrag.checks.expectations import CheckOutcome, validate_frame
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import ANALYSIS_SUFFIX, ENGRAM, PAV, PROV, document_graphs, path_of_graph
from engramrag.store import Home

STATEMENT_PROVENANCE = f"""
SELECT ?g ?statement ?document ?extractor WHERE {{
  %(scope)s
  GRAPH ?g {{
    ?statement a <{ENGRAM.Statement}> .
    OPTIONAL {{ ?statement <{PROV.wasDerivedFrom}> ?document }}
    OPTIONAL {{ ?statement <{PAV.createdBy}> ?extractor }}
  }}
}}"""

AUTHOR_ASSERTIONS_IN_ANALYSIS = f"""
SELECT ?g ?s ?author WHERE {{
  %(scope)s
  GRAPH ?g {{ ?s <{PAV.authoredBy}> ?author }}
  FILTER(STRENDS(STR(?g), "{ANALYSIS_SUFFIX}"))
}}"""


# Past this many documents a scoped check reads the whole store: one scan beats a huge VALUES block.
SCOPE_LIMIT = 2000


def _scope(documents: list[str] | None, analysis_only: bool = False) -> str:
    """A VALUES block restricting ?g to the given documents' graphs ("" for the whole store)."""
    if documents is None or len(documents) > SCOPE_LIMIT:
        return ""
    graphs = [g for path in documents for g in document_graphs(path)]
    if analysis_only:
        graphs = graphs[1::2]
    return "VALUES ?g { " + " ".join(f"<{g}>" for g in graphs) + " }"


def _live_paths(home: Home) -> set[str]:
    with catalog_reader(home) as catalog:
        if catalog is None:
            return set()
        return {row[0] for row in catalog.execute("SELECT path FROM documents WHERE NOT gone").fetchall()}


def quads_belong_to_live_documents(home: Home) -> CheckOutcome:
    import great_expectations.expectations as gxe

    live = _live_paths(home)
    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        graphs = quads.named_graphs()
        default_graph = sum(1 for _ in quads.query("SELECT * WHERE { ?s ?p ?o } LIMIT 1"))
    frame = pd.DataFrame({"graph": graphs, "document": [path_of_graph(graph) for graph in graphs]})
    passed, failures = validate_frame(
        "named_graphs",
        frame,
        [
            gxe.ExpectColumnValuesToNotBeNull(column="document"),
            gxe.ExpectColumnValuesToBeInSet(column="document", value_set=sorted(live) or [""]),
        ],
    )
    passed = passed and default_graph == 0
    if default_graph:
        failures.append({"expectation": "no quads in the default graph", "unexpected_count": default_graph})
    return CheckOutcome(
        passed,
        f"{len(graphs)} named graphs for {len(live)} live documents"
        + ("" if passed else f"; {sum(f.get('unexpected_count') or 0 for f in failures)} stray graphs"),
        {"graphs": len(graphs), "live_documents": len(live), "failures": failures},
    )


def statements_name_document_and_extractor(home: Home, documents: list[str] | None = None) -> CheckOutcome:
    """Checks the graphs of ``documents`` (those a run extracted), or every graph when None."""
    import great_expectations.expectations as gxe

    query = STATEMENT_PROVENANCE % {"scope": _scope(documents)}
    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        rows = [
            (
                solution["g"].value,
                solution["statement"].value,
                solution["document"].value if solution["document"] is not None else None,
                solution["extractor"].value if solution["extractor"] is not None else None,
            )
            for solution in quads.query(query)
        ]
    frame = pd.DataFrame(rows, columns=["graph", "statement", "document", "extractor"])
    frame["graph_document"] = frame["graph"].map(lambda graph: graph.removesuffix(ANALYSIS_SUFFIX))
    frame["names_own_document"] = frame["graph_document"] == frame["document"]
    passed, failures = validate_frame(
        "statements",
        frame,
        [
            gxe.ExpectColumnValuesToNotBeNull(column="document"),
            gxe.ExpectColumnValuesToNotBeNull(column="extractor"),
            gxe.ExpectColumnValuesToBeInSet(column="names_own_document", value_set=[True]),
        ],
    )
    return CheckOutcome(
        passed,
        f"{len(frame)} statements checked in {_described(documents)}"
        + ("" if passed else "; some lack their document or extractor"),
        {"statements": len(frame), "scope": _described(documents), "failures": failures},
    )


def analysis_graphs_hold_no_author_assertions(home: Home, documents: list[str] | None = None) -> CheckOutcome:
    """Checks the analysis graphs of ``documents``, or every graph when None."""
    import great_expectations.expectations as gxe

    query = AUTHOR_ASSERTIONS_IN_ANALYSIS % {"scope": _scope(documents, analysis_only=True)}
    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        solutions = quads.query(query)
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
    return "every document" if documents is None else f"{len(documents)} documents written by this run"
