"""The decision timeline both decision pages draw (dashboards/timeline.py), and how the supersession page names a
decision whose quote the extractor could not locate."""

from __future__ import annotations

import re

from dashboards.locations import lines_caption, where
from dashboards.timeline import SUPERSEDED_STYLE, TimelineArrow, TimelineNode, quote, timeline_dot

COLOURS = {"accepted": "#dcfce7", "superseded": "#e5e7eb"}


def node(key: str, date: str, title: str, status: str | None = None, flagged: bool = False) -> TimelineNode:
    return TimelineNode(key, date, title, f"decisions/{key}.md", status, f"{date} {title}", flagged)


def test_one_rank_per_date_and_arrows_only_between_drawn_decisions() -> None:
    nodes = [node("a", "2026-01-02", "Use DuckDB", "Accepted"), node("b", "2026-01-02", "Use LanceDB"),
             node("c", "2026-03-01", 'Drop the "old" store\\v1', "Superseded", flagged=True)]
    arrows = [TimelineArrow("a", "c", SUPERSEDED_STYLE), TimelineArrow("a", "missing", SUPERSEDED_STYLE)]
    dot = timeline_dot(nodes, arrows, COLOURS)

    assert dot.startswith("digraph timeline {") and dot.endswith("}")
    ranks = re.findall(r"\{ rank=same; (.*) \}", dot)
    assert ranks == ['"date:2026-01-02" "a" "b"', '"date:2026-03-01" "c"']
    assert '"date:2026-01-02" -> "date:2026-03-01"' in dot  # the date axis, earlier above later
    assert '"a" -> "c" [' in dot and "missing" not in dot
    assert dot.count("->") == 2
    assert 'fillcolor="#dcfce7"' in dot.split('"a" [', 1)[1].split("\n", 1)[0]
    assert 'fillcolor="#ffffff"' in dot.split('"b" [', 1)[1].split("\n", 1)[0]  # no status: white
    flagged = dot.split('"c" [', 1)[1].split("\n", 1)[0]
    assert 'fillcolor="#e5e7eb"' in flagged and 'color="#ea580c"' in flagged
    assert quote('Drop the "old" store\\v1')[1:-1] in flagged  # quotes and backslashes cannot end the string


def test_quote_escapes_what_would_break_a_dot_string() -> None:
    assert quote('a "b"\\c\nd') == '"a \\"b\\"\\\\c\\nd"'


def test_an_unlocated_decision_is_named_by_its_path_alone() -> None:
    assert where("notes/adr.md", 12.0) == "notes/adr.md:12"
    assert where("notes/adr.md", float("nan")) == "notes/adr.md"
    assert where("notes/adr.md", None) == "notes/adr.md"
    assert lines_caption("notes/adr.md", 3, 5) == "`notes/adr.md` lines 3–5"
    unlocated = lines_caption("notes/adr.md", float("nan"), float("nan"))
    assert "None" not in unlocated and "nan" not in unlocated and "not found" in unlocated
