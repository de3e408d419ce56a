"""The dashboard's review pages (merge queue, supersession queue, provenance explorer), run by Streamlit's AppTest
on a real built home of the example vault: verdicts clicked on a page land in the real decisions SQLite file, and
the catalog is never written."""

from __future__ import annotations

import getpass
import hashlib
import html
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from assets.partitions import BUCKET_COUNT
from dashboards.screenshots import find_chromium, streamlit_server
from dashboards.stores import OPERATOR_KEY, neighbourhood
from engramrag.decisions.store import MERGE, SUPERSESSION, DecisionsStore
from engramrag.extract.textutil import normalise_label
from engramrag.lifecycle.resolution import refresh_overlay
from engramrag.resolve.queue import merge_queue
from engramrag.revise.queue import supersession_queue
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from pipelines.build import run_build
from tests.conftest import build_environment

REPOSITORY = Path(__file__).resolve().parents[1]
APP = REPOSITORY / "dashboards" / "app.py"
EXAMPLE_VAULT = REPOSITORY / "examples" / "vault"
MERGES, SUPERSESSIONS, PROVENANCE = "views/merges.py", "views/supersessions.py", "views/provenance.py"
REVIEWER = "Test Reviewer"


SAME_DAY_ADR = """---
title: 6. Dagster orchestration schedules
author: Daniel Choi
date: 2026-03-04
---

# 6. Dagster orchestration schedules

Date: 2026-03-04

## Status

Accepted

## Decision

The pipelines of [[falcon|Project Falcon]] run on Dagster schedules: a daily full pass at 02:00.
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    """The example vault plus one ADR decided on the same day as a DECISIONS.md entry about the same thing, so the
    supersession queue holds a same-day pair."""
    root = tmp_path_factory.mktemp("review")
    vault = root / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    (vault / "adr" / "0006-dagster-orchestration-schedules.md").write_text(SAME_DAY_ADR, encoding="utf-8")
    with build_environment():
        home = Home.at(root / "home")
        assert run_build(home, vault).success
        yield home


@pytest.fixture
def home(built: Home) -> Iterator[Home]:
    """The built home with an empty decisions store for each test (verdicts of one test must not leak)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{built.decisions_path}{suffix}").unlink(missing_ok=True)
    yield built


def open_page(monkeypatch: pytest.MonkeyPatch, home_dir: Path, script: str, operator: str | None = REVIEWER) -> AppTest:
    monkeypatch.setenv("ENGRAM_HOME", str(home_dir))
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.switch_page(script)
    app.run()
    if operator is not None and app.sidebar.text_input(key=OPERATOR_KEY) is not None:
        app.sidebar.text_input(key=OPERATOR_KEY).set_value(operator).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def button_keys(app: AppTest) -> list[str]:
    return [button.key for button in app.button]


def catalog_digest(home: Home) -> str:
    return hashlib.sha256(home.catalog_path.read_bytes()).hexdigest()


def sql(home: Home, query: str, parameters: list | None = None) -> list[tuple]:
    with home.reading():
        connection = duckdb.connect(str(home.catalog_path), read_only=True)
        try:
            return connection.execute(query, parameters or []).fetchall()
        finally:
            connection.close()


