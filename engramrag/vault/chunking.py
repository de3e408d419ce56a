"""Splitting a document body into passages with exact line spans."""

from __future__ import annotations

import re
from collections.abc import Iterator

from engramrag.vault.document import Chunk, Document

PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def chunk_body(document: Document, target_chars: int) -> Iterator[Chunk]:
    """One chunk per section (text under a heading, the heading included); a section longer than
    ``target_chars`` is split at paragraph breaks. Chunks never cross a heading and never lose text."""
    index = 0
    for start, end, heading_path in _sections(document):
        for piece_start, piece_end in _pieces(document.text, start, end, target_chars):
            text = document.text[piece_start:piece_end]
            stripped_start = piece_start + (len(text) - len(text.lstrip()))
            stripped_end = piece_end - (len(text) - len(text.rstrip()))
            if stripped_end <= stripped_start:
                continue
            yield Chunk(
                index=index,
                text=document.text[stripped_start:stripped_end],
                span=document.span(stripped_start, stripped_end),
                heading_path=heading_path,
            )
            index += 1


def _sections(document: Document) -> Iterator[tuple[int, int, tuple[str, ...]]]:
    starts: list[tuple[int, tuple[str, ...]]] = [(document.body_start, ())]
    trail: list[tuple[int, str]] = []
    for heading in document.headings:
        while trail and trail[-1][0] >= heading.level:
            trail.pop()
        trail.append((heading.level, heading.text))
        line_begin = document.text.rfind("\n", 0, heading.span.start) + 1
        starts.append((line_begin, tuple(text for _, text in trail)))
    for position, (start, path) in enumerate(starts):
        end = starts[position + 1][0] if position + 1 < len(starts) else len(document.text)
        if end > start:
            yield start, end, path


def _pieces(text: str, start: int, end: int, target_chars: int) -> Iterator[tuple[int, int]]:
    if end - start <= target_chars:
        yield start, end
        return
    piece_start = start
    last_break = None
    for match in PARAGRAPH_BREAK.finditer(text, start, end):
        if match.start() - piece_start > target_chars and last_break is not None:
            yield piece_start, last_break
            piece_start = last_break
        last_break = match.end()
    if last_break is not None and end - piece_start > target_chars and last_break > piece_start:
        yield piece_start, last_break
        piece_start = last_break
    yield piece_start, end
