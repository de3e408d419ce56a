"""A document's date and where it came from, in a fixed order of trust.

1. front matter: ``date``, then ``created``, then ``updated`` (what the author wrote);
2. a date in the file name (``2025-03-04-sync.md``, ``20250304-sync.md``), in the first heading, or in a
   ``Date:`` / ``날짜:`` field line near the top of the body (an ADR's ``Date: 2024-02-01``);
3. for a note in a git work tree, the date of the commit that first added it (given by the caller);
4. the file's modification time.

Each answer names its source (``front_matter:date``, ``file_name``, ``heading``, ``date_field``,
``git_first_commit``, ``mtime``), so a search result can say how sure its date is. The catalog stores it
(``documents.doc_date``, ``date_source``; ``lifecycle.sync``); this module is the one place the order lives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

FRONT_MATTER_KEYS = ("date", "created", "updated")
_DASHED = re.compile(r"(?<!\d)(\d{4})[-_.](\d{2})[-_.](\d{2})(?!\d)")
_COMPACT = re.compile(r"(?<!\d)(\d{4})(\d{2})(\d{2})(?!\d)")
# A field line "Date: 2024-02-01" among the first lines of the body (``- **Date**: ...``, ``날짜: ...``).
DATE_FIELD = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__)?(?:date|decided|created|날짜|일자|작성일|결정일)(?:\*\*|__)?[ \t]*[:：]"
    r"(?:\*\*|__)?[ \t]*(?P<value>[^\n]+)$",
    re.IGNORECASE | re.MULTILINE,
)
DATE_FIELD_LINES = 20
_MONTHS = {name: number for number, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec"),
), start=1) for name in names}  # fmt: skip
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_KOREAN = re.compile(r"(\d{4})\s*년\s*(\d{1,2})\s*월\s*(\d{1,2})\s*일")
# 27/04/2026, 27.04.2026: day first (most of the world's order); read month first only when the day-first
# reading is no date (04/27/2026).
_NUMERIC_DAY_FIRST = re.compile(r"(?<![\d/.])(\d{1,2})[/.](\d{1,2})[/.](\d{4})(?![\d/])")
# Every pattern writes the year as four digits in a row: a text without them holds no date (most lines a
# property is read from), and is not scanned six times.
_FOUR_DIGITS = re.compile(r"\d{4}")


@dataclass(frozen=True)
class DocumentDate:
    value: str  # ISO yyyy-mm-dd
    source: str


def find_date(text: str) -> str | None:
    """The first valid calendar date written in ``text`` (dashed, Korean 년 월 일, "4 March 2024",
    "March 4, 2024", 27/04/2026 or 27.04.2026, compact yyyymmdd)."""
    found = date_in(text)
    return found[0] if found else None


def date_in(text: str) -> tuple[str, int, int] | None:
    """``find_date``'s date with where it is written in ``text`` (start, end)."""
    if not _FOUR_DIGITS.search(text):
        return None
    for pattern in (_DASHED, _KOREAN, _DAY_MONTH_YEAR, _MONTH_DAY_YEAR, _NUMERIC_DAY_FIRST, _COMPACT):
        for match in pattern.finditer(text):
            for year, month, day in _readings(pattern, match.groups()):
                try:
                    return date(year, month, day).isoformat(), match.start(), match.end()
                except ValueError:
                    continue
    return None


def _readings(pattern: re.Pattern[str], parts: tuple[str, ...]) -> list[tuple[int, int, int]]:
    if pattern is _DAY_MONTH_YEAR:
        return [(int(parts[2]), _MONTHS[parts[1].casefold()], int(parts[0]))]
    if pattern is _MONTH_DAY_YEAR:
        return [(int(parts[2]), _MONTHS[parts[0].casefold()], int(parts[1]))]
    if pattern is _NUMERIC_DAY_FIRST:
        return [(int(parts[2]), int(parts[1]), int(parts[0])), (int(parts[2]), int(parts[0]), int(parts[1]))]
    year, month, day = (int(part) for part in parts)
    return [(year, month, day)]


def document_date(
    front_matter: dict[str, Any],
    path: str,
    first_heading: str | None,
    git_first_commit: datetime | None,
    mtime: float | None,
    body: str = "",
) -> DocumentDate | None:
    """The document's date by the order above; None only when nothing at all gives one."""
    for key in FRONT_MATTER_KEYS:
        value = front_matter.get(key)
        if isinstance(value, datetime):
            return DocumentDate(value.date().isoformat(), f"front_matter:{key}")
        if isinstance(value, date):
            return DocumentDate(value.isoformat(), f"front_matter:{key}")
        if isinstance(value, str) and (found := find_date(value)):
            return DocumentDate(found, f"front_matter:{key}")
    name = path.rsplit("/", 1)[-1]
    if found := find_date(name):
        return DocumentDate(found, "file_name")
    if first_heading and (found := find_date(first_heading)):
        return DocumentDate(found, "heading")
    top = "\n".join(body.lstrip("\n").split("\n")[:DATE_FIELD_LINES])
    for field_line in DATE_FIELD.finditer(top):
        if found := find_date(field_line.group("value")):
            return DocumentDate(found, "date_field")
    if git_first_commit is not None:
        return DocumentDate(git_first_commit.astimezone(UTC).date().isoformat(), "git_first_commit")
    if mtime is not None:
        return DocumentDate(datetime.fromtimestamp(mtime, UTC).date().isoformat(), "mtime")
    return None
