"""Text helpers shared by the rules extractor: label normalisation, snake_case, masked views, sentences.

All views keep the length of ``Document.text`` (masked characters become spaces, newlines stay), so an offset
found in a view is an offset into the document text.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import lru_cache

from engramrag.vault.document import Document, Link, Span
from engramrag.vault.markdown import mask_code

ISO_DATE = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?!\d)")
NOTE_SUFFIX = re.compile(r"\.(?:md|markdown)[ \t]*$", re.IGNORECASE)
URL = re.compile(r"https?://[^\s<>()\[\]`\"']+")
INLINE_CODE = re.compile(r"``[^\n]+?``|`[^`\n]+`")
IMAGE = re.compile(r"!\[\[[^\]\n]*\]\]|!\[[^\]\n]*\]\([^)\n]*\)")
HTML = re.compile(r"<!--.*?-->|</?[A-Za-z][^>\n]*>", re.DOTALL)
FOOTNOTE = re.compile(r"\[\^[^\]\n]+\]")
SENTENCE_END = re.compile(r"[.!?。！？]+(?=\s|$)|\n")
LINE_MARKERS = re.compile(r"(?:[ \t]*(?:#{1,6}|>|[-*+]|\d+[.)]|\[[ xX]\])(?=[ \t]))*[ \t]*")
CONTINUATION_STOP = re.compile(r"^[ \t]*(?:[-*+][ \t]|\d+[.)][ \t]|#|>|\||```|~~~)")
EDGE_PUNCTUATION = " \t\"'“”‘’「」『』()[]{}<>*_`.,;:!?"


_LINE_STARTS: dict[str, list[int]] = {}
_SORTED_LINKS: dict[str, tuple[list[int], list[Link]]] = {}


def links_within(document: Document, start: int, end: int) -> list[Link]:
    """The document's links that start inside ``[start, end)``, by bisection over a cached sorted list."""
    starts, ordered = _sorted_links(document)
    return ordered[bisect_left(starts, start) : bisect_left(starts, end)]


def widen_to_links(document: Document, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` so that it does not begin or end inside a link's syntax."""
    starts, ordered = _sorted_links(document)
    for position in (start, end):
        index = bisect_left(starts, position) - 1
        if index >= 0 and ordered[index].span.start < position < ordered[index].span.end:
            link = ordered[index].span
            start, end = min(start, link.start), max(end, link.end)
    return start, end


def _sorted_links(document: Document) -> tuple[list[int], list[Link]]:
    cached = _SORTED_LINKS.get(document.body_hash)
    if cached is None:
        if len(_SORTED_LINKS) >= 8:
            _SORTED_LINKS.clear()
        ordered = sorted(document.links, key=lambda link: link.span.start)
        cached = _SORTED_LINKS[document.body_hash] = ([link.span.start for link in ordered], ordered)
    return cached


_SPACES = re.compile(r"\s+")


def span_at(document: Document, start: int, end: int) -> Span:
    """``document.span(start, end)`` in logarithmic time: the line numbers come from a cached index of newline
    offsets instead of counting newlines from the start of the text for every span."""
    newlines = _LINE_STARTS.get(document.body_hash)
    if newlines is None:
        if len(_LINE_STARTS) >= 8:
            _LINE_STARTS.clear()
        newlines = _LINE_STARTS[document.body_hash] = [m.start() for m in re.finditer("\n", document.text)]
    line_start = bisect_right(newlines, start - 1) + 1
    line_end = bisect_right(newlines, max(start, end - 1) - 1) + 1
    return Span(start, end, line_start, line_end)


# The global steps normalise every label of the vault, several times per build: the cache holds them all. At 100,000
# notes the labels, titles and keys are 237,966 distinct strings, close to 2**18, the size before; an LRU cache that
# one pass overflows misses on every pass.
@lru_cache(maxsize=1 << 21)
def normalise_label(label: str) -> str:
    """The identity form of a label within one document: NFKC, case-folded, single spaces, no edge punctuation."""
    text = unicodedata.normalize("NFKC", label).casefold()
    return _SPACES.sub(" ", text).strip().strip(EDGE_PUNCTUATION)


def snake_case(key: str) -> str:
    """``Due Date`` → ``due_date``, ``ownerName`` → ``owner_name``; Hangul is kept as written."""
    text = unicodedata.normalize("NFKC", key).strip()
    text = re.sub(r"[*_`~]+", " ", text)
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).lower()
    text = re.sub(r"\W+", "_", text)
    return re.sub(r"_+", "_", text).strip("_") or "value"


