"""The fields of a decision record: status, date and supersession references, each with its exact range.

Ranges are ``(start, end)`` offsets into the document text; a reference is kept as written (a link target
such as ``0002-use-x.md``, ``ADR-0002``, or a dated title such as ``2026-05-02: Move the catalog``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from engramrag.vault.dates import date_in

FIELD_LINE = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?(?P<bold>\*\*|__)?(?P<key>status|date|decided|상태|날짜|일자|결정일)(?:\*\*|__)?"
    r"[ \t]*[:：](?:\*\*|__)?[ \t]*(?P<value>.*?)[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
SUPERSEDE_LINE = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__)?(?=(?:superseded|replaced|supersedes|replaces)(?![A-Za-z]))",
    re.IGNORECASE | re.MULTILINE,
)
# "Partially superseded by 0017" (everything else stays in force) names a successor of a part only.
PARTIAL_WORD = re.compile(r"(?<![A-Za-z])(?:partially|partly|in[ \t]+part)[ \t]+$", re.IGNORECASE)
SUPERSEDE_PHRASE = re.compile(
    r"(?<![A-Za-z])(?P<phrase>superseded[ \t]+by|replaced[ \t]+by|supersedes|replaces)(?![A-Za-z])"
    r"(?:\*\*|__)?[ \t]*[:：]?(?:\*\*|__)?[ \t]*",
    re.IGNORECASE,
)
# The phrase pattern starts with a look-behind, so it is tried at every position of a text; these words are in
# every phrase it matches, and a text without them is not searched with it.
SUPERSEDE_WORDS = re.compile(r"supersede|replace", re.IGNORECASE)
# Korean puts the reference before the verb: "D-3을 대체" / "[[ADR-7]]를 대체한다" (this record supersedes it),
# "[[ADR-12]]로 대체됨" (this record is superseded by it).
KOREAN_SUPERSESSION = re.compile(
    r"(?P<reference>\[\[[^\[\]\n]+\]\]|\[[^\[\]\n]+\]\([^()\s]+\)|[A-Za-z]{1,6}[-#_ ]?\d+|[^\s,;()\[\]]+?)"
    r"[ \t]*(?P<particle>을|를|으로|로)[ \t]*대체(?P<tail>[가-힣]*)"
)
MARKDOWN_LINK = re.compile(r"\[[^\[\]\n]+\]\((?P<target>[^()\s]+)(?:\s+\"[^\"]*\")?\)")
WIKI_LINK = re.compile(r"\[\[(?P<target>[^\[\]|#\n]+)[^\[\]\n]*\]\]")
PLAIN_REFERENCE = re.compile(r"[^,;()\[\]\n]+")
SEPARATOR = re.compile(r"[ \t]*[,;][ \t]*")
STATUS_WORD = re.compile(
    r"(?<![A-Za-z])(accepted|approved|adopted|proposed|draft|rejected|declined|deprecated|superseded|replaced|"
    r"obsolete|retired)(?![A-Za-z])|(?<![가-힣])(채택|승인|확정|결정|제안|검토|기각|반려|폐기|대체)[가-힣]*",
    re.IGNORECASE,
)
STATUS_NAMES = {
    "accepted": "accepted", "approved": "accepted", "adopted": "accepted", "채택": "accepted",
    "승인": "accepted", "확정": "accepted", "결정": "accepted", "proposed": "proposed", "draft": "proposed",
    "제안": "proposed", "검토": "proposed", "rejected": "rejected", "declined": "rejected", "기각": "rejected",
    "반려": "rejected", "deprecated": "deprecated", "retired": "deprecated", "폐기": "deprecated",
    "superseded": "superseded", "replaced": "superseded", "대체": "superseded", "obsolete": "obsolete",
}  # fmt: skip


@dataclass(frozen=True)
class Found:
    """A value and the range it was found at; ``label`` is the field's name as written."""

    value: str
    start: int
    end: int
    label: str
    partial: bool = False  # a reference after "partially superseded by" / "partly supersedes"


@dataclass
class Fields:
    date: Found | None = None
    status: Found | None = None
    supersedes: list[Found] = field(default_factory=list)
    superseded_by: list[Found] = field(default_factory=list)
    consumed: list[tuple[int, int]] = field(default_factory=list)  # the field lines, left out of key–value rules

    def date_status_line(self, text: str, start: int, end: int, label: str) -> None:
        """"Accepted — 2026-04-27": a status line dates the record when nothing else did, unless its date belongs
        to a reference it holds ("Superseded by 2026-05-02: Move the catalog")."""
        if self.date is None and not any(True for _ in references(text, start, end)):
            self.date = _date_found(text, start, end, label)

    def merge_references(self, text: str, start: int, end: int) -> None:
        for kind, found in references(text, start, end):
            target = self.supersedes if kind == "supersedes" else self.superseded_by
            if all((f.start, f.end) != (found.start, found.end) for f in target):
                target.append(found)


