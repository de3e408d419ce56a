"""The parsed shape of one vault document. Offsets are character offsets into ``Document.text``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Span:
    """A character span ``[start, end)`` of the file text and its 1-based inclusive line range."""

    start: int
    end: int
    line_start: int
    line_end: int


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    span: Span


@dataclass(frozen=True)
class Link:
    """A wiki link ``[[target|alias]]`` or a Markdown link ``[alias](target)``."""

    target: str
    alias: str | None
    style: str  # "wiki" or "markdown"
    span: Span


@dataclass(frozen=True)
class Tag:
    name: str
    span: Span | None  # None for tags that come from front matter


@dataclass(frozen=True)
class Chunk:
    """A passage of the body: one section or a piece of a long section, never crossing a heading."""

    index: int
    text: str
    span: Span
    heading_path: tuple[str, ...]


@dataclass(frozen=True)
class Document:
    path: str  # vault-relative, POSIX separators
    doc_id: str
    bucket: int
    text: str  # the whole file, newlines normalised to "\n"
    body_hash: str  # sha256 of ``text``
    body_start: int  # offset where the body begins, after the front matter
    front_matter: dict[str, Any]
    title: str
    author: str | None
    agent_authored: bool
    size_bytes: int
    headings: tuple[Heading, ...] = ()
    links: tuple[Link, ...] = ()
    tags: tuple[Tag, ...] = ()
    chunks: tuple[Chunk, ...] = field(default=(), repr=False)

    @property
    def body(self) -> str:
        return self.text[self.body_start :]

    def span(self, start: int, end: int) -> Span:
        return span_of(self.text, start, end)


def span_of(text: str, start: int, end: int) -> Span:
    """The Span of ``text[start:end]`` with its 1-based line range."""
    line_start = text.count("\n", 0, start) + 1
    line_end = line_start + text.count("\n", start, max(start, end - 1))
    return Span(start, end, line_start, line_end)