def test_merge_page_records_a_verdict_and_undoes_it(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    queue = merge_queue(home, show="person")
    assert len(queue) > 0, "the build should have computed merge candidates"
    left, right = queue.loc[0, "left_key"], queue.loc[0, "right_key"]
    before = catalog_digest(home)
    app = open_page(monkeypatch, home.root, MERGES)
    assert [title.value for title in app.title] == ["Merge queue"]
    assert f"merge:same:{left}|{right}" in button_keys(app)  # what needs a person most is on the first page
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Pending pairs"] == str(len(merge_queue(home)))

    app.button(key=f"merge:same:{left}|{right}").click().run()
    assert not app.exception
    store = DecisionsStore.for_home(home)
    verdict = store.current_for(MERGE, left, right)
    assert verdict is not None and verdict.verdict == "same" and verdict.operator == REVIEWER
    assert verdict.context["labels"] == {left: queue.loc[0, "left_label"], right: queue.loc[0, "right_label"]}
    assert any("next build" in success.value for success in app.success)
    assert any("next build" in toast.value for toast in app.toast)
    assert f"merge:same:{left}|{right}" not in button_keys(app)  # decided pairs leave the queue
    assert f"undo-merge:{verdict.id}" in button_keys(app)

    app.button(key=f"undo-merge:{verdict.id}").click().run()
    assert store.current_for(MERGE, left, right) is None
    assert f"merge:same:{left}|{right}" in button_keys(app)  # back in the queue

    app.button(key=f"merge:distinct:{left}|{right}").click().run()
    assert store.current_for(MERGE, left, right).verdict == "distinct"
    second = store.current_for(MERGE, left, right)
    app.button(key=f"undo-merge:{second.id}").click().run()
    assert store.current_for(MERGE, left, right) is None
    history = store.history(MERGE, left, right)
    assert [(row.verdict, row.undone_by) for row in history] == [("same", REVIEWER), ("distinct", REVIEWER)]
    assert catalog_digest(home) == before  # the dashboard never writes the catalog


def test_merge_page_filters_and_flags_automatic_merges(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    queue = merge_queue(home)
    app = open_page(monkeypatch, home.root, MERGES)
    automatic = queue[queue["auto_merge"]]
    assert len(automatic) > 0
    # The default view is what needs a person: no automatic merge, most uncertain × most documents first.
    shown = [key.removeprefix("merge:same:") for key in button_keys(app) if key.startswith("merge:same:")]
    person = merge_queue(home, show="person")
    assert shown == [f"{a}|{b}" for a, b in zip(person["left_key"], person["right_key"], strict=True)][: len(shown)]
    assert not any("merged automatically unless you object" in markdown.value for markdown in app.markdown)
    assert list(person["priority"]) == sorted(person["priority"], reverse=True)

    app.segmented_control(key="merge_show").set_value("All pending").run()
    cards = [key for key in button_keys(app) if key.startswith("merge:same:")]
    assert 0 < len(cards) <= 10
    flagged = sum("merged automatically unless you object" in markdown.value for markdown in app.markdown)
    assert flagged == int(queue["auto_merge"].head(len(cards)).sum())  # st.badge is a Markdown directive

    app.segmented_control(key="merge_show").set_value("Merged automatically").run()
    shown = {key.removeprefix("merge:same:") for key in button_keys(app) if key.startswith("merge:same:")}
    auto_pairs = {f"{a}|{b}" for a, b in zip(automatic["left_key"], automatic["right_key"], strict=True)}
    assert shown and shown <= auto_pairs

    needle = queue.loc[0, "right_label"]
    app.segmented_control(key="merge_show").set_value("All pending").run()
    app.text_input(key="merge_filter").set_value(needle.upper()).run()
    shown = [key.removeprefix("merge:same:") for key in button_keys(app) if key.startswith("merge:same:")]
    assert f"{queue.loc[0, 'left_key']}|{queue.loc[0, 'right_key']}" in shown
    labels = queue.set_index(queue["left_key"] + "|" + queue["right_key"])
    for pair in shown:
        row = labels.loc[pair]
        text = f"{row['left_label']} {row['right_label']} {pair}".casefold()
        assert needle.casefold() in text

    app.text_input(key="merge_filter").set_value("no label looks like this zzzq").run()
    assert any("No pending pair matches" in info.value for info in app.info)


def test_merge_page_evidence_side_by_side_and_blocked_joins(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    # A person's distinct between two members of an automatic cluster of three or more: the overlay must refuse
    # at least one join (through the third member) and list it.
    rows = sql(home, "SELECT entity_key, cluster_key FROM entity_clusters")
    clusters = pd.DataFrame(rows, columns=["key", "cluster"])
    sizes = clusters["cluster"].value_counts()
    members = sorted(clusters[clusters["cluster"] == sizes.index[0]]["key"])
    assert len(members) >= 3
    store = DecisionsStore.for_home(home)
    store.decide(MERGE, members[0], members[-1], "distinct", REVIEWER)
    refresh_overlay(home, VaultConfig(bucket_count=BUCKET_COUNT))
    try:
        check_evidence_and_blocked_joins(home, monkeypatch)
    finally:
        store.undo(MERGE, members[0], members[-1], REVIEWER)
        refresh_overlay(home, VaultConfig(bucket_count=BUCKET_COUNT))


def check_evidence_and_blocked_joins(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    queue = merge_queue(home, show="person")  # the page opens on what needs a person
    app = open_page(monkeypatch, home.root, MERGES)
    first = queue.iloc[0]
    evidence = [element.value for element in app.get("html")][:2]  # the first card's two sides
    for side, block in zip(("left", "right"), evidence, strict=True):
        items = first[f"{side}_evidence"]
        assert items, "every candidate of the example vault has evidence on both sides"
        assert html.escape(f"{items[0]['path']}:{items[0]['line']}") in block
        marked = re.findall(r"<mark[^>]*>(.*?)</mark>", block)
        assert marked, "the label (or its key) is highlighted in the evidence"
        assert {html.unescape(text).casefold() for text in marked} <= {
            first[f"{side}_label"].casefold(), first[f"{side}_key"].casefold()
        }
    blocked = sql(home, "SELECT count(*) FROM resolution_blocked")[0][0]
    assert blocked > 0, "the overlay refused no join despite a distinct inside an automatic cluster"
    expanders = [expander.label for expander in app.expander]
    assert f"Blocked merges and conflicts ({blocked})" in expanders
    table = app.expander[expanders.index(f"Blocked merges and conflicts ({blocked})")].dataframe[0].value
    assert len(table) == blocked and set(table["cause"]) <= {"distinct", "kinds"}


def test_verdict_buttons_need_a_name(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_OPERATOR", raising=False)
    app = open_page(monkeypatch, home.root, MERGES, operator=None)
    assert app.sidebar.text_input(key=OPERATOR_KEY).value == getpass.getuser()
    monkeypatch.setenv("ENGRAM_OPERATOR", "Sarah Lee")
    assert open_page(monkeypatch, home.root, MERGES, operator=None).sidebar.text_input(key=OPERATOR_KEY).value == (
        "Sarah Lee"
    )
    app.sidebar.text_input(key=OPERATOR_KEY).set_value("   ").run()
    assert any("Type your name" in warning.value for warning in app.warning)
    verdict_buttons = [button for button in app.button if button.key.startswith("merge:")]
    assert verdict_buttons and all(button.disabled for button in verdict_buttons)

    app.sidebar.text_input(key=OPERATOR_KEY).set_value("Kim").run()
    app.switch_page(PROVENANCE).run()  # a page without the name box
    app.switch_page(SUPERSESSIONS).run()
    assert app.sidebar.text_input(key=OPERATOR_KEY).value == "Kim"  # typed once, kept across pages


def test_supersession_page_accepts_a_proposal(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    proposals = supersession_queue(home)
    assert len(proposals) > 0, "the build should have proposed supersessions"
    earlier, later = proposals.loc[0, "earlier_key"], proposals.loc[0, "later_key"]
    app = open_page(monkeypatch, home.root, SUPERSESSIONS)
    assert [title.value for title in app.title] == ["Supersession queue"]
    codes = [code.value for code in app.code]
    assert proposals.loc[0, "earlier_quote"] in codes and proposals.loc[0, "later_quote"] in codes
    timeline = app.get("graphviz_chart")[0].proto.spec
    assert f'"{earlier}" -> "{later}"' in timeline and "style=dashed" in timeline

    app.button(key=f"supersession:accept:{earlier}|{later}").click().run()
    assert not app.exception
    store = DecisionsStore.for_home(home)
    verdict = store.current_for(SUPERSESSION, earlier, later)
    assert verdict is not None and verdict.verdict == "accept" and verdict.operator == REVIEWER
    assert (verdict.left_key, verdict.right_key) == (earlier, later)  # (earlier, later), never reordered
    assert any("next build" in success.value for success in app.success)
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Accepted"] == "1" and metrics["Pending proposals"] == str(len(proposals) - 1)
    assert f"supersession:accept:{earlier}|{later}" not in button_keys(app)
    accepted_edge = next(line for line in app.get("graphviz_chart")[0].proto.spec.splitlines()
                         if f'"{earlier}" -> "{later}"' in line)
    assert "#16a34a" in accepted_edge and "dashed" not in accepted_edge

    app.button(key=f"undo-supersession:{verdict.id}").click().run()
    assert store.current_for(SUPERSESSION, earlier, later) is None
    assert [row.undone_by for row in store.history(SUPERSESSION, earlier, later)] == [REVIEWER]


def test_same_day_proposals_are_flagged(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    proposals = supersession_queue(home)
    same_day = proposals[proposals["same_day"]]
    assert list(same_day["later_title"]) == ["Dagster orchestration schedules"]
    app = open_page(monkeypatch, home.root, SUPERSESSIONS)
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Same-day pending"] == "1"
    flags = [markdown.value for markdown in app.markdown if "same day: which came later is not known" in markdown.value]
    assert len(flags) == 1
    timeline = app.get("graphviz_chart")[0].proto.spec
    row = next(line for line in timeline.splitlines() if line.strip().startswith('{ rank=same; "date:2026-03-04"'))
    assert same_day.iloc[0]["earlier_key"] in row and same_day.iloc[0]["later_key"] in row  # one row, one date


def test_provenance_page_shows_statements_lines_and_neighbourhood(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc_id, text = sql(home, "SELECT doc_id, text FROM documents WHERE path = 'DECISIONS.md'")[0]
    count = sql(home, "SELECT count(*) FROM statements WHERE doc_id = ?", [doc_id])[0][0]
    app = open_page(monkeypatch, home.root, PROVENANCE, operator=None)
    assert [title.value for title in app.title] == ["Provenance explorer"]
    app.selectbox(key="provenance_doc").set_value(doc_id).run()
    assert not app.exception
    statements = app.dataframe[0].value
    assert len(statements) == count > 0
    assert set(statements.columns) == {"relation", "subject", "object", "role", "extractor", "lines"}
    assert statements["extractor"].str.startswith("rules/").all()
    assert any("**Extractor** `rules`" in markdown.value for markdown in app.markdown)

    statement_id, start, end, line = sql(
        home, "SELECT statement_id, char_start, char_end, line_start FROM statements WHERE doc_id = ? AND role = "
        "'assertion' AND char_start IS NOT NULL AND line_start = line_end ORDER BY line_start DESC LIMIT 1", [doc_id],
    )[0]
    app.selectbox(key="provenance_statement").set_value(statement_id).run()
    source = app.get("html")[0].value
    assert f">{html.escape(text[start:end])}</mark>" in source
    assert f">{line}</span>" in source

    entities = app.dataframe[1].value
    clustered = entities[entities["cluster_key"] != ""]
    assert len(clustered) > 0
    clusters = dict(sql(home, "SELECT entity_key, cluster_key FROM entity_clusters"))
    for label, cluster_key in zip(clustered["label"], clustered["cluster_key"], strict=True):
        assert clusters[normalise_label(label)] == cluster_key

    graph = app.get("graphviz_chart")
    assert len(graph) == 1
    dot = graph[0].proto.spec
    assert dot.startswith("digraph neighbourhood") and "layout=twopi" in dot
    assert 1 < dot.count("fillcolor=") <= 25  # the centre and at most 24 neighbours


def test_neighbourhood_keeps_asserted_neighbours_first_within_the_limit() -> None:
    mentions = pd.DataFrame(
        [("a", "Alpha", "Project"), ("a", "alpha", "Concept"), ("b", "Beta", "Person"), ("c", "Gamma", "Concept"),
         ("d", "Delta", "Place"), ("e", "Eps", "Concept")],
        columns=["node_key", "label", "kind"],
    )
    relations = pd.DataFrame(
        [("a", "b", "leads", "assertion"), ("c", "a", "same sentence", "analysis"),
         ("c", "a", "same sentence", "analysis"), ("a", "d", "located in", "assertion"),
         ("e", "a", "same sentence", "analysis"), ("b", "d", "lives in", "assertion"), ("a", "a", "self", "assertion")],
        columns=["subject_node", "object_node", "relation", "role"],
    )
    around = neighbourhood(mentions, relations, "a", limit=4)
    assert set(around.nodes) == {"a", "b", "d", "c"}  # asserted b and d first, then c (two statements) over e
    assert around.left_out == 1
    assert around.nodes["a"] == ("Alpha", "Project")
    assert sorted(around.edges) == [
        ("a", "b", "leads", 1, False), ("a", "d", "located in", 1, False), ("c", "a", "same sentence", 2, True)
    ]  # no edge between neighbours (b-d), no self loop


def test_review_pages_on_a_home_never_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "not-built"
    for script in (MERGES, SUPERSESSIONS, PROVENANCE):
        app = open_page(monkeypatch, missing, script, operator=None)
        assert len(app.info) == 1 and f"engram build --vault VAULT --home {missing}" in app.info[0].value
        assert not [key for key in button_keys(app) if ":" in key]
    assert not missing.exists()


def test_pages_draw_in_a_real_browser(home: Home, tmp_path: Path) -> None:
    """AppTest does not render: a DOT string Graphviz cannot parse or HTML the browser drops only shows here."""
    pytest.importorskip("playwright", reason="needs: pip install playwright")
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("needs a Chromium: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with streamlit_server(home.root, tmp_path / "streamlit.log", timeout_s=60) as url, sync_playwright() as play:
        browser = play.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            drawn = {}
            for path, selector in (("merges", "mark"), ("supersessions", "[data-testid='stGraphVizChart'] svg g.node"),
                                   ("provenance", "[data-testid='stGraphVizChart'] svg g.node")):
                page.goto(f"{url}/{path}", wait_until="domcontentloaded")
                page.wait_for_selector(selector, timeout=60_000)
                assert page.locator("[data-testid='stException']").count() == 0, path
                drawn[path] = page.locator(selector).count()
        finally:
            browser.close()
    assert drawn["merges"] >= 2  # both sides' evidence of the first card at least
    decisions = sql(home, "SELECT count(*) FROM decisions WHERE decided_on IS NOT NULL")[0][0]
    dates = sql(home, "SELECT count(DISTINCT decided_on) FROM decisions WHERE decided_on IS NOT NULL")[0][0]
    assert drawn["supersessions"] == decisions + dates  # one node per dated decision and per date on the axis
    assert 2 <= drawn["provenance"] <= 25