def scan_fields(text: str, start: int, end: int) -> Fields:
    """Status, date and supersession lines in ``text[start:end]`` (the first status and date win)."""
    fields = Fields()
    for match in FIELD_LINE.finditer(text, start, end):
        key, value_start, value_end = match.group("key"), match.start("value"), match.end("value")
        value_start, value_end = _strip_markup(text, value_start, value_end)
        line = (match.start(), match.end())
        if key.casefold() in ("status", "상태"):
            if fields.status is None:
                fields.status = parse_status(text, value_start, value_end, key)
            fields.merge_references(text, value_start, value_end)
            fields.consumed.append(line)
            fields.date_status_line(text, value_start, value_end, key)
        elif fields.date is None:
            fields.date = _date_found(text, value_start, value_end, key)
            if fields.date is not None:
                fields.consumed.append(line)
    for match in KOREAN_SUPERSESSION.finditer(text, start, end):
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        line_end = end if line_end < 0 or line_end > end else line_end
        fields.merge_references(text, max(start, line_start), line_end)
        if not FIELD_LINE.match(text, max(start, line_start), line_end):
            fields.consumed.append((max(start, line_start), line_end))
    for match in SUPERSEDE_LINE.finditer(text, start, end):
        line_end = text.find("\n", match.end())
        line_end = end if line_end < 0 or line_end > end else line_end
        fields.merge_references(text, match.end(), line_end)
        fields.consumed.append((match.start(), line_end))
    return fields


def _date_found(text: str, start: int, end: int, label: str) -> Found | None:
    """The date written in ``text[start:end]`` in any form the vault reads (``vault.dates``), as ISO."""
    found = date_in(text[start:end])
    return Found(found[0], start + found[1], start + found[2], label) if found else None


def is_partial(text: str, position: int) -> bool:
    """Whether "partially" (partly, in part) comes just before ``position`` on its line."""
    line_start = text.rfind("\n", 0, position) + 1
    return bool(PARTIAL_WORD.search(text, line_start, position))


def parse_status(text: str, start: int, end: int, label: str) -> Found | None:
    """The normalised status named in ``text[start:end]``: the first known status word, else the value itself
    in lower case when it is short. "Partially superseded" stays in force: its status says so."""
    word = STATUS_WORD.search(text, start, end)
    if word:
        name = STATUS_NAMES[(word.group(1) or word.group(2)).casefold()]
        if name == "superseded" and is_partial(text, word.start()):
            return Found("partially superseded", word.start(), word.end(), label)
        return Found(name, word.start(), word.end(), label)
    value = text[start:end].strip().rstrip(".")
    if value and len(value) <= 40 and not value.startswith(("[", "(")):
        return Found(re.sub(r"\s+", " ", value.casefold()), start, start + len(value), label)
    return None


def references(text: str, start: int, end: int) -> list[tuple[str, Found]]:
    """``("supersedes" | "superseded_by", reference)`` pairs for every supersession phrase in the range;
    several references after one phrase are separated by commas or semicolons."""
    found: list[tuple[str, Found]] = []
    phrases = SUPERSEDE_PHRASE.finditer(text, start, end) if SUPERSEDE_WORDS.search(text, start, end) else ()
    for phrase in phrases:
        words = phrase.group("phrase")
        kind = "superseded_by" if words.casefold().endswith("by") else "supersedes"
        partial = is_partial(text, phrase.start("phrase"))
        position = phrase.end()
        while True:
            reference, after = _reference_at(text, position, end, words)
            if reference is None:
                break
            found.append((kind, replace(reference, partial=True) if partial else reference))
            separator = SEPARATOR.match(text, after, end)
            if separator is None:
                break
            position = separator.end()
    # The pattern tries a reference at every position; a text without the verb cannot match it.
    koreans = KOREAN_SUPERSESSION.finditer(text, start, end) if text.find("대체", start, end) >= 0 else ()
    for korean in koreans:
        passive = korean.group("particle") in ("로", "으로") and korean.group("tail").startswith(("되", "됨", "됐"))
        written = korean.group("reference")
        link = MARKDOWN_LINK.fullmatch(written) or WIKI_LINK.fullmatch(written)
        ref_start = korean.start("reference") + (link.start("target") if link else 0)
        ref_end = korean.start("reference") + (link.end("target") if link else len(written))
        found.append(("superseded_by" if passive else "supersedes", Found(text[ref_start:ref_end], ref_start,
                                                                          ref_end, "대체")))
    return found


def _reference_at(text: str, position: int, end: int, label: str) -> tuple[Found | None, int]:
    """The reference starting at ``position`` and where its source text ends."""
    for pattern in (MARKDOWN_LINK, WIKI_LINK):
        link = pattern.match(text, position, end)
        if link:
            return Found(link.group("target"), link.start("target"), link.end("target"), label), link.end()
    plain = PLAIN_REFERENCE.match(text, position, end)
    if not plain:
        return None, position
    ref_start, ref_end = _strip_markup(text, plain.start(), plain.end())
    while ref_end > ref_start and text[ref_end - 1] in ".:":
        ref_end -= 1
    if ref_end <= ref_start:
        return None, position
    return Found(text[ref_start:ref_end], ref_start, ref_end, label), plain.end()


def _strip_markup(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in "*_ \t":
        start += 1
    while end > start and text[end - 1] in "*_ \t":
        end -= 1
    return start, end
