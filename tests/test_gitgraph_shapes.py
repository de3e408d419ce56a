"""Decision-record shapes met in real repositories (issue 17), each in a repository built here with git: files
beside the records in an ADR folder that are not records, and the ways real ADRs write their dates. Also: the
command line stops quietly when the reader of its output goes away (`engram git ... | head`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import commit, git

from engramrag.gitgraph.grounding import FIGURE_IN_QUOTE, IDENTIFIER_EXISTS, check_claim
from engramrag.gitgraph.ingest import ingest
from engramrag.gitgraph.tools import disproven, origin, trace, who_knows, why
from engramrag.gitgraph.tools.base import open_repo
from engramrag.store import Home
from engramrag.vault.dates import find_date

REPOSITORY = Path(__file__).resolve().parents[1]
APP = "src/app.py"
LEGACY = "src/legacy.py"
CODE = {
    "src/schema/validator.rs": "pub fn validate_schema(input: &str) -> bool {\n    !input.is_empty()\n}\n",
    "src/lib.rs": "pub mod schema;\nuse crate::schema::validator;\n",
    "docs/retention.md": "# Retention\n\nThe catalog keeps\nevery note for 30 days.\n",
    "README.md": "# Service\n\nWe validate inputs at the edge.\n",
}
ADR_7 = "docs/adr/0007-remove-the-legacy-module.md"
ADR7_ID = f"{ADR_7}#remove the legacy module"
ADR_6 = "docs/adr/0006-keep-constants-in-the-app-module.md"
REDIS_ID = "docs/adr/0004-use-redis.md#use redis for sessions and caching"

NYGARD = "# {number}. {title}\n\n## Status\n\n{status}\n\n## Context\n\n{context}\n\n## Decision\n\n{decision}\n"
FILES = {
    # Records, each dating itself another way.
    "docs/adr/0001-use-postgres.md": NYGARD.format(
        number=1, title="Use Postgres", status="Accepted — 2026-04-27", context="We need a catalog.",
        decision="We will use Postgres."),
    "docs/adr/0002-use-grpc.md": "# 2. Use gRPC\n\nDate: 28/04/2026\n\n## Status\n\nAccepted\n\n## Decision\n\n"
    "Services talk gRPC.\n",
    # A reference by number and title, not a link.
    "docs/adr/0003-use-soap.md": NYGARD.format(
        number=3, title="Use SOAP", status="Superseded by 0002: Use gRPC", context="Old clients.",
        decision="We used SOAP."),
    # A part replaced, the rest in force.
    "docs/adr/0004-use-redis.md": NYGARD.format(
        number=4, title="Use Redis for sessions and caching",
        status="Partially superseded by [ADR-0005](0005-use-memcached-for-caching.md): caching moves to "
        "Memcached; everything else remains in force.", context="Sessions and caches.", decision="Redis."),
    "docs/adr/0005-use-memcached-for-caching.md": NYGARD.format(
        number=5, title="Use Memcached for caching", status="Accepted", context="Redis memory.",
        decision="Caching moves to Memcached; sessions stay on Redis (partly supersedes ADR-0004)."),
    "docs/adr/20240427-adopt-ruff.md": "# Adopt ruff\n\n## Status\n\nAccepted\n\n## Decision\n\nWe lint with ruff.\n",
    # Two records of one day about one thing, neither naming the other.
    "DECISIONS.md": "# Decisions\n\n## 2026-04-20: Cache search results in Redis\n\nStatus: accepted\n\n"
    "## 2026-04-20: Cache search results on disk\n\nStatus: accepted\n",
    # Beside them, not records.
    "docs/adr/AGENTS.md": "# Agent guide for ADRs\n\n## Decision\n\nWrite one ADR per decision.\n\n"
    "## Status\n\nKeep the status line current.\n",
    "docs/adr/summary.md": "# Summary\n\n| ADR | Status |\n|---|---|\n| 0001 | Accepted |\n| 0002 | Accepted |\n",
    "docs/adr/README.md": "# Architecture decisions\n\nStatus: maintained by the platform team.\n",
    "docs/adr/glossary.md": "# Glossary\n\n- ADR: architecture decision record.\n",
}  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Home]:
    base = tmp_path_factory.mktemp("shapes")
    root = base / "repo"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "alice", "2026-04-29T10:00:00+00:00", "Record the first decisions",
           {**FILES, APP: "A = 1\n", LEGACY: "OLD = 0\n", **CODE})  # fmt: skip
    # The same person from another address; a side branch by Bob, merged by Carol.
    (root / APP).write_text("A = 1\nB = 2\n", encoding="utf-8")
    git(root, "commit", "-q", "-am", "Add B", env=identity_with("Alice Kim", "alice@work.example", "2026-04-30"))
    git(root, "checkout", "-q", "-b", "side")
    commit(root, "bob", "2026-05-01T10:00:00+00:00", "Add C", {APP: "A = 1\nB = 2\nC = 3\n"})
    git(root, "checkout", "-q", "main")
    commit(root, "alice", "2026-05-02T10:00:00+00:00", "Decide about the app", {
        "NOTES.md": "# Notes\n", ADR_6: NYGARD.format(number=6, title="Keep constants in the app module",
        status="Accepted", context="Constants.", decision="Constants live in `src/app.py`.")})  # fmt: skip
    git(root, "merge", "-q", "--no-ff", "-m", "Merge branch 'side'", "side",
        env=identity_with("Carol Park", "carol@example.com", "2026-05-03"))  # fmt: skip
    commit(root, "bob", "2026-05-04T10:00:00+00:00", "Remove the legacy module", {
        LEGACY: None, ADR_7: NYGARD.format(number=7, title="Remove the legacy module", status="Accepted",
        context="Two places hold constants.", decision="We delete src/legacy.py. Its constants live in "
        "/home/dev/project/src/app.py from now on.")})  # fmt: skip
    home = Home.at(base / "home")
    ingest(root, home, progress=False)
    return root, home


def ids(items: list[dict]) -> list[str]:
    return [item["id"] for item in items]


def identity_with(name: str, email: str, day: str) -> dict[str, str]:
    when = f"{day}T10:00:00+00:00"
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": when,
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": when}  # fmt: skip


def decisions(built: tuple[Path, Home]) -> dict[str, str | None]:
    root, home = built
    with open_repo(home, root) as repo:
        rows = repo.rows("SELECT path, decided_on FROM decision_current WHERE repo_id = $repo")
    return {row["path"]: str(row["decided_on"]) if row["decided_on"] else None for row in rows}


def test_only_the_records_of_an_adr_folder_are_decisions(built) -> None:
    assert set(decisions(built)) == {
        "docs/adr/0001-use-postgres.md", "docs/adr/0002-use-grpc.md", "docs/adr/0003-use-soap.md",
        "docs/adr/0004-use-redis.md", "docs/adr/0005-use-memcached-for-caching.md", "docs/adr/20240427-adopt-ruff.md",
        "DECISIONS.md", ADR_6, ADR_7,
    }  # fmt: skip


def test_dates_in_the_status_line_day_first_and_a_compact_file_name(built) -> None:
    dated = {path: day for path, day in decisions(built).items()
             if not path.startswith(("docs/adr/0004", "docs/adr/0005", "docs/adr/0006", "docs/adr/0007", "DECISIONS"))}
    assert dated == {
        "docs/adr/0001-use-postgres.md": "2026-04-27",  # "Accepted — 2026-04-27"
        "docs/adr/0002-use-grpc.md": "2026-04-28",  # "Date: 28/04/2026"
        "docs/adr/0003-use-soap.md": None,  # the date on its status line is not there: no date
        "docs/adr/20240427-adopt-ruff.md": "2024-04-27",  # no date line: the file name's
    }


def test_a_reference_by_number_and_title_links_the_records(built) -> None:
    root, home = built
    with open_repo(home, root) as repo:
        links = repo.rows("SELECT from_id, to_id, kind FROM decision_links WHERE repo_id = $repo")
    assert sorted((row["from_id"], row["to_id"]) for row in links if row["kind"] == "supersedes") == [
        ("docs/adr/0002-use-grpc.md#use grpc", "docs/adr/0003-use-soap.md#use soap")
    ]


def test_a_partial_supersession_leaves_the_rest_in_force(built) -> None:
    root, home = built
    redis, memcached = REDIS_ID, "docs/adr/0005-use-memcached-for-caching.md#use memcached for caching"
    traced = trace(home, root, "4")
    assert traced["decision"] == redis
    assert traced["superseded_by"] == [] and traced["partially_superseded_by"] == [memcached]
    assert "partly superseded by Use Memcached for caching (the rest stays in force)" in traced["answer"]
    [record] = [item for item in traced["evidence"]["decisions"] if item["id"] == redis]
    assert record["status"] == "partially superseded" and record["current"] is True
    assert disproven(home, root, "redis")["disproven"] == []
    assert trace(home, root, "5")["partially_supersedes"] == [redis]


def test_one_person_under_two_addresses_and_no_credit_for_a_merge(built) -> None:
    root, home = built
    ranked = who_knows(home, root, APP)
    assert sorted(ranked["ranking"]) == ["alice@example.com", "bob@example.com"]  # not Carol, who only merged
    people = {item["key"]: item for item in ranked["evidence"]["people"]}
    assert people["alice@example.com"]["name"] == "Alice Kim"
    assert people["alice@example.com"]["commits"] == 2  # both addresses' commits
    assert people["alice@example.com"]["decisions"] == [f"{ADR_6}#keep constants in the app module"]


def test_a_commit_that_adds_many_records_governs_none_of_the_files_beside_them(built) -> None:
    root, home = built
    # six ADRs arrived with it: an import, no rationale (ADRs 6 and 7 name the file, which is why they govern it)
    assert sorted(ids(why(home, root, APP)["evidence"]["decisions"])) == [
        f"{ADR_6}#keep constants in the app module", ADR7_ID]


def test_a_same_day_conflict_is_in_the_answer_text(built) -> None:
    root, home = built
    text = why(home, root, "DECISIONS.md")["answer"]
    assert "same-day conflict, neither names the other: Cache search results in Redis vs Cache search results " \
           "on disk" in text or "same-day conflict, neither names the other: Cache search results on disk vs " \
           "Cache search results in Redis" in text  # fmt: skip


def test_a_side_branch_commit_sees_only_the_decisions_of_its_own_history(built) -> None:
    root, home = built
    adr6 = f"{ADR_6}#keep constants in the app module"
    with open_repo(home, root) as repo:
        rows = repo.rows("SELECT subject, seq FROM commits WHERE repo_id = $repo")
    seq = {row["subject"]: row["seq"] for row in rows}
    assert seq["Decide about the app"] < seq["Add C"]  # ingested before the side commit: order alone would err
    side = origin(home, root, APP, 3)  # line 3 came from Bob's commit on the side branch
    assert side["evidence"]["commits"][0]["subject"] == "Add C"
    assert adr6 not in ids(side["evidence"]["decisions"])
    assert adr6 in ids(why(home, root, APP)["evidence"]["decisions"])  # it governs the file now


def test_a_record_governs_a_file_it_deletes_and_one_written_as_an_absolute_path(built) -> None:
    root, home = built
    assert ADR7_ID in ids(why(home, root, LEGACY)["evidence"]["decisions"])  # deleted in the same commit
    assert ADR7_ID in ids(why(home, root, APP)["evidence"]["decisions"])  # /home/dev/project/src/app.py


def test_a_qualified_identifier_must_be_found_as_a_whole(built) -> None:
    root, _ = built
    real = check_claim(root, "HEAD", identifiers=["crate::schema::validator::validate_schema"])
    assert real.accepted, real.reason
    # every part occurs somewhere ("validate" in README), but validator.rs has no `validate`
    made_up = check_claim(root, "HEAD", identifiers=["crate::schema::validator::validate"])
    assert made_up.failed_checks == [IDENTIFIER_EXISTS]
    assert "'validate' of crate::schema::validator::validate is not a word of src/schema/validator.rs" in \
        made_up.reason  # fmt: skip


def test_a_quote_across_a_line_break_and_a_record_number_are_accepted(built) -> None:
    root, _ = built
    verdict = check_claim(root, "HEAD", quote="The catalog keeps every note for 30 days.",
                          source_path="docs/retention.md", claim="Notes are kept 30 days (ADR-0016, #12).")  # fmt: skip
    assert verdict.accepted, verdict.reason
    wrong = check_claim(root, "HEAD", quote="The catalog keeps every note for 30 days.",
                        source_path="docs/retention.md", claim="Notes are kept 31 days (ADR-0016).")  # fmt: skip
    assert wrong.failed_checks == [FIGURE_IN_QUOTE] and "31 is not in the quote" in wrong.reason


def test_a_number_names_the_file_that_has_it_now(tmp_path: Path) -> None:
    """`git mv 0002-x.md 0003-x.md`, a new 0002, and "Superseded by ADR-0002" in 0001: the new 0002 superseded
    0001, not the record that used to have the number (in a full and in an incremental ingest)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    rest, soap = "docs/adr/0001-use-rest.md", "docs/adr/0002-use-soap.md"
    commit(root, "alice", "2026-01-05T10:00:00+00:00", "First two decisions", {
        rest: NYGARD.format(number=1, title="Use REST", status="Accepted", context="APIs.", decision="REST."),
        soap: NYGARD.format(number=2, title="Use SOAP for billing", status="Accepted", context="Billing.",
                            decision="SOAP."),
    })  # fmt: skip
    home = Home.at(tmp_path / "home")
    ingest(root, home, progress=False)
    git(root, "mv", soap, "docs/adr/0003-use-soap.md")
    commit(root, "bob", "2026-02-05T10:00:00+00:00", "Renumber, and replace REST", {
        "docs/adr/0002-use-grpc.md": NYGARD.format(number=2, title="Use gRPC", status="Accepted",
                                                   context="Latency.", decision="gRPC."),
        rest: NYGARD.format(number=1, title="Use REST", status="Superseded by ADR-0002", context="APIs.",
                            decision="REST."),
    })  # fmt: skip
    expected = [("docs/adr/0002-use-grpc.md#use grpc", "docs/adr/0001-use-rest.md#use rest")]
    for where in (home, Home.at(tmp_path / "full")):  # incremental, then full
        ingest(root, where, progress=False)
        with open_repo(where, root) as repo:
            links = repo.rows("SELECT from_id, to_id FROM decision_links WHERE repo_id = $repo")
        assert [(row["from_id"], row["to_id"]) for row in links] == expected
        assert trace(where, root, "3")["supersedes"] == []


