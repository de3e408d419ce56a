"""The decision graph's answers on a real repository built with git (tests/gitrepo.py), ingested for real.

The fixture history is extended by two commits before the answers are read (ingested incrementally): Carol
tests the search cache, then brings SQLite back to the catalog that ADR-0004 moved to Postgres, which ``review``
must flag as contradicting a current decision.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

from engramrag.gitgraph.graph import load_graph, rank_files, shortest_path
from engramrag.gitgraph.grounding import (
    CITED_ID_RETURNED,
    FIGURE_IN_QUOTE,
    FILE_AT_COMMIT,
    IDENTIFIER_EXISTS,
    QUOTE_VERBATIM,
    check_answer,
    check_claim,
    returned_ids,
)
from engramrag.gitgraph.ingest import ingest
from engramrag.gitgraph.tools import disproven, origin, review, told, trace, what_breaks, who_knows, why
from engramrag.gitgraph.tools.base import open_repo
from engramrag.gitgraph.tools.commits import review_range
from engramrag.store import Home

sys.path.insert(0, str(Path(__file__).parent))
from gitrepo import ADR_2, ADR_4, CATALOG_4, SEARCH_3, FixtureRepo, build_fixture_repo, commit

ADR2_ID = "docs/adr/0002-use-sqlite-for-the-catalog.md#use sqlite for the catalog"
ADR4_ID = "docs/adr/0004-move-the-catalog-to-postgres.md#move the catalog to postgres"
BM25_ID = "DECISIONS.md#search uses bm25 only"
MEMORY_ID = "DECISIONS.md#cache search results in memory"
DISK_ID = "DECISIONS.md#cache search results on disk"
LANCE_ID = "docs/adr/0003-use-lancedb-for-vectors.md#use lancedb for vectors"
RUFF_ID = "docs/decisions/2024-04-02-adopt-ruff.md#adopt ruff for linting"
ALICE, BOB, CAROL = "alice@example.com", "bob@example.com", "carol@example.com"
CLAUDE_KEY = "noreply@anthropic.com"
TEST_SEARCH = "from src.search import search\n\n\ndef test_cache():\n    assert search('x') == []\n"
CATALOG_5 = CATALOG_4 + "\nimport sqlite3\n"


class Built:
    def __init__(self, repo: FixtureRepo, home: Home, tested: str, sqlite: str, incremental) -> None:
        self.repo, self.home, self.tested, self.sqlite, self.incremental = repo, home, tested, sqlite, incremental
        self.root = repo.root


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    base = tmp_path_factory.mktemp("gitgraph")
    repo = build_fixture_repo(base / "repo")
    home = Home.at(base / "home")
    first = ingest(repo.root, home, progress=False)
    assert first.mode == "full"
    tested = commit(repo.root, "carol", "2024-05-01T10:00:00+00:00", "Test the search cache", {
        "src/search.py": SEARCH_3 + "\n\ndef clear():\n    CACHE.clear()\n", "tests/test_search.py": TEST_SEARCH,
    })  # fmt: skip
    sqlite = commit(
        repo.root, "carol", "2024-05-02T10:00:00+00:00", "Bring back SQLite for local runs",
        {"src/store/catalog.py": CATALOG_5},
    )  # fmt: skip
    second = ingest(repo.root, home, progress=False)
    return Built(repo, home, tested, sqlite, second)


def ids(items: list[dict]) -> list[str]:
    return [item["id"] for item in items]


def shas(items: list[dict]) -> list[str]:
    return [item["sha"] for item in items]


def test_the_answers_read_the_incremental_ingest(built: Built) -> None:
    assert (built.incremental.mode, built.incremental.commits_added) == ("incremental", 2)
    with open_repo(built.home, built.root / "src") as repo:  # any folder of the work tree names the repository
        assert repo.root == built.root.resolve()


def test_why_follows_the_rename_and_puts_current_decisions_first(built: Built) -> None:
    result = why(built.home, built.root, "src/store/catalog.py")
    assert result["names"] == ["src/store/catalog.py", "src/catalog.py"]
    decisions = result["evidence"]["decisions"]
    assert set(ids(decisions[:2])) == {RUFF_ID, ADR4_ID} and all(item["current"] for item in decisions[:2])
    assert ids(decisions[2:]) == [ADR2_ID, BM25_ID]
    adr2 = decisions[2]
    assert (adr2["current"], adr2["status"], adr2["superseded_by"]) == (False, "superseded", [ADR4_ID])
    assert (adr2["date"], adr2["path"], adr2["lines"], adr2["sha"]) == ("2024-02-01", ADR_2, "1-19", built.repo.merge)
    assert "Superseded by [ADR-0004](0004-move-the-catalog-to-postgres.md)" in adr2["text"]
    assert {"reason": "named-in-record", "path": "src/catalog.py", "sha": built.repo.adr2} in adr2["governs_because"]
    changed = [item for item in result["evidence"]["commits"] if "change" in item]
    assert shas(changed) == [
        built.sqlite, built.repo.merge, built.repo.branch, built.repo.rename, built.repo.adr2, built.repo.init
    ]
    rename = changed[3]
    assert (rename["change"]["change"], rename["change"]["old_path"], rename["date"]) == (
        "R", "src/catalog.py", "2024-02-10T10:00:00+00:00"
    )
    assert {"decision": ADR2_ID, "sha": built.repo.branch, "lines": "7"} in result["decisions_written_by"]
    assert {"decision": ADR2_ID, "sha": built.repo.adr2, "lines": "1-6,8-19"} in result["decisions_written_by"]
    assert "governed by 2 current decision(s)" in result["answer"]


def test_why_of_a_record_file_lists_the_records_it_holds(built: Built) -> None:
    result = why(built.home, built.root, "DECISIONS.md")
    decisions = result["evidence"]["decisions"]
    assert set(ids(decisions)) >= {BM25_ID, MEMORY_ID, DISK_ID}
    memory = next(item for item in decisions if item["id"] == MEMORY_ID)
    assert (memory["lines"], memory["same_day_conflict"], memory["conflicts_with"]) == ("9-13", True, [DISK_ID])
    assert memory["text"].startswith("## 2024-03-05 Cache search results in memory\n\nStatus: Accepted")


def test_what_breaks_counts_co_changes_without_huge_commits(built: Built) -> None:
    result = what_breaks(built.home, built.root, "src/search.py")
    files = {item["path"]: item for item in result["evidence"]["files"]}
    assert result["commits_counted"] == 4
    assert files["DECISIONS.md"]["co_changes"] == 2
    assert result["evidence"]["files"][0]["path"] == "DECISIONS.md"
    assert files["tests/test_search.py"]["is_test"] and files["tests/test_search.py"]["shas"] == [built.tested]
    assert result["tests"] == ["tests/test_search.py"]
    assert {MEMORY_ID, DISK_ID, LANCE_ID, BM25_ID} <= set(ids(result["evidence"]["decisions"]))
    people = {item["key"]: item for item in result["evidence"]["people"]}
    assert people[ALICE]["commits"] == 3 and not people[ALICE]["is_agent"]
    assert people[CLAUDE_KEY]["is_agent"] and people[CLAUDE_KEY]["agent_kind"] == "claude"
    assert people[CAROL]["commits"] == 1
    narrow = what_breaks(built.home, built.root, "src/search.py", max_files=2)
    assert narrow["huge_commits_skipped"] == [built.repo.init]
    assert "README.md" not in {item["path"] for item in narrow["evidence"]["files"]}
    assert narrow["commits_counted"] == 3


def test_who_knows_ranks_people_and_lists_agents_apart(built: Built) -> None:
    result = who_knows(built.home, built.root, "src/search.py")
    people = {item["key"]: item for item in result["evidence"]["people"]}
    assert result["ranking"][0] == ALICE
    assert set(result["ranking"]) == {ALICE, BOB, CAROL}
    assert set(result["agents"]) == {CLAUDE_KEY, "copilot@users.noreply.github.com"}
    assert all(people[key]["is_agent"] for key in result["agents"])
    assert (people[ALICE]["commits"], people[ALICE]["last_change"]) == (3, "2024-04-12T10:00:00+00:00")
    assert set(people[ALICE]["decisions"]) == {MEMORY_ID, DISK_ID, BM25_ID}
    assert people[BOB]["commits"] == 0 and LANCE_ID in people[BOB]["decisions"]  # known through records only
    assert people[ALICE]["score"] > people[CAROL]["score"] > 0
    # With a memory of days, not months, Carol's change of last week outweighs everything Alice did in spring.
    fast = who_knows(built.home, built.root, "src/search.py", half_life_days=3)
    assert fast["ranking"][0] == CAROL


def test_disproven_names_what_replaced_a_decision_and_when(built: Built) -> None:
    result = disproven(built.home, built.root, "catalog")
    assert result["disproven"] == [ADR2_ID]
    adr2 = result["evidence"]["decisions"][0]
    assert adr2["replaced_by"] == [{"id": ADR4_ID, "title": "Move the catalog to Postgres", "date": "2024-03-10"}]
    assert adr2["retired"] == {
        "date": "2024-03-10T10:00:00+00:00", "status_sha": built.repo.branch, "link_sha": built.repo.branch
    }
    assert ADR4_ID in ids(result["evidence"]["decisions"])
    obsolete = disproven(built.home, built.root, "bm25")
    assert obsolete["disproven"] == [BM25_ID]
    bm25 = obsolete["evidence"]["decisions"][0]
    assert (bm25["status"], bm25["replaced_by"], bm25["retired"]["status_sha"]) == (
        "obsolete", [], built.repo.obsolete
    )
    assert bm25["retired"]["date"] == "2024-04-20T10:00:00+00:00"
    assert disproven(built.home, built.root, "lancedb")["disproven"] == []


def test_trace_shows_versions_chain_files_and_blame(built: Built) -> None:
    result = trace(built.home, built.root, "2")
    assert result["decision"] == ADR2_ID
    assert [(item["sha"], item["status"]) for item in result["versions"]] == [
        (built.repo.adr2, "accepted"), (built.repo.branch, "superseded")
    ]  # the merge brings the branch's version unchanged: not a new version
    assert result["versions"][0]["version_date"] == "2024-02-01T05:30:00+00:00"
    assert (result["supersedes"], result["superseded_by"]) == ([], [ADR4_ID])
    assert result["written_by"] == [
        {"sha": built.repo.adr2, "lines": "1-6,8-19"}, {"sha": built.repo.branch, "lines": "7"}
    ]
    assert {item["path"] for item in result["evidence"]["files"]} == {"src/catalog.py", "src/store/catalog.py"}
    later = trace(built.home, built.root, "ADR-4")
    assert (later["decision"], later["supersedes"], later["superseded_by"]) == (ADR4_ID, [ADR2_ID], [])
    conflict = trace(built.home, built.root, "Cache search results on disk")
    assert conflict["evidence"]["decisions"][0]["conflicts_with"] == [MEMORY_ID]
    with pytest.raises(LookupError, match="names 2 decisions"):
        trace(built.home, built.root, "cache search results")


def test_origin_of_a_file_follows_renames_back(built: Built) -> None:
    result = origin(built.home, built.root, "src/store/catalog.py")
    assert (result["introduced_by"], result["introduced_as"]) == (built.repo.init, "src/catalog.py")
    assert ids(result["evidence"]["decisions"]) == [BM25_ID]
    assert result["evidence"]["decisions"][0]["as_of"] == built.repo.init
    assert result["evidence"]["commits"][0]["date"] == "2024-01-10T00:00:00+00:00"


def test_origin_of_a_line_uses_blame_and_the_decisions_then_in_force(built: Built) -> None:
    result = origin(built.home, built.root, "src/store/catalog.py", 3)
    assert result["line"] == {
        "number": 3, "sha": built.repo.branch, "original_line": 3, "original_path": "src/store/catalog.py",
        "text": "import psycopg",
    }  # fmt: skip
    assert result["line_history"] == [built.repo.branch, built.repo.adr2]
    in_force = ids(result["evidence"]["decisions"])
    assert ADR4_ID in in_force and ADR2_ID not in in_force  # superseded by the very commit that wrote the line
    earlier = origin(built.home, built.root, "src/store/catalog.py", 1)
    assert earlier["introduced_by"] == built.repo.rename
    assert ADR2_ID in ids(earlier["evidence"]["decisions"]) and ADR4_ID not in ids(earlier["evidence"]["decisions"])


def test_told_lists_the_instruction_sections_in_force_and_the_agents(built: Built) -> None:
    copilot = told(built.home, built.root, built.repo.copilot[:10])
    assert copilot["commit"] == built.repo.copilot and copilot["touched"] == ["src/search.py"]
    assert copilot["agents"] == ["copilot@users.noreply.github.com"]
    assert copilot["evidence"]["people"][0]["roles"] == ["author"]
    sections = [(item["path"], item["section"], item["lines"], item["sha"]) for item in copilot["instructions"]]
    assert sections == [
        (".github/copilot-instructions.md", "(preamble)", "1-1", built.repo.agents3),
        ("AGENTS.md", "Agent guide", "1-3", built.repo.agents3),
        ("AGENTS.md", "Agent guide > Style", "5-7", built.repo.agents3),
        ("AGENTS.md", "Agent guide > Testing", "9-12", built.repo.agents3),
        ("AGENTS.md", "Agent guide > Storage", "14-16", built.repo.agents3),
    ]
    assert copilot["instructions"][3]["text"].endswith("- Never skip the lock tests.")
    branch = told(built.home, built.root, built.repo.branch)
    assert branch["agents"] == []
    in_force = {(item["path"], item["sha"]) for item in branch["instructions"]}
    assert in_force == {("AGENTS.md", built.repo.agents2), ("src/store/AGENTS.md", built.repo.agents2)}
    testing = next(item for item in branch["instructions"] if item["section"] == "Agent guide > Testing")
    assert (testing["lines"], "Never skip" in testing["text"]) == ("9-11", False)
    conflict = told(built.home, built.root, built.repo.conflict)
    assert conflict["agents"] == [CLAUDE_KEY] and conflict["evidence"]["people"][0]["roles"] == ["co-author"]


def test_review_flags_a_commit_that_brings_back_a_superseded_alternative(built: Built) -> None:
    result = review(built.home, built.root, built.sqlite)
    assert len(result["contradictions"]) == 1
    found = result["contradictions"][0]
    assert (found["decision"], found["superseded"], found["term"]) == (ADR4_ID, ADR2_ID, "sqlite")
    line = CATALOG_5.split("\n").index("import sqlite3") + 1
    assert found["mentions"] == [
        {"where": "message", "path": None, "line": 1, "text": "Bring back SQLite for local runs"},
        {"where": "diff", "path": "src/store/catalog.py", "line": line, "text": "import sqlite3"},
    ]
    touched = {item["id"]: item for item in result["evidence"]["decisions"]}
    assert touched[ADR4_ID]["governs_touched"] == ["src/store/catalog.py"] and touched[ADR4_ID]["current"]
    assert "CONTRADICTS Move the catalog to Postgres" in result["answer"]
    assert {item["path"] for item in result["instructions"]} == {"AGENTS.md", "src/store/AGENTS.md",
                                                                 ".github/copilot-instructions.md"}


def test_review_does_not_flag_the_commit_that_recorded_the_supersession(built: Built) -> None:
    result = review(built.home, built.root, built.repo.branch)
    assert result["contradictions"] == []
    assert result["records_changed"] == [ADR2_ID, ADR4_ID]
    assert result["supersessions_recorded"] == [{"from": ADR4_ID, "to": ADR2_ID}]
    assert RUFF_ID not in ids(result["evidence"]["decisions"])  # written later: this commit could not know it
    plain = review(built.home, built.root, built.tested)
    assert plain["contradictions"] == [] and MEMORY_ID in ids(plain["evidence"]["decisions"])


def test_pagerank_ranks_the_decision_heavy_file_first(built: Built) -> None:
    result = rank_files(built.home, built.root)
    assert result["ranking"][0] == "src/search.py"
    assert result["evidence"]["files"][0]["decisions"] == 4
    assert result["ranking"].index("src/store/catalog.py") < result["ranking"].index("README.md")
    assert not {"DECISIONS.md", "AGENTS.md"} & set(result["ranking"])  # the records and instructions themselves


def test_shortest_path_between_a_decision_and_a_person(built: Built) -> None:
    result = shortest_path(built.home, built.root, "ADR-4", "Alice Kim")
    nodes = [node["node"] for node in result["path"]]
    assert (nodes[0], nodes[-1], len(nodes)) == (f"decision:{ADR4_ID}", f"person:{ALICE}", 4)
    with open_repo(built.home, built.root) as repo:
        graph = load_graph(repo)
    for left, right in itertools.pairwise(nodes):
        assert graph.graph.are_adjacent(graph.index[left], graph.index[right])
    assert graph.graph.distances(graph.index[nodes[0]], graph.index[nodes[-1]])[0][0] == 3
    assert ADR4_ID in ids(result["evidence"]["decisions"]) and ALICE in [p["key"] for p in result["evidence"]["people"]]


# --- grounding ---------------------------------------------------------------------------------------------------


def test_a_verbatim_quote_with_its_figures_is_accepted(built: Built) -> None:
    verdict = check_claim(
        built.root, built.repo.conflict, source_path="DECISIONS.md",
        quote="Keep the last 100 results in a dict in `src/search.py`.",
        claim="The cache keeps the last 100 results (`src/search.py`).",
    )  # fmt: skip
    assert verdict.accepted, verdict.reason
    assert set(verdict.checks) == {QUOTE_VERBATIM, FIGURE_IN_QUOTE, FILE_AT_COMMIT}


def test_a_quote_not_verbatim_is_rejected(built: Built) -> None:
    verdict = check_claim(
        built.root, "HEAD", source_path=ADR_2, quote="We will keep the catalog in Postgres.", claim="It chose Postgres."
    )
    assert verdict.failed_checks == [QUOTE_VERBATIM]
    assert "not verbatim in docs/adr/0002-use-sqlite-for-the-catalog.md" in verdict.reason


def test_a_figure_outside_its_quote_is_rejected(built: Built) -> None:
    verdict = check_claim(
        built.root, "HEAD", source_path="DECISIONS.md", quote="Keep the last 100 results in a dict",
        claim="The cache keeps 1,000 results, not 100.",
    )  # fmt: skip
    assert verdict.failed_checks == [FIGURE_IN_QUOTE]
    assert verdict.reason == "rejected: figure-in-quote: 1000 is not in the quote"


def test_a_file_missing_at_that_commit_is_rejected(built: Built) -> None:
    assert check_claim(built.root, built.repo.adr2, files=["src/catalog.py"]).accepted
    verdict = check_claim(built.root, built.repo.rename, claim="The catalog lives in `src/catalog.py`.")
    assert verdict.failed_checks == [FILE_AT_COMMIT]
    assert f"src/catalog.py does not exist at {built.repo.rename[:12]}" in verdict.reason
    quoted = check_claim(built.root, built.repo.init, source_path=ADR_4, quote="We will move the catalog to Postgres.")
    assert set(quoted.failed_checks) == {FILE_AT_COMMIT, QUOTE_VERBATIM}


def test_a_qualified_identifier_with_a_missing_part_is_rejected(built: Built) -> None:
    assert check_claim(built.root, "HEAD", claim="Writes go through `src.store.catalog.open_catalog`.").accepted
    verdict = check_claim(built.root, "HEAD", identifiers=["src.store.catalog.close_catalog"])
    assert verdict.failed_checks == [IDENTIFIER_EXISTS]
    assert "'close_catalog' of src.store.catalog.close_catalog" in verdict.reason
    # psycopg is imported only from the Postgres commit on: at the SQLite commit it is nowhere.
    assert check_claim(built.root, built.repo.branch, identifiers=["psycopg.connect"]).accepted
    assert check_claim(built.root, built.repo.adr2, identifiers=["psycopg.connect"]).failed_checks == [
        IDENTIFIER_EXISTS
    ]


def test_an_answer_may_cite_only_ids_a_tool_returned(built: Built) -> None:
    answers = [why(built.home, built.root, "src/store/catalog.py"), who_knows(built.home, built.root, "src/search.py")]
    returned = returned_ids(answers)
    assert {ADR4_ID, built.repo.rename, "src/catalog.py", ALICE} <= returned
    accepted = check_answer([ADR4_ID, built.repo.rename[:9], ALICE], returned)
    assert accepted.accepted and accepted.checks == (CITED_ID_RETURNED,)
    rejected = check_answer([ADR4_ID, LANCE_ID + "x", "deadbeef00"], returned)
    assert rejected.failed_checks == [CITED_ID_RETURNED]
    assert [failure.detail for failure in rejected.failures] == [
        f"{LANCE_ID}x was not returned by any tool in this run", "deadbeef00 was not returned by any tool in this run"
    ]


# --- the command line --------------------------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from pipelines.cli import main

    code = main(list(argv))
    return code, capsys.readouterr().out


def test_cli_answers_as_json_and_text(built: Built, capsys: pytest.CaptureFixture[str]) -> None:
    home = str(built.home.root)
    code, out = run_cli(capsys, "why", "src/store/catalog.py", "--repo", str(built.root), "--home", home, "--json")
    assert code == 0 and json.loads(out)["names"] == ["src/store/catalog.py", "src/catalog.py"]
    code, out = run_cli(capsys, "review", built.sqlite[:12], "--repo", str(built.root), "--home", home, "--json")
    assert code == 0 and json.loads(out)["contradictions"][0]["term"] == "sqlite"
    code, out = run_cli(capsys, "origin", "src/store/catalog.py:3", "--repo", str(built.root), "--home", home)
    assert code == 0 and f"introduced by {built.repo.branch[:12]}" in out and "line 3: import psycopg" in out
    code, out = run_cli(capsys, "told", built.repo.copilot, "--repo", str(built.root), "--home", home)
    assert code == 0 and "AGENTS.md:9-12" in out and "[agent: copilot]" in out
    code, out = run_cli(capsys, "git", "rank", "--repo", str(built.root), "--home", home, "--json")
    assert code == 0 and json.loads(out)["ranking"][0] == "src/search.py"


def test_cli_paths_are_relative_to_the_current_directory(
    built: Built, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(built.root / "src" / "store")
    code, out = run_cli(capsys, "who-knows", "catalog.py", "--home", str(built.home.root), "--json")
    assert code == 0 and json.loads(out)["path"] == "src/store/catalog.py"


def test_cli_ingest_and_review_actions_still_work(
    built: Built, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out = run_cli(capsys, "git", "ingest", str(built.root), "--home", str(tmp_path / "home"), "--json")
    assert code == 0 and json.loads(out)["mode"] == "full" and json.loads(out)["to_sha"] == built.sqlite
    code, out = run_cli(capsys, "review", "list", "--home", str(tmp_path / "home"))
    assert code == 0 and "no merge pairs" in out
    code, _ = run_cli(capsys, "why", "no/such/file.py", "--repo", str(built.root), "--home", str(built.home.root))
    assert code == 1


def test_a_range_review_as_markdown_for_a_pull_request(built: Built, capsys: pytest.CaptureFixture[str]) -> None:
    home = str(built.home.root)
    changes = f"{built.tested}~1..{built.sqlite}"  # the two commits after the first ingest
    result = review_range(built.home, built.root, changes)
    assert [item["commit"] for item in result["reviews"]] == [built.tested, built.sqlite]
    assert [(item["commit"], item["term"]) for item in result["contradictions"]] == [(built.sqlite, "sqlite")]
    assert ADR4_ID in ids(result["evidence"]["decisions"]) and "1 CONTRADICTION(S)" in result["answer"]
    code, out = run_cli(capsys, "review", changes, "--repo", str(built.root), "--home", home, "--format", "markdown")
    assert code == 0 and out.startswith(f"### Decision review of {changes}")
    assert "#### ⚠️ Contradicts 1 current decision(s)" in out
    assert f"`{built.sqlite[:12]}` names **sqlite**" in out and "`src/store/catalog.py:" in out
    row = "| Move the catalog to Postgres (2024-03-10) | current | `docs/adr/0004-move-the-catalog-to-postgres.md:"
    assert row in out
    code, _ = run_cli(capsys, "review", "HEAD..", "--repo", str(built.root), "--home", home)
    assert code == 1  # not a range: the message says how to write one
