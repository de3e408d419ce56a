"""Evidence: the sentences a reviewer reads beside a merge candidate, one per document where a key is mentioned.

One job: given a key's mention rows (most mentioned first) and the documents' texts, quote the sentence that holds
the label as written, preferring the line the extractor recorded and the body after the front matter, so that a
person deciding whether two keys name one thing sees each used in context.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import pandas as pd

from engramrag.extract.textutil import sentences


@dataclass(frozen=True)
class Evidence:
    path: str
    line: int
    text: str


def document_texts(documents: pd.DataFrame | None) -> dict[str, tuple[str, str]]:
    """doc_id -> (path, text) of the documents that carry a ``text`` column; empty when none do."""
    if documents is None or "text" not in documents.columns:
        return {}
    return {
        str(doc_id): (str(path), str(text))
        for doc_id, path, text in documents[["doc_id", "path", "text"]].itertuples(index=False)
        if isinstance(text, str)
    }


class EvidenceFinder:
    """Evidence per key, computed once per key and with each document's line offsets computed once."""

    def __init__(
        self,
        mentions: Mapping[str, list[tuple[str, str, int | None, int]]],
        texts: Mapping[str, tuple[str, str]],
        limit: int,
    ) -> None:
        self.mentions, self.texts, self.limit = mentions, texts, limit
        self.offsets: dict[str, list[int]] = {}
        self.found: dict[str, tuple[Evidence, ...]] = {}

    def of(self, key: str) -> tuple[Evidence, ...]:
        """The evidence sentences of ``key`` (see ``mention_evidence``)."""
        if key not in self.found:
            self.found[key] = mention_evidence(self.mentions.get(key, []), self.texts, self.limit, self.offsets)
        return self.found[key]


def mention_evidence(
    rows: list[tuple[str, str, int | None, int]],
    texts: Mapping[str, tuple[str, str]],
    limit: int = 2,
    line_offsets: dict[str, list[int]] | None = None,
) -> tuple[Evidence, ...]:
    """Up to ``limit`` sentences, from different documents, where a key is mentioned: each row is (doc_id,
    label, first_line, mentions), most mentioned first. The sentence holds the label as written.
    ``line_offsets`` caches each document's line start offsets between calls."""
    cache = {} if line_offsets is None else line_offsets
    found: list[Evidence] = []
    used: set[str] = set()
    for doc_id, label, first_line, _count in rows:
        if len(found) >= limit:
            break
        if doc_id not in texts or doc_id in used:
            continue
        path, text = texts[doc_id]
        if doc_id not in cache:
            cache[doc_id] = [0, *(m.end() for m in re.finditer("\n", text))]
        evidence = _sentence_with(text, cache[doc_id], label, first_line)
        if evidence is not None:
            found.append(Evidence(path, *evidence))
            used.add(doc_id)
    return tuple(found)


def _sentence_with(text: str, offsets: list[int], label: str, first_line: int | None) -> tuple[int, str] | None:
    regex = _label_pattern(label)
    if regex is None:
        return None
    body = _body_start(text)
    start = offsets[first_line - 1] if first_line and 0 < first_line <= len(offsets) else 0
    match = regex.search(text, max(start, body)) or regex.search(text, body) or regex.search(text)
    if match is None:
        return None
    line = bisect_right(offsets, match.start())
    line_start = offsets[line - 1]
    line_end = text.find("\n", match.start())
    line_end = len(text) if line_end < 0 else line_end
    for s, e in sentences(text, line_start, line_end):
        if s <= match.start() and match.end() <= e:
            return line, text[s:e]
    return line, text[line_start:line_end].strip()


@lru_cache(maxsize=65536)
def _label_pattern(label: str) -> re.Pattern[str] | None:
    """The label as a pattern: its words in order across any whitespace, whole words where they are Latin."""
    words = label.split()
    if not words:
        return None
    pattern = r"\s+".join(map(re.escape, words))
    if words[0][0].isascii() and words[0][0].isalnum():
        pattern = r"(?<!\w)" + pattern
    if words[-1][-1].isascii() and words[-1][-1].isalnum():  # Korean particles attach to a name: 박민지는
        pattern += r"(?!\w)"
    return re.compile(pattern, re.IGNORECASE)


def _body_start(text: str) -> int:
    """Where the body begins after YAML front matter: a sentence of prose is better evidence than ``title:``."""
    if not text.startswith("---"):
        return 0
    end = re.search(r"^(?:---|\.\.\.)[ \t]*$", text[3:], re.MULTILINE)
    return 3 + end.end() if end else 0