def iso_date(text: str) -> str | None:
    """The ISO ``yyyy-mm-dd`` date at the start of ``text`` when it is a valid calendar-ish date."""
    match = ISO_DATE.match(text.strip())
    return match.group(0) if match and valid_date(match) else None


def valid_date(match: re.Match[str]) -> bool:
    return 1 <= int(match.group(2)) <= 12 and 1 <= int(match.group(3)) <= 31


def link_text_range(text: str, link: Link) -> tuple[int, int]:
    """The visible text of a link: the alias, else the target's note name (wiki) or the bracket text."""
    start, end = link.span.start, link.span.end
    if link.style == "wiki":
        inner_start, inner_end = start + 2, end - 2
        bar = text.find("|", inner_start, inner_end)
        if bar >= 0:
            return strip_range(text, bar + 1, inner_end)
        hash_at = text.find("#", inner_start, inner_end)
        target_end = hash_at if hash_at >= 0 else inner_end
        slash = text.rfind("/", inner_start, target_end)
        name_start = slash + 1 if slash >= 0 else inner_start
        suffix = NOTE_SUFFIX.search(text, name_start, target_end)
        return strip_range(text, name_start, suffix.start() if suffix else target_end)
    return strip_range(text, start + 1, text.find("](", start, end))


def strip_range(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def blank(chars: list[str], start: int, end: int) -> None:
    """Replace ``chars[start:end]`` with spaces, keeping newlines."""
    for index in range(start, end):
        if chars[index] != "\n":
            chars[index] = " "


@dataclass(frozen=True)
class TextViews:
    """``masked``: front matter and fenced code blanked (for structure such as key–value lines).
    ``prose``: also inline code, images, HTML, footnotes, URLs, inline tags and link syntax blanked,
    keeping only the visible text of links (for mentions, relations and sentences)."""

    masked: str
    prose: str

    @classmethod
    def of(cls, document: Document) -> TextViews:
        masked = mask_code(document.text, document.body_start)
        chars = list(masked)
        for pattern in (INLINE_CODE, IMAGE, HTML, FOOTNOTE):
            for match in pattern.finditer(masked, document.body_start):
                blank(chars, match.start(), match.end())
        for link in document.links:
            visible_start, visible_end = link_text_range(document.text, link)
            blank(chars, link.span.start, visible_start)
            blank(chars, visible_end, link.span.end)
        for match in URL.finditer(masked, document.body_start):
            blank(chars, match.start(), match.end())
        for tag in document.tags:
            if tag.span is not None:
                blank(chars, tag.span.start, tag.span.end)
        return cls(masked=masked, prose="".join(chars))


def sentences(text: str, start: int, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence ranges in ``text[start:end]``: split at . ! ? 。 and newlines, trimmed of whitespace and
    leading list, quote and heading markers. The terminal punctuation stays in the sentence."""
    end = len(text) if end is None else end
    ranges: list[tuple[int, int]] = []
    position = start
    for match in SENTENCE_END.finditer(text, start, end):
        piece_end = match.start() if match.group() == "\n" else match.end()
        _add_sentence(text, position, piece_end, ranges)
        position = match.end()
    _add_sentence(text, position, end, ranges)
    return ranges


def _add_sentence(text: str, start: int, end: int, ranges: list[tuple[int, int]]) -> None:
    marker = LINE_MARKERS.match(text, start, end)
    if marker:
        start = marker.end()
    start, end = strip_range(text, start, end)
    if end > start:
        ranges.append((start, end))


def continuation_end(text: str, end: int, stops: tuple[re.Pattern[str], ...] = ()) -> int:
    """Extend a value that ends at ``end`` over the following lines of its paragraph: not across a blank line,
    a list item, a heading, a quote, a table, a fence, or a line matching one of ``stops``."""
    while True:
        line_start = text.find("\n", end)
        if line_start < 0:
            return end
        line_start += 1
        line_end = text.find("\n", line_start)
        line_end = len(text) if line_end < 0 else line_end
        line = text[line_start:line_end]
        if not line.strip() or CONTINUATION_STOP.match(line) or any(stop.match(line) for stop in stops):
            return end
        end = line_start + len(line.rstrip())
