"""Ingesting real git repositories (built with git by tests/gitrepo.py) into the decision graph's DuckDB store:
every table's content, the incremental ingest, a rewritten history, and the parsing units on their own."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pytest

from engramrag.gitgraph.gitcli import Git, GitError
from engramrag.gitgraph.history import agent_kind, person_key
from engramrag.gitgraph.ingest import ingest
from engramrag.gitgraph.instructions import governs, instruction_scope, sections
from engramrag.gitgraph.records import (
    Dated,
    PathIndex,
    is_decision_candidate,
    read_records,
    same_day_conflicts,
)
from engramrag.gitgraph.store import gitgraph_path, gitgraph_reader, path_history, repo_id
from engramrag.revise.references import ReferenceIndex
from engramrag.store import Home
from tests.gitrepo import (
    ADR_2,
    ADR_3,
    ADR_4,
    DATED,
    FixtureRepo,
    add_commits,
    build_fixture_repo,
    commit,
    git,
)

ADR1_ID = "docs/adr/0001-record-architecture-decisions.md#record architecture decisions"
ADR2_ID = "docs/adr/0002-use-sqlite-for-the-catalog.md#use sqlite for the catalog"
ADR3_ID = "docs/adr/0003-use-lancedb-for-vectors.md#use lancedb for vectors"
ADR4_ID = "docs/adr/0004-move-the-catalog-to-postgres.md#move the catalog to postgres"
BM25_ID = "DECISIONS.md#search uses bm25 only"
MEMORY_ID = "DECISIONS.md#cache search results in memory"
DISK_ID = "DECISIONS.md#cache search results on disk"
RUFF_ID = "docs/decisions/2024-04-02-adopt-ruff.md#adopt ruff for linting"
MEMORY_TEXT = """## 2024-03-05 Cache search results in memory

Status: Accepted

