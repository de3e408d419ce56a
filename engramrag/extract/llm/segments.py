"""Long documents in segments along headings, and quotes found back in a segment.

A model answers better about a section than about a whole long note, and each segment is one call that the
response cache keeps. Segments follow the document's sections: consecutive small sections share a segment up to
``segment_chars``, a long section is split at paragraph or line ends (never inside a line), and when that gives
more than ``max_segments`` the smallest neighbouring pair is merged until it does not. Segments cover the text
without gaps, so every offset in a segment maps back to the document by adding the segment's start.

A quote is only ever looked up: exactly first, then with its whitespace allowed to differ (a model often joins a
wrapped line); never case-insensitively or approximately, since a span must point at what the text says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engramrag.vault.document import Document

PARAGRAPH_END = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class Segment:
    index: int
    start: int  # offsets into Document.text
    end: int
    text: str


def split_segments(document: Document, segment_chars: int, max_segments: int) -> list[Segment]:
    """The document's text as at most ``max_segments`` contiguous segments of about ``segment_chars``."""
    text = document.text
    pieces: list[tuple[int, int]] = []
    for start, end in _sections(document):
        pieces += _split_long(text, start, end, segment_chars)
    packed = _pack(pieces, segment_chars)
    while len(packed) > max_segments:
        sizes = [packed[i + 1][1] - packed[i][0] for i in range(len(packed) - 1)]
        smallest = sizes.index(min(sizes))
        packed[smallest : smallest + 2] = [(packed[smallest][0], packed[smallest + 1][1])]
    kept = [(start, end) for start, end in packed if text[start:end].strip()]
    return [Segment(index, start, end, text[start:end]) for index, (start, end) in enumerate(kept)]


def _sections(document: Document) -> list[tuple[int, int]]:
    """Ranges that begin at the line of each heading; the text before the first heading (front matter
    included) is a section of its own."""
    text = document.text
    cuts = sorted({text.rfind("\n", 0, heading.span.start) + 1 for heading in document.headings} - {0})
    bounds = [0, *cuts, len(text)]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1) if bounds[i] < bounds[i + 1]]


def _split_long(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """``[start, end)`` in pieces of at most ``limit`` characters cut at line ends, preferring the last
    paragraph end in the second half of a piece; a single line longer than ``limit`` stays whole."""
    pieces = []
    while end - start > limit:
        window_end = start + limit
        cut = -1
        for paragraph in PARAGRAPH_END.finditer(text, start + limit // 2, window_end):
            cut = paragraph.end()
        if cut < 0:
            newline = text.rfind("\n", start, window_end)
            cut = newline + 1 if newline >= start else text.find("\n", window_end, end) + 1
        if cut <= start:  # one line to the end of the section
            break
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces


def _pack(pieces: list[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    packed: list[tuple[int, int]] = []
    for start, end in pieces:
        if packed and end - packed[-1][0] <= limit:
            packed[-1] = (packed[-1][0], end)
        else:
            packed.append((start, end))
    return packed


def locate(segment: Segment, quote: str) -> tuple[int, int] | None:
    """Document offsets of ``quote`` in the segment: the first exact occurrence, else the first occurrence with
    any run of whitespace standing for any other; None when the text does not contain it."""
    quote = quote.strip()
    if not quote:
        return None
    position = segment.text.find(quote)
    if position >= 0:
        return segment.start + position, segment.start + position + len(quote)
    words = quote.split()
    match = re.search(r"\s+".join(map(re.escape, words)), segment.text)
    if match is None:
        return None
    return segment.start + match.start(), segment.start + match.end()


def locate_within(text: str, label: str, start: int, end: int) -> tuple[int, int] | None:
    """Where ``label`` occurs inside ``text[start:end]``: exactly, else ignoring case and spacing (the label of
    an item is the model's; the quote around it is the text's), else None."""
    label = label.strip()
    if not label:
        return None
    position = text.find(label, start, end)
    if position >= 0:
        return position, position + len(label)
    pattern = re.compile(r"\s+".join(map(re.escape, label.split())), re.IGNORECASE)
    match = pattern.search(text, start, end)
    return match.span() if match else None


__all__ = ["Segment", "locate", "locate_within", "split_segments"]
