"""The decision timeline both decision pages draw: dated decisions as Graphviz DOT, one row per date.

The Decisions page (a git repository's records) and the Supersession queue (the vault's records) show the same
picture, a date axis from top to bottom with each date's decisions side by side, and differ only in which arrows
they draw between them and how statuses are coloured. So each page turns its rows into ``TimelineNode`` and
``TimelineArrow`` values and this module writes the DOT, and the two timelines cannot drift apart in layout.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SUPERSEDED_STYLE = 'color="#16a34a", penwidth=2, label="superseded by", fontcolor="#16a34a"'
TITLE_WIDTH = 28


@dataclass(frozen=True)
class TimelineNode:
    """One dated decision: its DOT id, its ISO date, what its box says, and whether its border is flagged."""

    key: str
    date: str
    title: str
    path: str
    status: str | None
    tooltip: str
    flagged: bool = False


@dataclass(frozen=True)
class TimelineArrow:
    """A line from ``tail`` to ``head`` drawn with the DOT attributes ``style``; it does not move the rows."""

    tail: str
    head: str
    style: str


def timeline_dot(
    nodes: Sequence[TimelineNode], arrows: Sequence[TimelineArrow], colours: Mapping[str, str]
) -> str:
    """The top-to-bottom DOT timeline of ``nodes``, in their order within a date. A node is filled with the
    colour of the first word of ``colours`` its lower-cased status contains (white for none); an arrow is drawn
    only when both its ends are nodes, so a caller may pass arrows to decisions it left out."""
    dates = sorted({node.date for node in nodes})
    lines = [
        "digraph timeline {",
        '  rankdir=TB; nodesep=0.3; ranksep=0.3; bgcolor="transparent";',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, color="#9ca3af"];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    for date in dates:
        axis_label = f'label={quote(date)}, shape=plaintext, style="", fontcolor="#6b7280"'
        lines.append(f'  {quote("date:" + date)} [{axis_label}];')
    for earlier, later in itertools.pairwise(dates):
        lines.append(f'  {quote("date:" + earlier)} -> {quote("date:" + later)} [color="#d1d5db", arrowhead=none, '
                     "weight=10];")
    for node in nodes:
        status = (node.status or "").lower()
        fill = next((colour for word, colour in colours.items() if word in status), "#ffffff")
        label = f"{textwrap.fill(node.title, TITLE_WIDTH)}\n{node.path.rsplit('/', 1)[-1]}"
        label += f" · {status}" if status else ""
        border = ', color="#ea580c", penwidth=2' if node.flagged else ""
        lines.append(f"  {quote(node.key)} [label={quote(label)}, fillcolor={quote(fill)}, "
                     f"tooltip={quote(node.tooltip)}{border}];")
    for date in dates:
        members = " ".join(quote(node.key) for node in nodes if node.date == date)
        lines.append(f"  {{ rank=same; {quote('date:' + date)} {members} }}")
    shown = {node.key for node in nodes}
    for arrow in arrows:
        if arrow.tail in shown and arrow.head in shown:
            lines.append(f"  {quote(arrow.tail)} -> {quote(arrow.head)} [{arrow.style}, constraint=false];")
    lines.append("}")
    return "\n".join(lines)


def quote(text: str) -> str:
    """``text`` as a DOT quoted string: backslashes and quotes escaped, newlines as DOT's ``\\n``."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
