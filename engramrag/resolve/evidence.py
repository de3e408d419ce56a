"""Evidence: the sentences a reviewer reads beside a merge candidate, one per document where a key is mentioned.

One job: given a key's mention rows (most mentioned first) and the documents' texts, quote the sentence that holds
the label as written, preferring the line the extractor recorded and the body after the front matter, so that a
person deciding whether two keys name one thing sees each used in context.
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import pandas as pd

from engramrag.extract.textutil import sentences
from engramrag.resolve.mention_rows import MentionRow


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
    """Evidence per key, computed once per key and with each document's line offsets computed once.

    ``known`` holds evidence quoted by an earlier run, per key with the signature of what it was quoted from: a key
    whose signature is unchanged gets it back instead of being searched again, which is exact because the evidence
    is a function of those alone. The signature is made from ``inputs`` when given (per key, a digest that already
    covers its mention rows and its documents' paths and texts: ``resolve.stored_keys.key_inputs``), so a key
    whose evidence is kept needs neither its mention rows nor a text; without ``inputs`` it is made from the
    mention rows and the texts themselves. After a run, ``quoted`` is every key asked for with its signature and
    evidence, for the next run."""

    def __init__(
        self,
        mentions: Mapping[str, Sequence[MentionRow]],
        texts: Mapping[str, tuple[str, str]],
        limit: int,
        known: Mapping[str, tuple[str, tuple[Evidence, ...]]] | None = None,
        inputs: Mapping[str, str] | None = None,
    ) -> None:
        self.mentions, self.texts, self.limit = mentions, texts, limit
        self.known = known or {}
        self.inputs = inputs
        self.offsets: dict[str, list[int]] = {}
        self.text_hashes: dict[str, str] = {}
        self.quoted: dict[str, tuple[str, tuple[Evidence, ...]]] = {}
        self.reused = 0

    def of(self, key: str) -> tuple[Evidence, ...]:
        """The evidence sentences of ``key`` (see ``mention_evidence``)."""
        if key not in self.quoted:
            signature = self.signature(key)
            earlier = self.known.get(key)
            if earlier is not None and earlier[0] == signature:
                self.reused += 1
                self.quoted[key] = earlier
            else:
                rows = self.mentions.get(key, [])
                self.quoted[key] = (signature, mention_evidence(rows, self.texts, self.limit, self.offsets))
        return self.quoted[key][1]

    def signature(self, key: str) -> str:
        """A digest of what ``key``'s evidence is quoted from (and of the limit)."""
        if self.inputs is not None:
            return inputs_signature(self.limit, self.inputs.get(key, ""))
        digest = hashlib.blake2b(f"{self.limit}".encode(), digest_size=16)
        for doc_id, label, first_line, count in self.mentions.get(key, []):
            digest.update(f"\x1f{doc_id}\x1e{label}\x1e{first_line}\x1e{count}\x1e{self._text_hash(doc_id)}".encode())
        return digest.hexdigest()

    def stale(self, keys: Iterable[str]) -> list[str]:
        """Those of ``keys`` whose known evidence does not match their signature: the keys that must be quoted
        (needs ``inputs``: otherwise the signature itself needs the mention rows and texts)."""
        if self.inputs is None:
            raise ValueError("stale() needs the keys' inputs digests; without them every key's rows are needed")
        return [key for key in keys if self.known.get(key, ("",))[0] != self.signature(key)]

    def _text_hash(self, doc_id: str) -> str:
        if doc_id not in self.text_hashes:
            found = self.texts.get(doc_id)
            text = "" if found is None else f"{found[0]}\x00{found[1]}"
            digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
            self.text_hashes[doc_id] = "-" if found is None else digest
        return self.text_hashes[doc_id]


def inputs_signature(limit: int, inputs: str) -> str:
    """The evidence signature of a key whose mention rows and documents have the digest ``inputs``."""
    return hashlib.blake2b(f"{limit}\x1finputs\x1f{inputs}".encode(), digest_size=16).hexdigest()


class TextsOnDemand(Mapping[str, tuple[str, str]]):
    """doc_id -> (path, text), read when first asked for through ``fetch`` (doc ids -> their (path, text); an id
    it does not return is a document it does not have). Quoting stops at the first few documents of a key, so a
    key mentioned in thousands of notes reads a handful of texts, not all of them; ``prefetch`` reads the ones
    known to be wanted in one go."""

    def __init__(self, fetch: Callable[[Sequence[str]], Mapping[str, tuple[str, str]]]) -> None:
        self.fetch = fetch
        self.found: dict[str, tuple[str, str] | None] = {}

    def prefetch(self, doc_ids: Iterable[str]) -> None:
        wanted = sorted({doc_id for doc_id in doc_ids if doc_id not in self.found})
        if wanted:
            fetched = self.fetch(wanted)
            self.found.update({doc_id: fetched.get(doc_id) for doc_id in wanted})

    def __getitem__(self, doc_id: str) -> tuple[str, str]:
        self.prefetch([doc_id])
        found = self.found[doc_id]
        if found is None:
            raise KeyError(doc_id)
        return found

    def __contains__(self, doc_id: object) -> bool:
        if not isinstance(doc_id, str):
            return False
        self.prefetch([doc_id])
        return self.found[doc_id] is not None

    def __iter__(self) -> Iterator[str]:
        return (doc_id for doc_id, found in self.found.items() if found is not None)

    def __len__(self) -> int:
        return sum(1 for found in self.found.values() if found is not None)


def evidence_json(items: tuple[Evidence, ...]) -> str:
    """Evidence as the catalog stores it: a JSON list of {path, line, text}."""
    return json.dumps([{"path": e.path, "line": e.line, "text": e.text} for e in items], ensure_ascii=False)


def evidence_from_json(text: str) -> tuple[Evidence, ...]:
    return tuple(Evidence(item["path"], int(item["line"]), item["text"]) for item in json.loads(text))


def mention_evidence(
    rows: Iterable[MentionRow],
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
