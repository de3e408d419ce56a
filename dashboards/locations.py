"""How a page names where a decision or statement sits in its note: ``path:line``, or the path alone when the
extractor kept the item without a span because its quote was not found verbatim (the catalog's line columns are
then NULL, which pandas reads as NaN)."""

from __future__ import annotations

import pandas as pd


def located(line: object) -> bool:
    return line is not None and not pd.isna(line)


def where(path: str, line_start: object) -> str:
    """``path:line``, or just the path for an item without a located quote."""
    return f"{path}:{int(line_start)}" if located(line_start) else path


def lines_caption(path: str, line_start: object, line_end: object) -> str:
    """The Markdown caption under a quoted decision: its note and lines, or why no lines are shown."""
    if not located(line_start):
        return f"`{path}` (the quote was not found in the text, so no lines are known)"
    return f"`{path}` lines {int(line_start)}–{int(line_end) if located(line_end) else int(line_start)}"