def test_a_retitled_or_translated_adr_stays_one_decision(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    adr = "docs/adr/0001-use-postgres.md"
    titles = ["Use Postgres", "Use PostgreSQL", "PostgreSQL 사용"]
    incremental = Home.at(tmp_path / "incremental")
    for day, title in enumerate(titles, start=1):
        commit(root, "alice", f"2026-03-0{day}T10:00:00+00:00", f"ADR 1: {title}", {
            adr: NYGARD.format(number=1, title=title, status="Accepted", context="A catalog.",
                               decision="The catalog runs on PostgreSQL."),
        })  # fmt: skip
        ingest(root, incremental, progress=False)
    full = Home.at(tmp_path / "full")
    ingest(root, full, progress=False)
    for home in (incremental, full):
        with open_repo(home, root) as repo:
            stored = repo.rows("SELECT DISTINCT decision_id FROM decisions WHERE repo_id = $repo")
        assert [row["decision_id"] for row in stored] == [f"{adr}#use postgres"]  # its first title names it
        traced = trace(home, root, "1")
        assert [version["title"] for version in traced["versions"]] == titles
        assert disproven(home, root, "postgres")["disproven"] == []


def test_numeric_dates_are_read_day_first_unless_that_is_no_date() -> None:
    assert find_date("Date: 03/04/2026") == "2026-04-03"
    assert find_date("Date: 04/27/2026") == "2026-04-27"  # no 27th month: month first
    assert find_date("27.04.2026") == "2026-04-27"
    assert find_date("version 1.2.3") is None and find_date("31/02/2026") is None


def test_a_reader_that_leaves_early_gets_no_traceback(built) -> None:
    root, home = built
    command = [sys.executable, "-m", "pipelines.cli", "trace", "1", "--repo", str(root), "--home",
               str(home.root), "--json"]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before the first line
    try:
        done = subprocess.run(command, stdout=writer, stderr=subprocess.PIPE, text=True, env=environment,
                              cwd=REPOSITORY, timeout=120, check=False)  # fmt: skip
    finally:
        os.close(writer)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 141


def test_a_commit_is_dated_by_when_it_entered_the_history_everywhere(tmp_path: Path) -> None:
    # Issue 17, item 8: supersession went by the commit date while lists showed the author date. A rebased change
    # written on 2026-02-01 and committed on 2026-03-15 now reads 2026-03-15 in both, its author date beside it.
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    first = NYGARD.format(number=1, title="Use Postgres", status="Accepted", context="A catalog.",
                          decision="We will use Postgres.")  # fmt: skip
    commit(root, "alice", "2026-01-10T10:00:00+00:00", "Record ADR 1", {"docs/adr/0001-use-postgres.md": first,
                                                                        APP: "A = 1\n"})  # fmt: skip
    files = {
        "docs/adr/0001-use-postgres.md": first.replace("Accepted", "Superseded by ADR-0002"),
        "docs/adr/0002-use-sqlite.md": NYGARD.format(number=2, title="Use SQLite", status="Accepted",
                                                     context="Smaller.", decision="We use SQLite in `src/app.py`."),
        APP: "A = 2\n",
    }  # fmt: skip
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Move to SQLite", env={
        **identity_with("Alice Kim", "alice@example.com", "2026-02-01"),
        "GIT_COMMITTER_DATE": "2026-03-15T10:00:00+00:00"})  # fmt: skip
    home = Home.at(tmp_path / "home")
    ingest(root, home, progress=False)
    found = disproven(home, root, "postgres")
    given_up = [item for item in found["evidence"]["decisions"] if item["id"] in found["disproven"]]
    assert [item["retired"]["date"][:10] for item in given_up] == ["2026-03-15"]
    commits = why(home, root, APP)["evidence"]["commits"]
    moved = next(item for item in commits if item["subject"] == "Move to SQLite")
    assert moved["date"][:10] == "2026-03-15" and moved["authored"][:10] == "2026-02-01"
