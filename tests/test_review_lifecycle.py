"""People's verdicts through the real lifecycle: merges and undo reach the PageRank graph, accepted supersessions
reach the analysis graphs and search, verdicts survive a full rebuild, and a verdict written while Dagster is
materialising is neither refused nor lost."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import duckdb
import pyoxigraph as ox
import pytest

from engramrag.checks.resolution import clusters_respect_distinct_verdicts
from engramrag.decisions.store import MERGE, SUPERSESSION, DecisionsStore
from engramrag.ontology.vocab import analysis_graph_iri
from engramrag.retrieve import Retriever
from engramrag.store import Home
from pipelines.build import run_build
from pipelines.cli import main as engram

EXAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "vault"
EARLIER = "adr/0002-use-duckdb-for-the-catalog.md#use duckdb for the catalog"
LATER = "adr/0004-use-postgresql-for-the-catalog.md#use postgresql for the catalog"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Home]:
    root = tmp_path_factory.mktemp("review")
    vault = root / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    home = Home.at(root / "home")
    outcome = run_build(home, vault)
    assert outcome.success, outcome.errors
    return vault, home


def clusters(home: Home) -> dict[str, str]:
    with home.reading():
        connection = duckdb.connect(str(home.catalog_path), read_only=True)
        try:
            return dict(connection.execute("SELECT entity_key, cluster_key FROM entity_clusters").fetchall())
        finally:
            connection.close()


def entity_count(home: Home) -> int:
    retriever = Retriever.open(home)
    try:
        return retriever.index.entity_count
    finally:
        retriever.close()


def supersedes_edges(home: Home, graph: ox.NamedNode) -> list[ox.Quad]:
    with home.reading():
        store = ox.Store.read_only(str(home.quads_path))
        try:
            quads = store.quads_for_pattern(None, None, None, graph)
            return [quad for quad in quads if quad.predicate.value.endswith("supersedes")]
        finally:
            del store


def build(vault: Path, home: Home) -> None:
    outcome = run_build(home, vault)
    assert outcome.success, outcome.errors
    assert all(outcome.checks.values()), outcome.checks


def test_the_example_vault_gets_candidates_and_supersession_proposals(built, capsys) -> None:
    _, home = built
    assert engram(["review", "list", "merge", "--home", str(home.root), "-n", "500", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    pairs = {(p["left_key"], p["right_key"]) for p in listed["pairs"]}
    assert ("jihoon", "김지훈") in pairs  # written as "김지훈 (Jihoon)": a Korean/English pair for a person to judge
    assert all(p["left_key"] != p["right_key"] for p in listed["pairs"])
    assert engram(["review", "list", "supersession", "--home", str(home.root), "--json"]) == 0
    proposals = json.loads(capsys.readouterr().out)["pairs"]
    assert {(p["earlier_key"], p["later_key"]) for p in proposals} >= {(EARLIER, LATER)}
    adr = next(p for p in proposals if (p["earlier_key"], p["later_key"]) == (EARLIER, LATER))
    assert adr["earlier_decided_on"] < adr["later_decided_on"] and "DuckDB" in adr["earlier_quote"]


def test_the_default_queue_is_what_needs_a_person_most_first(built, capsys) -> None:
    # Issue 19: 233 pairs for 40 notes, the first pages all automatic file name ↔ title pairs at 1.00.
    _, home = built
    assert engram(["review", "list", "--home", str(home.root), "-n", "1000", "--json"]) == 0
    person = json.loads(capsys.readouterr().out)
    assert person["show"] == "person" and person["pairs"]
    assert not any(p["auto_merge"] for p in person["pairs"])
    priorities = [p["priority"] for p in person["pairs"]]
    assert priorities == sorted(priorities, reverse=True)  # uncertainty × documents a merge joins
    assert all(p["priority"] <= p["reach"] for p in person["pairs"])
    assert engram(["review", "list", "--show", "automatic", "--home", str(home.root), "-n", "1000", "--json"]) == 0
    automatic = json.loads(capsys.readouterr().out)
    assert automatic["pairs"] and all(p["auto_merge"] for p in automatic["pairs"])
    assert engram(["review", "list", "--show", "all", "--home", str(home.root), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending_total"] == person["pending_total"] + automatic["pending_total"]
    assert engram(["review", "list", "--home", str(home.root), "-n", "1"]) == 0
    text = capsys.readouterr().out
    assert "merged automatically" not in text.splitlines()[0] and "a merge joins" in text


def test_the_supersession_list_shows_both_quotes(built, capsys) -> None:
    _, home = built
    assert engram(["review", "list", "supersession", "--home", str(home.root), "-n", "50"]) == 0
    lines = capsys.readouterr().out.splitlines()
    title = next(i for i, line in enumerate(lines) if "adr/0002" in line and "adr/0004" in line)
    assert lines[title + 1].strip().startswith("earlier: adr/0002-use-duckdb-for-the-catalog.md:")
    assert "DuckDB" in lines[title + 1]
    assert lines[title + 2].strip().startswith("later: adr/0004-use-postgresql-for-the-catalog.md:")
    assert "PostgreSQL" in lines[title + 2]


def test_a_verdict_prints_the_full_build_command_and_the_home_remembers_its_vault(built, capsys) -> None:
    vault, home = built
    assert engram(["review", "decide", "supersession", EARLIER, LATER, "reject", "--by", "dana", "--home",
                   str(home.root)]) == 0
    printed = capsys.readouterr().out
    assert f"`engram build --vault {vault.resolve()} --home {home.root}`" in printed
    assert engram(["review", "undo", "supersession", EARLIER, LATER, "--by", "dana", "--home", str(home.root)]) == 0
    capsys.readouterr()
    assert engram(["build", "--home", str(home.root), "--json"]) == 0  # no --vault: the one it was built from
    summary = json.loads(capsys.readouterr().out)
    assert summary["success"] and summary["documents"] > 0
    assert engram(["build", "--home", str(home.root.parent / "never-built")]) == 2
    assert "pass --vault" in capsys.readouterr().err


def test_a_merge_joins_the_pagerank_graph_and_undo_splits_it_again(built, capsys) -> None:
    vault, home = built
    before_clusters, before_entities = clusters(home), entity_count(home)
    assert before_clusters.get("jihoon") != before_clusters.get("김지훈")
    assert engram(["review", "decide", "merge", "Jihoon", "김지훈", "same", "--by", "dana", "--home",
                   str(home.root)]) == 0
    build(vault, home)
    merged = clusters(home)
    assert merged["jihoon"] == merged["김지훈"]
    assert entity_count(home) < before_entities  # the two nodes are one now
    capsys.readouterr()
    assert engram(["review", "undo", "merge", "jihoon", "김지훈", "--by", "dana", "--home", str(home.root)]) == 0
    build(vault, home)
    assert clusters(home) == before_clusters  # exactly the previous clusters
    assert entity_count(home) == before_entities
    history = DecisionsStore.for_home(home).history(MERGE, "jihoon", "김지훈")
    assert [v.verdict for v in history] == ["same"] and history[0].undone_by == "dana"


def test_a_persons_distinct_splits_an_automatic_merge(built) -> None:
    vault, home = built
    automatic = clusters(home)
    assert automatic["팔콘"] == automatic["falcon"]  # declared aliases of the Falcon note: merged by the machine
    store = DecisionsStore.for_home(home)
    store.decide(MERGE, "falcon", "팔콘", "distinct", "dana")
    build(vault, home)
    split = clusters(home)
    assert split.get("팔콘") != split.get("falcon")
    assert clusters_respect_distinct_verdicts(home).passed
    store.undo(MERGE, "falcon", "팔콘", "dana")
    build(vault, home)
    assert clusters(home) == automatic


def test_the_distinct_check_fails_when_a_cluster_holds_a_distinct_pair(built) -> None:
    _, home = built
    store = DecisionsStore.for_home(home)
    joined = clusters(home)
    left = "falcon"
    right = next(key for key, cluster in joined.items() if cluster == joined[left] and key != left)
    store.decide(MERGE, left, right, "distinct", "dana")
    try:
        outcome = clusters_respect_distinct_verdicts(home)  # the overlay was not rebuilt: it still joins them
        assert not outcome.passed and outcome.metadata["violations"]
    finally:
        store.undo(MERGE, left, right, "dana")


def test_an_accepted_supersession_reaches_the_graph_and_search(built) -> None:
    vault, home = built
    store = DecisionsStore.for_home(home)
    store.decide(SUPERSESSION, EARLIER, LATER, "accept", "dana")
    build(vault, home)
    graph = ox.NamedNode(str(analysis_graph_iri("adr/0004-use-postgresql-for-the-catalog.md")))
    assert supersedes_edges(home, graph), "no supersedes edge in the later ADR's analysis graph"
    retriever = Retriever.open(home)
    try:
        answer = retriever.search("Which database do we use for the catalog?", k=10)
    finally:
        retriever.close()
    order = [hit.doc for hit in answer.results]
    assert "adr/0002-use-duckdb-for-the-catalog.md" in order
    earlier = answer.results[order.index("adr/0002-use-duckdb-for-the-catalog.md")]
    assert earlier.superseded_by and earlier.superseded_by[0]["by_doc"] == "adr/0004-use-postgresql-for-the-catalog.md"
    if "adr/0004-use-postgresql-for-the-catalog.md" in order:
        assert order.index("adr/0002-use-duckdb-for-the-catalog.md") > order.index(
            "adr/0004-use-postgresql-for-the-catalog.md"
        )
    assert "SUPERSEDED" in answer.context
    store.undo(SUPERSESSION, EARLIER, LATER, "dana")
    build(vault, home)
    assert not supersedes_edges(home, graph)  # an undone verdict loses its edge


def test_verdicts_survive_a_full_rebuild(built) -> None:
    vault, home = built
    DecisionsStore.for_home(home).decide(MERGE, "jihoon", "김지훈", "same", "dana")
    build(vault, home)
    merged = clusters(home)
    for derived in (home.catalog_path, home.quads_path, home.lancedb_path, home.ppr_path):
        if derived.is_dir():
            shutil.rmtree(derived)
        else:
            derived.unlink()
    build(vault, home)  # from nothing but the vault and the decisions store
    assert clusters(home) == merged
    assert merged["jihoon"] == merged["김지훈"]


def test_verdicts_written_during_a_build_are_neither_refused_nor_lost(built) -> None:
    vault, home = built
    (vault / "notes-during-review.md").write_text("# Review day\n\nMinji Park reviewed the Falcon catalog.\n")
    store = DecisionsStore.for_home(home)
    errors: list[BaseException] = []
    outcome: list = []

    def building() -> None:
        try:
            outcome.append(run_build(home, vault))
        except BaseException as problem:
            errors.append(problem)

    thread = threading.Thread(target=building)
    thread.start()
    written = 0
    while thread.is_alive() or written < 50:
        store.decide(MERGE, f"stress-{written}", f"stress-{written}-b", "related", "dashboard")
        written += 1
    thread.join()
    assert not errors and outcome and outcome[0].success, (errors, outcome and outcome[0].errors)
    recorded = [v for v in store.current(MERGE) if v.left_key.startswith("stress-")]
    assert len(recorded) == written


def test_every_build_is_a_named_job_in_the_dagster_ui(built) -> None:
    # Issue 19: every run in the UI was `__ephemeral_asset_job__`. A build that reads the vault runs the lifecycle
    # job; one that only applies people's verdicts (the tests above) runs the review job, as the sensors do.
    from pipelines.instance import open_instance

    vault, home = built
    store = DecisionsStore.for_home(home)
    store.decide(SUPERSESSION, EARLIER, LATER, "reject", "dana")
    build(vault, home)  # the vault did not change: only the verdict is applied
    store.undo(SUPERSESSION, EARLIER, LATER, "dana")
    build(vault, home)
    with open_instance(home) as instance:
        names = [run.job_name for run in instance.get_runs()]
    assert "document_lifecycle" in names and "apply_reviews" in names
    assert set(names) <= {"document_lifecycle", "apply_reviews"}, names


def test_review_list_piped_to_head_ends_quietly(built) -> None:
    import os
    import subprocess
    import sys

    _, home = built
    command = [sys.executable, "-m", "pipelines.cli", "review", "list", "--show", "all", "-n", "1000", "--home",
               str(home.root)]  # fmt: skip
    lister = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-1"], stdin=lister.stdout, capture_output=True, text=True, check=True)
    lister.stdout.close()
    errors = lister.stderr.read().decode()
    lister.wait(timeout=120)
    assert head.stdout.startswith("  1. ") and "Traceback" not in errors and "BrokenPipe" not in errors, errors
    assert lister.returncode in (0, 141)  # 141 when it was still writing as head left (exit_codes.PIPE_CLOSED)
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before the first line: always the closed-pipe path
    try:
        done = subprocess.run(command, stdout=writer, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(writer)
    assert done.returncode == 141 and "Traceback" not in done.stderr, done.stderr