Keep the last 100 results in a dict in `src/search.py`."""


class Ingested:
    def __init__(self, repo: FixtureRepo, home: Home) -> None:
        self.repo, self.home = repo, home
        self.summary = ingest(repo.root, home, progress=False)
        self.id = repo_id(repo.root)

    def rows(self, sql: str, *params: object) -> list[tuple]:
        with gitgraph_reader(self.home) as connection:
            assert connection is not None
            return connection.execute(sql, list(params)).fetchall()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    base = tmp_path_factory.mktemp("ingest")
    return Ingested(build_fixture_repo(base / "repo"), Home.at(base / "home"))


@pytest.fixture
def fresh(tmp_path: Path) -> Ingested:
    return Ingested(build_fixture_repo(tmp_path / "repo"), Home.at(tmp_path / "home"))


def lines_at(repo: FixtureRepo, sha: str, path: str, start: int, end: int) -> str:
    return "\n".join(git(repo.root, "show", f"{sha}:{path}").split("\n")[start - 1 : end])


# --- the first ingest -----------------------------------------------------------------------------------------


def test_summary_repos_and_log(built: Ingested) -> None:
    summary, repo = built.summary, built.repo
    assert (summary.mode, summary.commits_added, summary.from_sha, summary.to_sha) == ("full", 14, None, repo.obsolete)
    assert (summary.decision_versions, summary.instruction_versions) == (15, 5)
    assert gitgraph_path(built.home).is_file()
    assert built.rows("SELECT repo_id, path, head, commits FROM repos") == [
        (built.id, str(repo.root.resolve()), repo.obsolete, 14)
    ]
    assert built.rows("SELECT from_sha, to_sha, commits_added, mode FROM ingest_log") == [
        (None, repo.obsolete, 14, "full")
    ]


def test_commits_in_parent_first_order_with_utc_dates(built: Ingested) -> None:
    repo = built.repo
    rows = built.rows("SELECT sha, seq, parents, is_merge FROM commits WHERE repo_id = ? ORDER BY seq", built.id)
    order = [row[0] for row in rows]
    assert [row[1] for row in rows] == list(range(14))
    assert set(order) == set(repo.shas())
    for child, parents, _ in ((r[0], r[2], r[3]) for r in rows):
        assert all(order.index(parent) < order.index(child) for parent in parents)
    merge = next(row for row in rows if row[0] == repo.merge)
    assert (merge[2], merge[3]) == ([repo.main_side, repo.branch], True)
    assert sum(row[3] for row in rows) == 1
    init = built.rows(
        "SELECT author_key, committer_key, authored_at, subject, body FROM commits WHERE sha = ?", repo.init
    )[0]
    assert init == ("alice@example.com", "alice@example.com", datetime(2024, 1, 10, 0, 0, tzinfo=UTC),
                    "Start the catalog service", "")  # fmt: skip
    adr2 = built.rows("SELECT subject, body FROM commits WHERE sha = ?", repo.adr2)[0]
    assert adr2 == ("Keep the catalog in SQLite", "Co-authored-by: Claude <noreply@anthropic.com>")


def test_people_mark_the_agents(built: Ingested) -> None:
    assert built.rows("SELECT person_key, name, email, is_agent, agent_kind FROM people ORDER BY person_key") == [
        ("alice@example.com", "Alice Kim", "alice@example.com", False, None),
        ("bob@example.com", "Bob Lee", "bob@example.com", False, None),
        ("carol@example.com", "Carol Park", "carol@example.com", False, None),
        ("copilot@users.noreply.github.com", "copilot-swe-agent[bot]", "198982749+Copilot@users.noreply.github.com",
         True, "copilot"),
        ("noreply@anthropic.com", "Claude", "noreply@anthropic.com", True, "claude"),
    ]  # fmt: skip


def test_commit_people_roles_and_co_authors(built: Ingested) -> None:
    repo = built.repo

    def roles(sha: str) -> set[tuple[str, str]]:
        return set(built.rows("SELECT person_key, role FROM commit_people WHERE sha = ?", sha))

    assert roles(repo.adr2) == {
        ("alice@example.com", "author"), ("alice@example.com", "committer"), ("noreply@anthropic.com", "co-author"),
    }  # fmt: skip
    assert ("noreply@anthropic.com", "co-author") in roles(repo.conflict)
    assert roles(repo.copilot) == {
        ("copilot@users.noreply.github.com", "author"), ("alice@example.com", "committer"),
        ("alice@example.com", "co-author"),
    }  # fmt: skip
    assert roles(repo.merge) == {("carol@example.com", "author"), ("carol@example.com", "committer")}
    co_authored = built.rows("SELECT DISTINCT sha FROM commit_people WHERE role = 'co-author' ORDER BY sha")
    assert {row[0] for row in co_authored} == {repo.adr2, repo.conflict, repo.copilot}


def test_file_changes_with_renames_and_the_merge_against_its_first_parent(built: Ingested) -> None:
    repo = built.repo
    assert built.rows("SELECT path, old_path, change, added, deleted FROM file_changes WHERE sha = ?", repo.rename) == [
        ("src/store/catalog.py", "src/catalog.py", "R", 1, 1)
    ]
    merge = built.rows("SELECT path, change FROM file_changes WHERE sha = ? ORDER BY path", repo.merge)
    assert merge == [(ADR_2, "M"), (ADR_4, "A"), ("src/store/catalog.py", "M")]
    for path, blob in built.rows("SELECT path, blob FROM file_changes WHERE sha = ?", repo.branch):
        assert blob == git(repo.root, "rev-parse", f"{repo.branch}:{path}")
    assert built.rows("SELECT count(*), count(DISTINCT sha) FROM file_changes") == [(27, 14)]


def test_head_files_are_the_tree_at_head(built: Ingested) -> None:
    tree = dict(line.split("\t")[::-1] for line in git(built.repo.root, "ls-tree", "-r", "HEAD").splitlines())
    expected = {path: meta.split()[2] for path, meta in tree.items()}
    assert dict(built.rows("SELECT path, blob FROM head_files")) == expected
    assert "src/catalog.py" not in expected and "src/store/catalog.py" in expected


def test_decision_versions_with_exact_lines(built: Ingested) -> None:
    repo = built.repo
    rows = built.rows(
        "SELECT d.decision_id, d.sha, d.decided_on, d.status, d.line_start, d.line_end, d.format, d.changed "
        "FROM decisions d JOIN commits c ON c.sha = d.sha ORDER BY d.decision_id, c.seq"
    )
    assert rows == [
        (MEMORY_ID, repo.conflict, date(2024, 3, 5), "accepted", 9, 13, "decisions-log", True),
        (MEMORY_ID, repo.obsolete, date(2024, 3, 5), "accepted", 9, 13, "decisions-log", False),
        (DISK_ID, repo.conflict, date(2024, 3, 5), "accepted", 15, 19, "decisions-log", True),
        (DISK_ID, repo.obsolete, date(2024, 3, 5), "accepted", 15, 19, "decisions-log", False),
        (BM25_ID, repo.init, date(2024, 1, 10), "accepted", 3, 7, "decisions-log", True),
        (BM25_ID, repo.conflict, date(2024, 1, 10), "accepted", 3, 7, "decisions-log", False),
        (BM25_ID, repo.obsolete, date(2024, 1, 10), "obsolete", 3, 7, "decisions-log", True),
        (ADR1_ID, repo.adr1, date(2024, 1, 15), "accepted", 1, 19, "nygard", True),
        (ADR2_ID, repo.adr2, date(2024, 2, 1), "accepted", 1, 19, "nygard", True),
        (ADR2_ID, repo.branch, date(2024, 2, 1), "superseded", 1, 19, "nygard", True),
        (ADR2_ID, repo.merge, date(2024, 2, 1), "superseded", 1, 19, "nygard", False),
        (ADR3_ID, repo.madr, date(2024, 3, 1), "accepted", 1, 12, "madr", True),
        (ADR4_ID, repo.branch, date(2024, 3, 10), "accepted", 1, 21, "nygard", True),
        (ADR4_ID, repo.merge, date(2024, 3, 10), "accepted", 1, 21, "nygard", False),
        (RUFF_ID, repo.dated, date(2024, 4, 2), "accepted", 1, 5, "dated-file", True),
    ]
    for _, sha, path, start, end, text, blob in built.rows(
        "SELECT decision_id, sha, path, line_start, line_end, text, blob FROM decisions"
    ):
        assert text == lines_at(repo, sha, path, start, end)
        assert blob == git(repo.root, "rev-parse", f"{sha}:{path}")
    memory = built.rows("SELECT text, title FROM decisions WHERE decision_id = ? AND sha = ?", MEMORY_ID, repo.conflict)
    assert memory == [(MEMORY_TEXT, "Cache search results in memory")]
    superseded = built.rows("SELECT text FROM decisions WHERE decision_id = ? AND sha = ?", ADR2_ID, repo.branch)
    assert superseded[0][0].split("\n")[6] == "Superseded by [ADR-0004](0004-move-the-catalog-to-postgres.md)"


def test_decision_current_is_the_version_at_head(built: Ingested) -> None:
    repo = built.repo
    assert built.rows("SELECT decision_id, sha, status FROM decision_current ORDER BY decision_id") == [
        (MEMORY_ID, repo.obsolete, "accepted"),
        (DISK_ID, repo.obsolete, "accepted"),
        (BM25_ID, repo.obsolete, "obsolete"),
        (ADR1_ID, repo.adr1, "accepted"),
        (ADR2_ID, repo.merge, "superseded"),
        (ADR3_ID, repo.madr, "accepted"),
        (ADR4_ID, repo.merge, "accepted"),
        (RUFF_ID, repo.dated, "accepted"),
    ]


def test_supersession_edge_from_the_newer_record(built: Ingested) -> None:
    repo = built.repo
    assert built.rows("SELECT from_id, to_id, kind, source_sha, line, source_id FROM decision_links") == [
        (ADR4_ID, ADR2_ID, "supersedes", repo.branch, 7, ADR2_ID)
    ]
    assert built.rows("SELECT decision_id, sha, line, kind, reference, to_id FROM decision_refs ORDER BY line") == [
        (ADR2_ID, repo.branch, 7, "superseded_by", "0004-move-the-catalog-to-postgres.md", ADR4_ID),
        (ADR4_ID, repo.branch, 9, "supersedes", "0002-use-sqlite-for-the-catalog.md", ADR2_ID),
    ]
    assert lines_at(repo, repo.branch, ADR_4, 9, 9) == "Supersedes [ADR-0002](0002-use-sqlite-for-the-catalog.md)"


def test_same_day_conflict_is_flagged_on_both(built: Ingested) -> None:
    flagged = built.rows(
        "SELECT decision_id, sha, conflicts_with FROM decisions WHERE same_day_conflict ORDER BY decision_id, sha"
    )
    repo = built.repo
    expected = sorted([
        (MEMORY_ID, repo.conflict, [DISK_ID]), (MEMORY_ID, repo.obsolete, [DISK_ID]),
        (DISK_ID, repo.conflict, [MEMORY_ID]), (DISK_ID, repo.obsolete, [MEMORY_ID]),
    ])  # fmt: skip
    assert flagged == expected
    assert built.rows("SELECT count(*) FROM decisions WHERE NOT same_day_conflict AND conflicts_with = []") == [(11,)]


def test_rationale_named_in_record_and_changed_with_it(built: Ingested) -> None:
    repo = built.repo
    rows = set(built.rows("SELECT decision_id, path, reason, sha FROM rationale"))
    assert rows == {
        (BM25_ID, "src/search.py", "named-in-record", repo.init),
        *((BM25_ID, path, "changed-with-record", repo.init)
          for path in ("AGENTS.md", "README.md", "src/catalog.py", "src/search.py")),
        (ADR1_ID, "docs/adr/", "named-in-record", repo.adr1),
        (ADR2_ID, "src/catalog.py", "named-in-record", repo.adr2),
        (ADR2_ID, "src/catalog.py", "changed-with-record", repo.adr2),
        (ADR2_ID, "src/store/catalog.py", "changed-with-record", repo.branch),
        (ADR3_ID, "src/search.py", "named-in-record", repo.madr),
        (MEMORY_ID, "src/search.py", "named-in-record", repo.conflict),
        (MEMORY_ID, "src/search.py", "changed-with-record", repo.conflict),
        (DISK_ID, "src/search.py", "changed-with-record", repo.conflict),
        (ADR4_ID, "src/store/catalog.py", "named-in-record", repo.branch),
        (ADR4_ID, "src/store/catalog.py", "changed-with-record", repo.branch),
        (RUFF_ID, "pyproject.toml", "named-in-record", repo.dated),
        (RUFF_ID, "src/", "named-in-record", repo.dated),
        (RUFF_ID, "pyproject.toml", "changed-with-record", repo.dated),
    }  # fmt: skip
    assert not any(reason == "changed-with-record" and sha == repo.merge for _, _, reason, sha in rows)


def test_blame_ties_record_lines_to_the_commits_that_wrote_them(built: Ingested) -> None:
    repo = built.repo

    def blame(decision_id: str) -> dict[int, str]:
        return dict(built.rows("SELECT line, sha FROM decision_blame WHERE decision_id = ?", decision_id))

    adr2 = blame(ADR2_ID)
    assert sorted(adr2) == list(range(1, 20))
    assert adr2[7] == repo.branch and {sha for line, sha in adr2.items() if line != 7} == {repo.adr2}
    bm25 = blame(BM25_ID)
    assert bm25 == {3: repo.init, 4: repo.init, 5: repo.obsolete, 6: repo.init, 7: repo.init}
    assert set(blame(MEMORY_ID).values()) == {repo.conflict} and sorted(blame(MEMORY_ID)) == [9, 10, 11, 12, 13]
    assert set(blame(RUFF_ID).values()) == {repo.dated}
    assert {row[0] for row in built.rows("SELECT DISTINCT decision_id FROM decision_blame")} == {
        row[0] for row in built.rows("SELECT decision_id FROM decision_current")
    }


def test_instruction_versions_as_dated_sections(built: Ingested) -> None:
    repo = built.repo
    rows = built.rows(
        "SELECT v.path, v.sha, v.committed_at, v.section, v.line_start, v.line_end, v.scope "
        "FROM instruction_versions v JOIN commits c ON c.sha = v.sha ORDER BY c.seq, v.path, v.line_start"
    )
    agents2_at = datetime(2024, 2, 20, 1, 0, tzinfo=UTC)
    assert [row for row in rows if row[1] == repo.agents2] == [
        ("AGENTS.md", repo.agents2, agents2_at, "Agent guide", 1, 3, ""),
        ("AGENTS.md", repo.agents2, agents2_at, "Agent guide > Style", 5, 7, ""),
        ("AGENTS.md", repo.agents2, agents2_at, "Agent guide > Testing", 9, 11, ""),
        ("AGENTS.md", repo.agents2, agents2_at, "Agent guide > Storage", 13, 15, ""),
        ("src/store/AGENTS.md", repo.agents2, agents2_at, "Store rules", 1, 3, "src/store"),
    ]
    assert {(row[0], row[1]) for row in rows} == {
        ("AGENTS.md", repo.init), ("AGENTS.md", repo.agents2), ("src/store/AGENTS.md", repo.agents2),
        ("AGENTS.md", repo.agents3), (".github/copilot-instructions.md", repo.agents3),
    }  # fmt: skip
    assert [row[3] for row in rows if row[1] == repo.init] == ["Agent guide", "Agent guide > Style",
                                                               "Agent guide > Testing"]  # fmt: skip
    testing = built.rows(
        "SELECT text, line_start, line_end FROM instruction_versions WHERE sha = ? AND section = ?",
        repo.agents3, "Agent guide > Testing",
    )  # fmt: skip
    assert testing == [("## Testing\n\n- Run pytest before every commit.\n- Never skip the lock tests.", 9, 12)]
    assert lines_at(repo, repo.agents3, "AGENTS.md", 9, 12) == testing[0][0]
    copilot = built.rows("SELECT section, scope, text FROM instruction_versions WHERE path LIKE '.github/%'")
    assert copilot == [("(preamble)", "", "Follow AGENTS.md in every folder.")]


def test_path_history_follows_renames_back(built: Ingested) -> None:
    with gitgraph_reader(built.home) as connection:
        assert connection is not None
        assert path_history(connection, built.id, "src/store/catalog.py") == ["src/store/catalog.py", "src/catalog.py"]
        assert path_history(connection, built.id, "README.md") == ["README.md"]


# --- later ingests ---------------------------------------------------------------------------------------------


def test_incremental_ingest_reads_only_the_new_commits(fresh: Ingested) -> None:
    repo, first = fresh.repo, fresh.summary
    before = {table: fresh.rows(f"SELECT count(*) FROM {table}")[0][0] for table in ("decisions", "file_changes")}
    added = add_commits(repo, 3)
    second = ingest(repo.root, fresh.home, progress=False)
    assert (second.mode, second.commits_added, second.from_sha, second.to_sha) == (
        "incremental", 3, first.to_sha, added[-1]
    )  # fmt: skip
    assert (second.decision_versions, second.instruction_versions) == (0, 0)
    log = fresh.rows("SELECT from_sha, to_sha, commits_added, mode FROM ingest_log ORDER BY run_at")
    assert log == [(None, repo.obsolete, 14, "full"), (repo.obsolete, added[-1], 3, "incremental")]
    assert fresh.rows("SELECT sha, seq FROM commits WHERE seq >= 14 ORDER BY seq") == [
        (added[0], 14), (added[1], 15), (added[2], 16)
    ]  # fmt: skip
    assert fresh.rows("SELECT count(*), count(DISTINCT sha) FROM commits") == [(17, 17)]
    assert fresh.rows("SELECT head, commits FROM repos") == [(added[-1], 17)]
    assert fresh.rows("SELECT count(*) FROM decisions")[0][0] == before["decisions"]
    assert fresh.rows("SELECT count(*) FROM file_changes")[0][0] == before["file_changes"] + 3
    assert set(fresh.rows("SELECT person_key, role FROM commit_people WHERE sha = ?", added[1])) == {
        ("bob@example.com", "author"), ("bob@example.com", "committer")
    }  # fmt: skip
    assert fresh.rows("SELECT blob FROM head_files WHERE path = 'CHANGELOG.md'") == [
        (git(repo.root, "rev-parse", "HEAD:CHANGELOG.md"),)
    ]

    third = ingest(repo.root, fresh.home, progress=False)
    assert (third.mode, third.commits_added, third.from_sha, third.to_sha) == (
        "unchanged", 0, added[-1], added[-1]
    )  # fmt: skip
    assert fresh.rows("SELECT commits_added, mode FROM ingest_log ORDER BY run_at")[-1] == (0, "unchanged")
    assert fresh.rows("SELECT count(*) FROM commits") == [(17,)]


def test_incremental_keeps_ids_across_a_rename_and_resolves_later_references(fresh: Ingested) -> None:
    repo, root = fresh.repo, fresh.repo.root
    log = (root / "DECISIONS.md").read_text(encoding="utf-8")
    pending = commit(root, "bob", "2024-05-01T10:00:00+00:00", "Lint with ruff and black", {
        "DECISIONS.md": log + "\n## 2024-05-01 Lint with ruff and black\n\n"
                              "Status: Superseded by 2024-05-02: Lint with ruff only\n",
    })  # fmt: skip
    assert ingest(root, fresh.home, progress=False).mode == "incremental"
    refs = fresh.rows("SELECT decision_id, reference, to_id FROM decision_refs WHERE sha = ?", pending)
    assert refs == [("DECISIONS.md#lint with ruff and black", "2024-05-02: Lint with ruff only", None)]

    renamed = "docs/decisions/2024-04-02-adopt-ruff-for-linting.md"
    git(root, "mv", DATED, renamed)
    text = (root / "DECISIONS.md").read_text(encoding="utf-8")
    later = commit(root, "alice", "2024-05-02T10:00:00+09:00", "Lint with ruff only; name the record in full", {
        "DECISIONS.md": text + "\n## 2024-05-02 Lint with ruff only\n\nStatus: Accepted\n",
    })  # fmt: skip
    summary = ingest(root, fresh.home, progress=False)
    assert (summary.mode, summary.commits_added) == ("incremental", 1)
    assert fresh.rows("SELECT path, old_path, change FROM file_changes WHERE sha = ? AND change = 'R'", later) == [
        (renamed, DATED, "R")
    ]
    versions = fresh.rows(
        "SELECT d.sha, d.path, d.changed FROM decisions d JOIN commits c ON c.sha = d.sha "
        "WHERE d.decision_id = ? ORDER BY c.seq",
        RUFF_ID,
    )
    assert versions == [(repo.dated, DATED, True), (later, renamed, False)]
    assert fresh.rows("SELECT sha, path FROM decision_current WHERE decision_id = ?", RUFF_ID) == [(later, renamed)]
    assert fresh.rows("SELECT from_id, to_id, source_sha, line FROM decision_links WHERE source_sha = ?", pending) == [
        ("DECISIONS.md#lint with ruff only", "DECISIONS.md#lint with ruff and black", pending, 23)
    ]
    assert lines_at(repo, pending, "DECISIONS.md", 23, 23).startswith("Status: Superseded by 2024-05-02")
    assert set(fresh.rows("SELECT DISTINCT sha FROM decision_blame WHERE decision_id = ?", RUFF_ID)) == {
        (repo.dated,)
    }  # fmt: skip

    redis = "docs/decisions/2024-03-05-cache-search-results-in-redis.md"
    commit(root, "carol", "2024-05-03T10:00:00+00:00", "A third cache", {redis: "# Cache search results in Redis\n"})
    assert ingest(root, fresh.home, progress=False).commits_added == 1
    redis_id = f"{redis}#cache search results in redis"
    current = dict(fresh.rows("SELECT decision_id, conflicts_with FROM decision_current WHERE same_day_conflict"))
    assert current == {MEMORY_ID: [DISK_ID, redis_id], DISK_ID: [MEMORY_ID, redis_id], redis_id: [MEMORY_ID, DISK_ID]}
    assert fresh.rows("SELECT sha FROM decision_current WHERE decision_id = ?", MEMORY_ID) == [(later,)]
    historic = "SELECT conflicts_with FROM decisions WHERE decision_id = ? AND sha = ?"
    assert fresh.rows(historic, MEMORY_ID, repo.conflict) == [([DISK_ID],)]


def test_rewritten_history_is_ingested_again_from_scratch(fresh: Ingested) -> None:
    repo, root = fresh.repo, fresh.repo.root
    git(root, "reset", "-q", "--hard", repo.copilot)
    replacement = commit(root, "carol", "2024-04-21T10:00:00+00:00", "Keep BM25 after all", {
        "README.md": "# Catalog service\n",
    })  # fmt: skip
    summary = ingest(root, fresh.home, progress=False)
    assert (summary.mode, summary.commits_added, summary.from_sha) == ("rewritten", 14, repo.obsolete)
    assert "no longer in the history of HEAD" in summary.note
    assert fresh.rows("SELECT mode, note FROM ingest_log ORDER BY run_at")[-1] == ("rewritten", summary.note)
    assert fresh.rows("SELECT count(*) FROM commits WHERE sha = ?", repo.obsolete) == [(0,)]
    assert fresh.rows("SELECT count(*) FROM decisions WHERE sha = ?", repo.obsolete) == [(0,)]
    assert fresh.rows("SELECT count(*), max(seq) FROM commits") == [(14, 13)]
    assert fresh.rows("SELECT status FROM decision_current WHERE decision_id = ?", BM25_ID) == [("accepted",)]
    assert fresh.rows("SELECT head FROM repos") == [(replacement,)]


def test_a_subfolder_names_its_repository_and_git_environment_is_ignored(
    fresh: Ingested, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / ".gitconfig").write_text("[log]\n\tshowRoot = false\n[diff]\n\trenames = false\n")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    again = ingest(fresh.repo.root, Home.at(tmp_path / "home2"), progress=False)
    with gitgraph_reader(Home.at(tmp_path / "home2")) as connection:
        assert connection is not None
        found = connection.execute("SELECT count(*) FROM file_changes WHERE sha = ?", [fresh.repo.init]).fetchone()
        renamed = connection.execute("SELECT change FROM file_changes WHERE sha = ?", [fresh.repo.rename]).fetchall()
    assert (again.commits_added, found, renamed) == (14, (5,), [("R",)])
    add_commits(fresh.repo, 1)
    summary = ingest(fresh.repo.root / "src" / "store", fresh.home, progress=False)
    assert (summary.repo_id, summary.mode, summary.commits_added) == (fresh.id, "incremental", 1)
    with pytest.raises(GitError, match="not a git repository"):
        ingest(tmp_path / "nowhere", fresh.home, progress=False)


def test_two_repositories_share_a_home(fresh: Ingested, tmp_path: Path) -> None:
    second = tmp_path / "second"
    second.mkdir()
    git(second, "init", "-q")
    empty = ingest(second, fresh.home, progress=False)
    assert (empty.mode, empty.commits_added, empty.to_sha) == ("empty", 0, None)
    add_commits(second, 2)
    summary = ingest(second, fresh.home, progress=False)
    assert (summary.mode, summary.commits_added) == ("full", 2)
    counts = dict(fresh.rows("SELECT repo_id, count(*) FROM commits GROUP BY repo_id"))
    assert counts == {fresh.id: 14, repo_id(second): 2}
    with duckdb.connect(str(gitgraph_path(fresh.home)), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM repos").fetchone() == (2,)


# --- units -----------------------------------------------------------------------------------------------------


def test_agents_are_recognised_by_name_or_email() -> None:
    assert agent_kind("Claude", "noreply@anthropic.com") == "claude"
    assert agent_kind("Claude Opus 4", "") == "claude"
    assert agent_kind("Claude Monet", "claude@monet.fr") is None
    assert agent_kind("Devin Smith", "devin@example.com") is None
    assert agent_kind("devin-ai-integration[bot]", "158243242+devin-ai-integration[bot]@users.noreply.github.com") == (
        "devin"
    )
    assert agent_kind("Cursor Agent", "cursoragent@cursor.com") == "cursor"
    assert agent_kind("Paul Gauthier (aider)", "paul@example.com") == "aider"
    assert agent_kind("gemini-code-assist[bot]", "") == "gemini"
    assert agent_kind("Codex", "codex@openai.com") == "codex"
    assert agent_kind("dependabot[bot]", "49699333+dependabot[bot]@users.noreply.github.com") == "bot"
    assert agent_kind("Alice Kim", "alice@example.com") is None
    assert person_key("Copilot", "198982749+Copilot@users.noreply.github.com") == "copilot@users.noreply.github.com"
    assert person_key("Alice Kim", " Alice@Example.COM ") == "alice@example.com"
    assert person_key("  Alice   Kim ", "") == "alice kim"


def test_odd_file_names_do_not_confuse_the_log_parser(tmp_path: Path) -> None:
    root = tmp_path / "odd"
    root.mkdir()
    git(root, "init", "-q")
    names = {":colon.txt": "a\n", "1\t2\tlooks-like-numstat.txt": "b\n", "line\nbreak.txt": "c\n", "한글.md": "d\n"}
    first = commit(root, "alice", "2024-01-01T00:00:00+00:00", ":subject with a colon", names)
    git(root, "mv", ":colon.txt", "renamed :colon.txt")
    second = commit(root, "bob", "2024-01-02T00:00:00+00:00", "Rename", {"1\t2\tlooks-like-numstat.txt": "b\nb\n"})
    home = Home.at(tmp_path / "home")
    summary = ingest(root, home, progress=False)
    assert summary.commits_added == 2
    with gitgraph_reader(home) as connection:
        assert connection is not None
        rows = connection.execute("SELECT sha, path, old_path, change, added FROM file_changes ORDER BY sha, path")
        found = set(rows.fetchall())
    assert found == {
        *((first, name, None, "A", 1) for name in names),
        (second, "renamed :colon.txt", ":colon.txt", "R", 0),
        (second, "1\t2\tlooks-like-numstat.txt", None, "M", 1),
    }  # fmt: skip


def test_read_records_of_each_format() -> None:
    nygard = read_records(ADR_2, b"# 2. Use SQLite\n\n## Status\n\nSuperseded by 0004\n\n## Context\n\nSmall.\n")
    assert [(r.title, r.status, r.format, r.line_start, r.line_end) for r in nygard] == [
        ("Use SQLite", "superseded", "nygard", 1, 9)
    ]
    assert [(ref.kind, ref.reference, ref.line) for ref in nygard[0].references] == [("superseded_by", "0004", 5)]
    madr = read_records(ADR_3, b"# Use X\n\n- Status: proposed\n- Date: 2024-06-01\n")
    assert [(r.decided_on, r.status, r.format) for r in madr] == [("2024-06-01", "proposed", "madr")]
    dated = read_records("docs/decisions/2024-07-08-pick-y.md", b"# Pick Y\n\nStatus: Obsolete\n")
    assert [(r.decided_on, r.status, r.format) for r in dated] == [("2024-07-08", "obsolete", "dated-file")]
    twice = read_records("DECISIONS.md", b"## 2024-01-01 Use Z\n\nStatus: Accepted\n\n## 2024-01-01 Use Z\n\nNo.\n")
    assert [r.decision_id for r in twice] == ["DECISIONS.md#use z", "DECISIONS.md#use z@2024-01-01"]
    assert read_records("docs/adr/README.md", b"# ADRs\n\nStatus: index\n") == []
    assert read_records(ADR_2, b"\xff\xfe not utf-8") == []
    assert read_records("docs/adr/0009-x.md", b"# 9. X\n\n## Status\n\nAccepted\n", origin="docs/adr/0009-old.md")[
        0
    ].decision_id == ("docs/adr/0009-old.md#x")
    assert is_decision_candidate("DECISIONS.md") and is_decision_candidate("docs/adr/0001-a.md")
    assert is_decision_candidate("notes/0007-idea.md") and not is_decision_candidate("src/adr.py")
    assert not is_decision_candidate("README.md")


def test_same_day_conflicts_need_live_records_about_one_thing() -> None:
    def dated(key: str, title: str, day: str = "2024-03-05", live: bool = True, names: tuple[str, ...] = ()) -> Dated:
        return Dated(key, title, day, live, frozenset(names))

    assert same_day_conflicts([dated("a", "Cache results in memory"), dated("b", "Cache results on disk")]) == {
        "a": {"b"}, "b": {"a"}
    }  # fmt: skip
    assert same_day_conflicts([dated("a", "Cache results in memory"), dated("b", "Adopt ruff")]) == {}
    assert same_day_conflicts([dated("a", "Use Postgres"), dated("b", "Use Postgres", live=False)]) == {}
    assert same_day_conflicts([dated("a", "Cache in memory"), dated("b", "Cache on disk", names=("a",))]) == {}
    assert same_day_conflicts([dated("a", "Cache in memory"), dated("b", "Cache on disk", day="2024-03-06")]) == {}


def test_record_index_resolves_references_and_links() -> None:
    index = ReferenceIndex()
    index.add_version(ADR_2, [(ADR2_ID, "Use SQLite for the catalog", "2024-02-01")])
    index.add_version(ADR_4, [(ADR4_ID, "Move the catalog to Postgres", "2024-03-10")])
    index.add_version("DECISIONS.md", [(BM25_ID, "Search uses BM25 only", "2024-01-10"),
                                       (MEMORY_ID, "Cache search results in memory", "2024-03-05")])  # fmt: skip
    assert index.resolve("0004-move-the-catalog-to-postgres.md", ADR_2) == {ADR4_ID}
    assert index.resolve("../adr/0004-move-the-catalog-to-postgres.md", "docs/notes/x.md") == {ADR4_ID}
    assert index.resolve("ADR-0004", ADR_2) == {ADR4_ID} and index.resolve("4", ADR_2) == {ADR4_ID}
    assert index.resolve("2024-01-10: Search uses BM25 only", "DECISIONS.md") == {BM25_ID}
    assert index.resolve("Use SQLite for the catalog", "DECISIONS.md") == {ADR2_ID}
    assert index.resolve("DECISIONS.md", ADR_2) == set()
    assert index.resolve("2024", ADR_2) == set() and index.resolve("ADR-0009", ADR_2) == set()
    entry = "## 2024-03-10 Move the catalog\n\nADR: [ADR-0004](docs/adr/0004-move-the-catalog-to-postgres.md)"
    assert index.related("DECISIONS.md#move the catalog", "DECISIONS.md", entry) == {ADR4_ID}
    assert index.related(ADR4_ID, ADR_4, "Supersedes [ADR-0002](x)", ["0002-use-sqlite-for-the-catalog.md"]) == {
        ADR2_ID
    }  # fmt: skip


def test_decision_log_sections_are_cached_without_changing_the_records() -> None:
    log = Path(__file__).resolve().parents[1] / "examples" / "vault" / "DECISIONS.md"
    raw = log.read_bytes()
    cache: dict = {}
    assert read_records("DECISIONS.md", raw, sections=cache) == read_records("DECISIONS.md", raw)
    inserted = raw.replace(b"## 2026-02-10", b"## 2026-01-30: Inserted\n\nStatus: Proposed\n\n## 2026-02-10", 1)
    cached = read_records("DECISIONS.md", inserted, sections=cache)
    assert cached == read_records("DECISIONS.md", inserted) and len(cached) == 8
    assert len(cache) == 8


def test_path_index_resolves_written_names() -> None:
    tree = PathIndex(["src/store/catalog.py", "src/search.py", "tests/test_search.py", "docs/adr/0001-a.md"])
    assert tree.resolve("src/search.py", "docs/adr") == "src/search.py"
    assert tree.resolve("catalog.py", "") == "src/store/catalog.py"
    assert tree.resolve("store/catalog.py", "") == "src/store/catalog.py"
    assert tree.resolve("../../src/search.py", "docs/adr") == "src/search.py"
    assert tree.resolve("0001-a.md", "docs/adr") == "docs/adr/0001-a.md"
    assert tree.resolve("src", "") == "src/"
    assert tree.resolve("search.py", "") == "src/search.py"
    tree.add("lib/search.py")
    assert tree.resolve("search.py", "") is None
    tree.remove("src/store/catalog.py")
    assert tree.resolve("catalog.py", "") is None and tree.resolve("src/store", "") is None
    assert tree.resolve("https://example.com/src/search.py", "") is None


def test_instruction_files_and_sections() -> None:
    assert instruction_scope("AGENTS.md") == "" and instruction_scope("src/store/AGENTS.md") == "src/store"
    assert instruction_scope(".github/copilot-instructions.md") == ""
    assert instruction_scope("pkg/.cursor/rules/style.mdc") == "pkg"
    assert instruction_scope(".claude/CLAUDE.md") == "" and instruction_scope("web/.cursorrules") == "web"
    assert instruction_scope("docs/agents.md") is None and instruction_scope("README.md") is None
    assert governs("src/store", "src/store/catalog.py") and not governs("src/store", "src/storefront.py")
    assert governs("", "anything.py")
    found = sections(b"Intro line\n\n# Guide\n\n```\n# not a heading\n```\n\n## Tests\n\nRun them.\n\n\n")
    assert [(s.section, s.line_start, s.line_end) for s in found] == [
        ("(preamble)", 1, 1), ("Guide", 3, 7), ("Guide > Tests", 9, 11)
    ]  # fmt: skip
    assert found[1].text == "# Guide\n\n```\n# not a heading\n```"


def test_git_refuses_revisions_that_look_like_options(built: Ingested) -> None:
    git_repo = Git(built.repo.root)
    assert git_repo.resolve("--output=/tmp/x") is None
    assert git_repo.resolve(built.repo.merge[:10]) == built.repo.merge
    assert git_repo.file_exists(built.repo.init, "src/catalog.py")
    assert not git_repo.file_exists(built.repo.rename, "src/catalog.py")
