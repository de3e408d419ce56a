"""The temporal reading of a question: does it ask for the current state, the state as of a date, or neither?

English and Korean cues. ``current``: "now", "currently", "still", "these days", "at the moment", "latest",
지금, 현재, 요즘, 아직, 최근. ``as_of``: an explicit date or period ("as of 2024-03-31", "in March 2024",
"back in 2023", "2024년 3월에는", "2024-03"), read as the last day of that period. A date wins over a
current-state cue ("Who owned it in March 2024, and does she still?" asks about March 2024 first), unless the date
is the value the question checks ("Is the deadline still 2024-05-31?"). A question about what replaced something
("What replaced ADR-7?", "Who took over billing?", "D-3을 대체한 결정은?") reads as current: it asks for the state
after the change.

The retriever puts the notes dated up to an as_of date first, and places replaced notes below their successors
(``retrieve.replacements``).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import asdict, dataclass
from datetime import date
from typing import Any, Literal

Intent = Literal["current", "as_of", "none"]

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
            ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
            ("november", "nov"), ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}  # fmt: skip
_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))

CURRENT_CUES_EN = re.compile(
    r"\b(now|right now|currently|current|still|these days|nowadays|at the moment|at present|presently|today|"
    r"latest|as it stands|as things stand|at this point|any ?more|any longer|most recent|up to date|going forward)\b",
    re.IGNORECASE,
)
# "What replaced ADR-7?", "Who took over billing from MJ?", "D-3을 대체한 결정은?": the question asks for the state
# after a change, read like a current-state question (the successor above what it replaced).
REPLACEMENT_CUES_EN = re.compile(
    r"\b(replaced|replaces|replacement|instead of|took over|takes over|taken over|successor|succeeded|superseded|"
    r"supersedes|came after|moved to|changed to|switched to)\b",
    re.IGNORECASE,
)
REPLACEMENT_CUES_KO = ("다음으로", "다음에", "대신", "대체", "후임", "이어받", "넘겨받", "바뀌", "바꾼", "변경")
CURRENT_CUES_KO = ("지금", "현재", "요즘", "아직", "최근", "이제", "오늘날")

ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
ISO_MONTH = re.compile(r"\b(\d{4})-(\d{2})\b(?!-)")
MONTH_YEAR = re.compile(rf"\b({_MONTH_NAMES})\.?\s+(?:of\s+)?(\d{{4}})\b", re.IGNORECASE)
YEAR_MONTH_KO = re.compile(r"(\d{4})\s*년\s*(\d{1,2})\s*월")
YEAR_KO = re.compile(r"(\d{4})\s*년")
YEAR_EN = re.compile(r"\b(?:in|as of|back in|during|by|until|before|end of)\s+(\d{4})\b", re.IGNORECASE)


@dataclass(frozen=True)
class TemporalReading:
    intent: Intent
    as_of: str | None = None  # ISO date, the last day of the period asked about
    cue: str | None = None  # the words of the question that decided it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_temporal(question: str) -> TemporalReading:
    """The question's temporal intent, the date it asks about, and the cue that says so."""
    found = _as_of(question)
    current = CURRENT_CUES_EN.search(question) or any(cue in question for cue in CURRENT_CUES_KO)
    if found is not None and not (current and not _asks_about_a_time(question, found.cue or "")):
        return found
    english = CURRENT_CUES_EN.search(question)
    if english:
        return TemporalReading("current", cue=english.group(0))
    for cue in CURRENT_CUES_KO:
        if cue in question:
            return TemporalReading("current", cue=cue)
    if replacement := REPLACEMENT_CUES_EN.search(question):
        return TemporalReading("current", cue=replacement.group(0))
    for cue in REPLACEMENT_CUES_KO:
        if cue in question:
            return TemporalReading("current", cue=cue)
    return TemporalReading("none")


TIME_BEFORE = re.compile(r"\b(?:in|on|as of|at|by|back in|during|before|until|since|end of|around)\s*$", re.IGNORECASE)
TIME_AFTER_KO = ("에", "때", "당시", "기준", "까지", "이전", "전에")


def _asks_about_a_time(question: str, cue: str) -> bool:
    """Whether the date in the question says when ("in March 2024", "2024년 3월에는") rather than being a value
    the question checks ("Is the deadline still 2024-05-31?" asks about now)."""
    at = question.find(cue)
    if at < 0:
        return True
    after = question[at + len(cue):].lstrip()
    return bool(TIME_BEFORE.search(question[:at])) or after.startswith(TIME_AFTER_KO) or "년" in cue


def without_current_cues(question: str) -> str:
    """The question without its current-state cue words, for ranking: "now" or "지금" says when, not what, and
    matched as a word it only favours notes that happen to say "now"."""
    text = CURRENT_CUES_EN.sub(" ", question)
    for cue in CURRENT_CUES_KO:
        text = text.replace(cue, " ")
    return " ".join(text.split()) or question


def _as_of(question: str) -> TemporalReading | None:
    if match := ISO_DAY.search(question):
        year, month, day = (int(part) for part in match.groups())
        if _valid(year, month, day):
            return TemporalReading("as_of", date(year, month, day).isoformat(), match.group(0))
    if match := YEAR_MONTH_KO.search(question):
        return _month_end(int(match.group(1)), int(match.group(2)), match.group(0))
    if match := MONTH_YEAR.search(question):
        return _month_end(int(match.group(2)), MONTHS[match.group(1).lower()], match.group(0))
    if match := ISO_MONTH.search(question):
        return _month_end(int(match.group(1)), int(match.group(2)), match.group(0))
    if match := YEAR_KO.search(question):
        return TemporalReading("as_of", date(int(match.group(1)), 12, 31).isoformat(), match.group(0))
    if match := YEAR_EN.search(question):
        return TemporalReading("as_of", date(int(match.group(1)), 12, 31).isoformat(), match.group(0))
    return None


def _month_end(year: int, month: int, cue: str) -> TemporalReading | None:
    if not 1 <= month <= 12 or not 1900 <= year <= 2999:
        return None
    last = calendar.monthrange(year, month)[1]
    return TemporalReading("as_of", date(year, month, last).isoformat(), cue)


def _valid(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True
