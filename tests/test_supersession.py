"""Supersession proposals on the real example vault and on small hand-made records, and the quads of accepted ones."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pyoxigraph as ox
import pytest

from engramrag.checks.provenance import (
    analysis_graphs_hold_no_author_assertions,
    statements_name_document_and_extractor,
)
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import ENGRAM, PAV, PROV, analysis_graph_iri, document_iri, entity_iri
from engramrag.revise.supersession import (
    SupersessionConfig,
    SupersessionProposal,
    decision_key,
    proposals_frame,
    propose_supersessions,
    supersedes_quads,
)
from engramrag.store import Home
from pipelines.build import run_build
from tests.conftest import build_environment

EXAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "vault"
ADR_DUCKDB = "adr/0002-use-duckdb-for-the-catalog.md"
ADR_POSTGRES = "adr/0004-use-postgresql-for-the-catalog.md"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Home, dict[str, pd.DataFrame]]:
    root = tmp_path_factory.mktemp("supersession")
    vault = root / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    with build_environment():
        home = Home.at(root / "home")
        assert run_build(home, vault).success
    connection = duckdb.connect(str(home.catalog_path), read_only=True)
    try:
        tables = {
            "decisions": connection.execute("SELECT * FROM decisions").df(),
            "documents": connection.execute("SELECT doc_id, path, text FROM documents WHERE NOT gone").df(),
            "statements": connection.execute(
                "SELECT doc_id, subject, predicate, object, object_is_entity, line_start FROM statements"
            ).df(),
            "entities": connection.execute("SELECT doc_id, entity_key, label, kind FROM entities").df(),
        }
    finally:
        connection.close()
    return home, tables


@pytest.fixture(scope="module")
def proposals(built) -> list[SupersessionProposal]:
    _, tables = built
    return propose_supersessions(tables["decisions"], tables["documents"], tables["statements"], tables["entities"])


def _find(proposals: list[SupersessionProposal], earlier_path: str, later_path: str) -> SupersessionProposal:
    found = [p for p in proposals if (p.earlier.path, p.later.path) == (earlier_path, later_path)]
    assert len(found) == 1, [(p.earlier.key, p.later.key) for p in proposals]
    return found[0]


def test_adr_0004_supersedes_adr_0002_with_both_quotes_and_dates(proposals):
    proposal = _find(proposals, ADR_DUCKDB, ADR_POSTGRES)
    earlier, later = proposal.earlier, proposal.later
    assert (earlier.title, earlier.decided_on) == ("Use DuckDB for the catalog", "2026-02-10")
    assert (later.title, later.decided_on) == ("Use PostgreSQL for the catalog", "2026-05-02")
    assert earlier.key == decision_key(ADR_DUCKDB, "Use DuckDB for the catalog")
    assert earlier.key == "adr/0002-use-duckdb-for-the-catalog.md#use duckdb for the catalog"
    assert proposal.explicit and not proposal.same_day and proposal.score == 1.0
    assert any("supersedes" in reason for reason in proposal.reasons)
    assert "catalog" in " ".join(proposal.reasons)  # the shared object of the two titles
    for side in (earlier, later):
        lines = (EXAMPLE_VAULT / side.path).read_text(encoding="utf-8").split("\n")
        assert side.quote == "\n".join(lines[side.line_start - 1 : side.line_end])
        assert side.quote.strip() and lines[side.line_start - 1].strip() and lines[side.line_end - 1].strip()
    assert earlier.quote.startswith("# 2. Use DuckDB for the catalog")
    assert "We will store the Falcon catalog in a single DuckDB file" in earlier.quote
    assert "Chosen option: \"PostgreSQL 16 on the Pangyo cluster\"" in later.quote


def test_only_decisions_about_the_same_subject_are_proposed(proposals):
    pairs = {(p.earlier.path, p.earlier.title, p.later.path, p.later.title) for p in proposals}
    duckdb_entry, postgres_entry = ("DECISIONS.md", "Use DuckDB for the catalog"), (
        "DECISIONS.md", "Move the catalog to PostgreSQL")  # fmt: skip
    assert pairs == {
        (ADR_DUCKDB, "Use DuckDB for the catalog", ADR_POSTGRES, "Use PostgreSQL for the catalog"),
        (ADR_DUCKDB, "Use DuckDB for the catalog", *postgres_entry),
        (*duckdb_entry, ADR_POSTGRES, "Use PostgreSQL for the catalog"),
        (*duckdb_entry, *postgres_entry),
        ("DECISIONS.md", "Search latency target p95 300 ms",
         "DECISIONS.md", "Tighten the search latency target to p95 120 ms"),
    }  # fmt: skip
    # The ADR and its DECISIONS.md entry are one decision recorded twice: never a replacement of each other.
    # The entry's own field names only the DECISIONS.md entry; the ADR inherits it as another record.
    inherited = _find(proposals, "DECISIONS.md", ADR_POSTGRES)
    assert inherited.explicit and inherited.score < 1.0
    assert any("another record of the same decision" in reason for reason in inherited.reasons)
    assert all(p.earlier.decided_on < p.later.decided_on for p in proposals)


def test_proposals_frame_flattens_both_sides(proposals):
    frame = proposals_frame(proposals)
    assert len(frame) == len(proposals)
    assert {"earlier_key", "later_key", "earlier_quote", "later_line_start", "score", "same_day", "reasons"} <= set(
        frame
    )
    assert frame["score"].between(0, 1).all()


def test_accepted_supersession_quads_land_in_the_later_analysis_graph_and_pass_the_provenance_checks(
    built, proposals
):
    home, _ = built
    proposal = _find(proposals, ADR_DUCKDB, ADR_POSTGRES)
    quads = supersedes_quads([proposal], "Minji Park", "2026-05-03T09:00:00+00:00")
    graph = ox.NamedNode(str(analysis_graph_iri(ADR_POSTGRES)))
    assert quads and {quad.graph_name for quad in quads} == {graph}
    later = ox.NamedNode(str(entity_iri(ADR_POSTGRES, proposal.later.entity_key)))
    earlier = ox.NamedNode(str(entity_iri(ADR_DUCKDB, proposal.earlier.entity_key)))
    supersedes = ox.NamedNode(str(ENGRAM.supersedes))
    assert ox.Quad(later, supersedes, earlier, graph) in quads
    [node] = [q.subject for q in quads if q.predicate == ox.NamedNode(str(PROV.wasDerivedFrom))]
    assert ox.Quad(node, ox.NamedNode(str(PROV.wasDerivedFrom)), ox.NamedNode(str(document_iri(ADR_POSTGRES))),
                   graph) in quads  # fmt: skip
    curated = [q.object for q in quads if q.subject == node and q.predicate == ox.NamedNode(str(PAV.curatedBy))]
    assert len(curated) == 1 and "Minji" in curated[0].value
    assert supersedes_quads([proposal, proposal], "Minji Park") == supersedes_quads([proposal], "Minji Park")

    with QuadStore.opened(home.quads_path) as store:
        store.swap_quads([], quads)
        found = list(store.query(f"SELECT ?a ?b WHERE {{ GRAPH <{graph.value}> {{ ?a <{supersedes.value}> ?b }} }}"))
    assert [(row["a"], row["b"]) for row in found] == [(later, earlier)]
    assert statements_name_document_and_extractor(home, [ADR_POSTGRES]).passed
    assert analysis_graphs_hold_no_author_assertions(home, [ADR_POSTGRES]).passed


# --- hand-made records ---------------------------------------------------------------------------------------

LOG = """# Decision log

