"""Provenance checks: every quad's graph belongs to a live document; every statement names its document and
extractor; analysis graphs hold no author assertions."""

from __future__ import annotations

import pandas as pd

from engramrag.catalog.connection import catalog_reader
from engramrag.checks.expectations import CheckOutcome, validate_frame
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import ANALYSIS_SUFFIX, ENGRAM, PAV, PROV, path_of_graph
from engramrag.store import Home

STATEMENT_PROVENANCE = f"""
SELECT ?g ?statement ?document ?extractor WHERE {{
  GRAPH ?g {{
    ?statement a <{ENGRAM.Statement}> .
    OPTIONAL {{ ?statement <{PROV.wasDerivedFrom}> ?document }}
    OPTIONAL {{ ?statement <{PAV.createdBy}> ?extractor }}
  }}
}}"""

AUTHOR_ASSERTIONS_IN_ANALYSIS = f"""
SELECT ?g ?s ?author WHERE {{
  GRAPH ?g {{ ?s <{PAV.authoredBy}> ?author }}
  FILTER(STRENDS(STR(?g), "{ANALYSIS_SUFFIX}"))
}}"""


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


def statements_name_document_and_extractor(home: Home) -> CheckOutcome:
    import great_expectations.expectations as gxe

    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        rows = [
            (
                solution["g"].value,
                solution["statement"].value,
                solution["document"].value if solution["document"] is not None else None,
                solution["extractor"].value if solution["extractor"] is not None else None,
            )
            for solution in quads.query(STATEMENT_PROVENANCE)
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
        f"{len(frame)} statements checked" + ("" if passed else "; some lack their document or extractor"),
        {"statements": len(frame), "failures": failures},
    )


def analysis_graphs_hold_no_author_assertions(home: Home) -> CheckOutcome:
    import great_expectations.expectations as gxe

    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        solutions = quads.query(AUTHOR_ASSERTIONS_IN_ANALYSIS)
        rows = [(s["g"].value, s["s"].value, str(s["author"].value)) for s in solutions]
    frame = pd.DataFrame(rows, columns=["graph", "subject", "author"])
    passed, failures = validate_frame(
        "analysis_authorship", frame, [gxe.ExpectTableRowCountToEqual(value=0)]
    )
    return CheckOutcome(
        passed,
        "no pav:authoredBy in analysis graphs" if passed else f"{len(frame)} author assertions in analysis graphs",
        {"violations": len(frame), "examples": [f"{g} {s}" for g, s, _ in rows[:5]], "failures": failures},
    )
