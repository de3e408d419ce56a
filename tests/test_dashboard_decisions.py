"""The Decisions page, run by Streamlit's AppTest on a home where the fixture git repository was really ingested:
the timeline, the table of records at HEAD, and one commit's diff beside the decisions it touches. The page must
write nothing, so the store file is compared before and after."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engramrag.gitgraph.ingest import ingest
from engramrag.gitgraph.store import gitgraph_path
from engramrag.store import Home
from tests.gitrepo import ADR_2, ADR_4, FixtureRepo, build_fixture_repo, commit, git

APP = Path(__file__).resolve().parents[1] / "dashboards" / "app.py"
PAGE = "views/decisions.py"
DIFF_LINES = 400  # the page's cut; importing the page module would run it outside a page
ADR_2_ID = f"{ADR_2}#use sqlite for the catalog"
ADR_4_ID = f"{ADR_4}#move the catalog to postgres"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Home, FixtureRepo]]:
    root = tmp_path_factory.mktemp("decisions_page")
    repo = build_fixture_repo(root / "repo")
    home = Home.at(root / "home")
    ingest(repo.root, home, progress=False)
    yield home, repo


def open_page(monkeypatch: pytest.MonkeyPatch, home_dir: Path) -> AppTest:
    monkeypatch.setenv("ENGRAM_HOME", str(home_dir))
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.switch_page(PAGE)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_timeline_table_and_a_commit_with_its_governing_decision(
    ingested: tuple[Home, FixtureRepo], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, repo = ingested
    before = digest(gitgraph_path(home))
    app = open_page(monkeypatch, home.root)

    charts = app.get("graphviz_chart")
    assert len(charts) == 1
    dot = charts[0].proto.spec
    edge = next(line for line in dot.splitlines() if "superseded by" in line)
    assert edge.strip().startswith(f'"{ADR_2_ID}" -> "{ADR_4_ID}"')
    conflicts = [line for line in dot.splitlines() if "same day" in line and "->" in line]
    assert len(conflicts) == 1 and conflicts[0].count("DECISIONS.md#cache search results") == 2

    table = app.dataframe[0].value
    assert len(table) == 8
    sqlite = table[table["title"] == "Use SQLite for the catalog"].iloc[0]
    assert sqlite["status"] == "superseded" and not sqlite["holds"]
    assert sqlite["where"] == f"{ADR_2}:1-19" and sqlite["date"] == "2024-02-01"
    postgres = table[table["title"] == "Move the catalog to Postgres"].iloc[0]
    assert postgres["holds"] and postgres["date"] == "2024-03-10"
    assert int(table["same day conflict"].sum()) == 2

    picker = app.selectbox(key="decisions_commit")
    assert picker.options[0].startswith(repo.head[:10]) and "BM25-only search is obsolete" in picker.options[0]
    picker.set_value(repo.adr2).run()
    assert not app.exception, [e.value for e in app.exception]
    diff = next(code.value for code in app.code if code.language == "diff")
    assert diff.startswith(f"commit {repo.adr2}")
    assert "src/catalog.py" in diff and "+import sqlite3" in diff and "Keep the catalog in SQLite" in diff
    governed = [block for block in app.caption if "governs `src/catalog.py`" in block.value]
    assert any(block.value.startswith(f"`{ADR_2}` lines 1-19") for block in governed)
    quotes = [code.value for code in app.code if code.language == "markdown"]
    assert any(text.startswith("# 2. Use SQLite for the catalog") and "We will keep the catalog in SQLite." in text
               for text in quotes)
    assert any("Use SQLite for the catalog" in block.value and "no longer holds" in block.value
               for block in app.markdown)
    assert digest(gitgraph_path(home)) == before


def test_a_long_diff_is_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "big"
    root.mkdir()
    git(root, "init", "-q")
    sha = commit(root, "alice", "2024-05-01T10:00:00+00:00", "Add a long table",
                 {"table.txt": "".join(f"row {index}\n" for index in range(1000))})
    home = Home.at(tmp_path / "home")
    ingest(root, home, progress=False)
    app = open_page(monkeypatch, home.root)
    assert app.selectbox(key="decisions_commit").value == sha
    diff = next(code.value for code in app.code if code.language == "diff").splitlines()
    assert len(diff) == DIFF_LINES + 1
    assert diff[0] == f"commit {sha}" and "+row 0" in diff
    assert diff[-1].startswith("… cut: ") and diff[-1].endswith(f"more lines (git show {sha[:12]})")
    assert "+row 999" not in diff


def test_a_home_without_an_ingested_repository_shows_the_ingest_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home_dir = tmp_path / "home"
    home_dir.mkdir()
    app = open_page(monkeypatch, home_dir)
    messages = [block.value for block in app.info]
    assert any(f"engram git ingest REPO --home {home_dir.resolve()}" in message for message in messages)
    assert not app.get("graphviz_chart") and not app.dataframe
    assert list(home_dir.iterdir()) == []