## 2026-03-04: Use Dagster for orchestration

Status: Accepted
Decision: All Falcon pipelines run as Dagster assets.

## 2026-02-24: Search latency target p95 300 ms

Status: Superseded
Decision: p95 below 300 ms.

## 2026-04-22: Tighten the search latency target to p95 120 ms

Status: Accepted
Decision: p95 below 120 ms.

## 2026-05-20: Keep Streamlit for the review UI

Status: Accepted
Decision: Keep the Falcon review app on Streamlit.
"""
ADR = """# 6. Dagster orchestration schedules

Date: 2026-03-04
Status: Accepted
Decision: Falcon runs on Dagster schedules.
"""


def _tables(with_status: bool = True) -> dict[str, pd.DataFrame]:
    decisions = pd.DataFrame(
        [
            ("log", "d1", "Use Dagster for orchestration", "2026-03-04", "accepted", 3, 6, [], []),
            ("log", "d2", "Search latency target p95 300 ms", "2026-02-24", "superseded" if with_status else
             "accepted", 8, 11, [], []),
            ("log", "d3", "Tighten the search latency target to p95 120 ms", "2026-04-22", "accepted", 13, 16, [], []),
            ("log", "d4", "Keep Streamlit for the review UI", "2026-05-20", "accepted", 18, 21, [], []),
            ("adr", "a6", "Dagster orchestration schedules", "2026-03-04", "accepted", 1, 5, [], []),
        ],
        columns=["doc_id", "entity_key", "title", "decided_on", "status", "line_start", "line_end", "supersedes",
                 "superseded_by"],
    )  # fmt: skip
    documents = pd.DataFrame(
        [("log", "DECISIONS.md", LOG), ("adr", "adr/0006-dagster-orchestration-schedules.md", ADR)],
        columns=["doc_id", "path", "text"],
    )
    entities = pd.DataFrame(
        [("log", "f", "Falcon", "Project"), ("log", "g", "Dagster", "Artifact"), ("log", "s", "Streamlit", "Artifact"),
         ("adr", "f", "Falcon", "Project"), ("adr", "g", "Dagster", "Artifact")]
        + [(doc, key, title, "Decision") for doc, key, title in
           [("log", "d1", "x"), ("log", "d2", "x"), ("log", "d3", "x"), ("log", "d4", "x"), ("adr", "a6", "x")]],
        columns=["doc_id", "entity_key", "label", "kind"],
    )  # fmt: skip
    statements = pd.DataFrame(
        [("log", "f", "co_occurs_with", "g", True, 6), ("log", "f", "co_occurs_with", "s", True, 21),
         ("adr", "f", "co_occurs_with", "g", True, 5)],
        columns=["doc_id", "subject", "predicate", "object", "object_is_entity", "line_start"],
    )  # fmt: skip
    return {"decisions": decisions, "documents": documents, "statements": statements, "entities": entities}


def _propose(tables: dict[str, pd.DataFrame], config: SupersessionConfig | None = None):
    return propose_supersessions(
        tables["decisions"], tables["documents"], tables["statements"], tables["entities"], config
    )


def test_same_day_pairs_are_flagged_not_ordered_and_unrelated_decisions_are_left_alone():
    proposals = _propose(_tables())
    by_titles = {(p.earlier.title, p.later.title): p for p in proposals}
    same_day = [p for p in proposals if p.same_day]
    assert len(same_day) == 1
    [pair] = same_day
    sides = {side.entity_key: side for side in (pair.earlier, pair.later)}
    assert set(sides) == {"d1", "a6"}
    assert not pair.explicit and "the order is not known" in " ".join(pair.reasons)
    assert pair.shared_subjects == ("dagster", "falcon")
    assert sides["d1"].quote == (
        "## 2026-03-04: Use Dagster for orchestration\n\nStatus: Accepted\n"
        "Decision: All Falcon pipelines run as Dagster assets."
    )
    assert (sides["d1"].line_start, sides["d1"].line_end) == (3, 6)
    assert not [p for p in proposals if "Keep Streamlit for the review UI" in (p.earlier.title, p.later.title)]
    latency = by_titles[("Search latency target p95 300 ms", "Tighten the search latency target to p95 120 ms")]
    assert not latency.explicit and latency.title_similarity > 0.5
    assert "the earlier decision's status is 'superseded'" in latency.reasons
    without_status = {(p.earlier.title, p.later.title): p for p in _propose(_tables(with_status=False))}
    assert without_status[(latency.earlier.title, latency.later.title)].score < latency.score


def test_an_explicit_field_orders_a_pair_against_the_dates_and_resolves_file_names():
    tables = _tables()
    decisions = tables["decisions"].copy()
    decisions["supersedes"] = decisions["supersedes"].astype(object)
    decisions["superseded_by"] = decisions["superseded_by"].astype(object)
    # The ADR says it supersedes the log entry of the same day: the field gives the order the dates cannot.
    decisions.at[_row(decisions, "a6"), "supersedes"] = ["2026-03-04: Use Dagster for orchestration"]
    # The log's 120 ms entry is said to be superseded by the ADR file, although it is earlier than the entry.
    decisions.at[_row(decisions, "d3"), "superseded_by"] = ["0006-dagster-orchestration-schedules.md"]
    proposals = _propose(tables | {"decisions": decisions})
    by_keys = {(p.earlier.entity_key, p.later.entity_key): p for p in proposals}
    dagster = by_keys[("d1", "a6")]
    assert dagster.explicit and dagster.same_day and "the order is stated" in " ".join(dagster.reasons)
    odd = by_keys[("d3", "a6")]
    assert odd.explicit and "the dates disagree with the stated order" in odd.reasons


def _row(decisions: pd.DataFrame, entity_key: str) -> int:
    return int(decisions.index[decisions["entity_key"] == entity_key][0])


def test_decision_keys_and_config_help():
    assert decision_key("DECISIONS.md", "  Use  DuckDB for the Catalog ") == "DECISIONS.md#use duckdb for the catalog"
    for field in dataclasses.fields(SupersessionConfig):
        assert field.metadata.get("help"), field.name
    strict = SupersessionConfig(min_title_similarity=0.9)
    titles = {(p.earlier.title, p.later.title) for p in _propose(_tables(), strict)}
    assert titles == set()


def test_the_applying_step_reads_the_proposals_the_build_stored_and_recomputes_rows_from_before_them(built):
    from engramrag.lifecycle.revision import stored_proposals
    from engramrag.vault.config import VaultConfig

    home, tables = built
    config = VaultConfig()
    computed = propose_supersessions(tables["decisions"], tables["documents"], tables["statements"], tables["entities"])
    assert computed and stored_proposals(home, config) == computed
    with duckdb.connect(str(home.catalog_path)) as catalog:  # a row written before schema 10 had no document ids
        catalog.execute("UPDATE supersession_candidates SET later_doc_id = NULL WHERE rowid = 0")
    try:
        assert stored_proposals(home, config) is None
    finally:
        with duckdb.connect(str(home.catalog_path)) as catalog:
            catalog.execute(
                "UPDATE supersession_candidates SET later_doc_id = ? WHERE rowid = 0", [computed[0].later.doc_id]
            )
    assert stored_proposals(home, config) == computed
