"""Quantities: ISO and Korean dates, money, percentages and numbers with units (``120 ms``, ``₩5,000,000``,
``$12k``, ``2 GiB``, ``3주``)."""

from __future__ import annotations

import re

_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_ISO_DATE = r"(?P<iso>(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2}))(?!\d)"
_KOREAN_DATE = r"\d{4}년[ \t]?\d{1,2}월(?:[ \t]?\d{1,2}일)?|\d{1,2}월[ \t]?\d{1,2}일"
_CURRENCY_BEFORE = (
    rf"(?:[₩$€£¥]|(?:KRW|USD|EUR|JPY)[ \t])[ \t]?{_NUMBER}(?:[ \t]?(?:[kKmMbB](?![A-Za-z])|만|억|천|조))?"
)
_CURRENCY_AFTER = (
    rf"{_NUMBER}[ \t]?(?:만[ \t]?원|억[ \t]?원|천[ \t]?원|원|달러|USD|KRW|EUR|JPY|dollars?|won)(?![A-Za-z])"
)
_PERCENT = rf"{_NUMBER}[ \t]?%"
_UNIT_WORDS = (
    r"ms|msec|sec|secs|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?|months?|years?|[KMGTP]i?B|[kmgt]b|"
    r"tokens?|req/s|rps|qps|QPS|RPS|fps|px|cm|mm|km|kg|Hz|kHz|MHz|GHz|users?|people|documents?|docs|files?|"
    r"nodes?|edges?|rows?|items?|chunks?|steps?|times|queries|requests"
)
_UNIT = rf"{_NUMBER}[ \t]?(?:{_UNIT_WORDS})(?![A-Za-z0-9])|{_NUMBER}(?:[kKMBxsmhg]|×)(?![A-Za-z0-9])"
_KOREAN_UNIT = rf"{_NUMBER}[ \t]?(?:초|분|시간|일|주|개월|달|년|명|건|개|배|회|번|차|장|줄|쪽|페이지)"

QUANTITY = re.compile(
    rf"(?<![A-Za-z0-9_.\-/:]){_ISO_DATE}|(?<![A-Za-z0-9_.\-/:])(?:{_KOREAN_DATE}|{_PERCENT}|{_CURRENCY_AFTER}|"
    rf"{_UNIT}|{_KOREAN_UNIT})|{_CURRENCY_BEFORE}"
)


def find_quantities(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Quantity ranges in ``text[start:end]``; impossible ISO dates such as 2026-13-45 are skipped."""
    found = []
    for match in QUANTITY.finditer(text, start, len(text) if end is None else end):
        if match.group("iso") and not _valid_iso(match):
            continue
        found.append(match.span())
    return found


def is_quantity(label: str) -> bool:
    match = QUANTITY.fullmatch(label.strip())
    return bool(match) and (not match.group("iso") or _valid_iso(match))


def _valid_iso(match: re.Match[str]) -> bool:
    return 1 <= int(match.group("m")) <= 12 and 1 <= int(match.group("d")) <= 31
