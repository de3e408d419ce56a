"""The notes' terms and BM25 stems, kept with each index so the next build cuts only the changed notes.

Cutting every note into terms (``lexical.terms``) and stemming them (``note_bm25.stemmed``) was a fifth of an
index build and redone for every note on every build, though an edit changes one. The result depends only on
the note's text, so it is stored beside the index keyed by the catalog's hash of that text (``documents.body_hash``,
the SHA-256 of ``text``) and reused by the next build for every note whose text is the same; a changed note misses
and is cut again, and only the missing notes' texts are read from the catalog (``missing``).

Both readers of the terms count them and ignore their order (BM25 scores a bag of words; a label term's
document frequency asks only whether a note holds it), so each note is stored as the sorted ids of its terms in
a vocabulary kept beside them (``Tokens``): reading them back is a few array reads, where splitting stored
strings into millions of Python strings and handing those to ``bm25s`` to number again took 2-4 s of every
build at 10,000 notes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from engramrag.arrow_files import UNREADABLE, read_table, write_table
from engramrag.retrieve.lexical import terms
from engramrag.retrieve.note_bm25 import stemmed
from engramrag.run_memo import FilesKept

FILE = "body_terms.npz"
WORDINGS_FILE = "wording_terms.arrow"
# The first index format whose kept terms are cut as this code cuts them: an index of that format or a later one
# lends its terms to the next build. A change to how notes are cut into terms sets it to the new index format.
TERMS_SINCE = 12
KINDS = ("terms", "stems")


@dataclass(frozen=True)
class Tokens:
    """Each note's tokens as ids into ``vocab``: note ``i`` holds ``ids[offsets[i]:offsets[i + 1]]``, sorted."""

    vocab: list[str]
    ids: np.ndarray
    offsets: np.ndarray

    @property
    def notes(self) -> int:
        return len(self.offsets) - 1

    def words(self, note: int) -> list[str]:
        return [self.vocab[i] for i in self.ids[self.offsets[note] : self.offsets[note + 1]].tolist()]

    def document_frequency(self) -> np.ndarray:
        """How many notes hold each vocabulary entry (ids are sorted within a note, so a note's first
        occurrence of an id is where it differs from the token before it or the note starts)."""
        first = np.ones(len(self.ids), dtype=bool)
        first[1:] = self.ids[1:] != self.ids[:-1]
        starts = self.offsets[:-1][self.offsets[:-1] < len(self.ids)]
        first[starts] = True
        return np.bincount(self.ids[first], minlength=len(self.vocab))

    def compacted(self) -> Tokens:
        """The same tokens over a vocabulary of only the entries some note holds (in their order)."""
        used = np.bincount(self.ids, minlength=len(self.vocab)) > 0
        if used.all():
            return self
        renumber = np.cumsum(used) - 1
        ids = renumber[self.ids].astype(_id_type(int(used.sum())))
        return Tokens([word for word, kept in zip(self.vocab, used.tolist(), strict=True) if kept], ids,
                      self.offsets)  # fmt: skip


class BodyTerms:
    """Terms and stems per note text: those of the previous index, plus whatever this build cut."""

    def __init__(self, stored: dict[str, np.ndarray] | None = None) -> None:
        stored = stored or {}
        hashes = _unpacked(stored.get("hashes"))
        self.known: dict[str, int] = {digest: row for row, digest in enumerate(hashes)}
        self._vocab = {kind: _unpacked(stored.get(f"{kind}_vocab")) for kind in KINDS}
        self._ids = {kind: stored.get(f"{kind}_ids", np.zeros(0, dtype=np.int32)) for kind in KINDS}
        self._offsets = {kind: stored.get(f"{kind}_offsets", np.zeros(1, dtype=np.int64)) for kind in KINDS}
        self._numbering: dict[str, dict[str, int]] = {}  # word -> id, made when a text is cut
        self._fresh: dict[str, dict[str, np.ndarray]] = {}  # hash -> kind -> sorted ids, for texts cut this build
        self.cut = 0  # notes whose text was not in the previous index
        self.reused = 0

    @classmethod
    def load(cls, folder: Path | None) -> BodyTerms:
        """The previous index's terms (none when there is no index, or it predates this file)."""
        path = folder / FILE if folder is not None else None
        if path is None or not path.exists():
            return cls()
        with np.load(path, allow_pickle=False) as stored:
            return cls({name: stored[name] for name in stored.files})

    def missing(self, hashes: Iterable[str]) -> set[str]:
        """The text hashes whose terms are not known: the texts the caller must read."""
        return {digest for digest in hashes if digest not in self.known and digest not in self._fresh}

    def of(self, hashes: Sequence[str], texts: Sequence[str | None]) -> tuple[Tokens, Tokens]:
        """Per note (its text hash, and its text where the hash is ``missing``): its terms and its stems, cut only
        for texts not seen before."""
        to_cut: dict[str, str] = {}
        for digest, text in zip(hashes, texts, strict=True):
            if digest in self.known or digest in self._fresh or digest in to_cut:
                self.reused += 1
                continue
            if not isinstance(text, str):
                raise ValueError(f"the terms of text {digest} are not known and its text was not given")
            to_cut[digest] = text
        if to_cut:
            self._cut(to_cut)
        rows = self._rows(hashes)
        return self._gathered("terms", hashes, rows), self._gathered("stems", hashes, rows)

    def _cut(self, texts: dict[str, str]) -> None:
        """Cut ``texts`` (hash -> text) into terms, numbered together: each distinct term is looked up in the
        vocabulary and stemmed once, not once per occurrence (a full build at 10,000 notes numbered and stemmed
        seven million occurrences of about a hundred thousand terms one by one: 10 of its 18 s of cutting)."""
        listed = [terms(text) for text in texts.values()]
        flat = np.fromiter(chain.from_iterable(listed), dtype=object, count=sum(map(len, listed)))
        codes, distinct = pd.factorize(flat)  # distinct terms in the order they first occur
        distinct = distinct.tolist()
        term_ids = self._numbers("terms", distinct)[codes]
        stem_ids = self._numbers("stems", stemmed(distinct))[codes]
        bounds = np.cumsum([0, *map(len, listed)]).tolist()
        for (digest, _), start, end in zip(texts.items(), bounds, bounds[1:], strict=False):
            self._fresh[digest] = {"terms": np.sort(term_ids[start:end]), "stems": np.sort(stem_ids[start:end])}
        self.cut += len(texts)

    def save(self, folder: Path, hashes: Sequence[str], gathered: tuple[Tokens, Tokens] | None = None) -> None:
        """Write the terms of the texts this index holds (``hashes``), dropping those of notes gone since.
        ``gathered``: the terms and stems :meth:`of` gave for exactly these ``hashes``, taken as they are when no
        text is listed twice (gathering 100,000 notes' terms again took a second at 100,000 notes)."""
        if gathered is not None and len(set(hashes)) == len(hashes):
            wanted, tokens = list(hashes), dict(zip(KINDS, gathered, strict=True))
        else:
            wanted = sorted(set(hashes))
            rows = self._rows(wanted)
            tokens = {kind: self._gathered(kind, wanted, rows) for kind in KINDS}
        arrays: dict[str, np.ndarray] = {"hashes": _packed(wanted)}
        for kind in KINDS:
            kept = tokens[kind].compacted()
            arrays |= {f"{kind}_vocab": _packed(kept.vocab), f"{kind}_ids": kept.ids,
                       f"{kind}_offsets": kept.offsets}  # fmt: skip
        np.savez(folder / FILE, **arrays)

    def _numbers(self, kind: str, words: list[str]) -> np.ndarray:
        """The vocabulary ids of ``words``; a word not in the vocabulary is added at its end, in the order given."""
        if kind not in self._numbering:
            self._numbering[kind] = {word: number for number, word in enumerate(self._vocab[kind])}
        numbering, vocab = self._numbering[kind], self._vocab[kind]
        ids = np.empty(len(words), dtype=np.int64)
        for position, word in enumerate(words):
            number = numbering.get(word)
            if number is None:
                number = numbering[word] = len(vocab)
                vocab.append(word)
            ids[position] = number
        return ids

    def _rows(self, hashes: Sequence[str]) -> np.ndarray:
        """Per text hash, its row among the terms read from the file, -1 for one cut in this process."""
        fresh, known = self._fresh, self.known
        rows = np.empty(len(hashes), dtype=np.int64)
        for position, digest in enumerate(hashes):
            row = -1 if digest in fresh else known.get(digest)
            if row is None:
                raise ValueError(f"the terms of text {digest} are not known and its text was not given")
            rows[position] = row
        return rows

    def _gathered(self, kind: str, hashes: Sequence[str], rows: np.ndarray) -> Tokens:
        """The terms of ``hashes`` (their ``_rows``) as one array: consecutive rows read from the file are one slice
        (a resident build's notes are the last build's in its order but for the few changed; a slice per note took
        1.5 s per kind at 100,000 notes)."""
        ids, offsets = self._ids[kind], self._offsets[kind]
        read = rows >= 0
        lengths = np.zeros(len(rows), dtype=np.int64)
        lengths[read] = offsets[rows[read] + 1] - offsets[rows[read]]
        breaks = (rows[1:] != rows[:-1] + 1) | ~read[1:] | ~read[:-1]
        starts = np.flatnonzero(np.concatenate(([True], breaks))).tolist() if len(rows) else []
        parts = []
        for start, end in zip(starts, [*starts[1:], len(rows)][: len(starts)], strict=True):
            if rows[start] < 0:  # cut in this process: a run of one
                parts.append(part := self._fresh[hashes[start]][kind])
                lengths[start] = len(part)
            else:
                parts.append(ids[offsets[rows[start]] : offsets[rows[end - 1] + 1]])
        vocab = list(self._vocab[kind])
        flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        flat = flat.astype(_id_type(len(vocab)), copy=False)  # the concatenation is a copy already
        return Tokens(vocab, flat, np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64))


def _packed(words: Sequence[str]) -> np.ndarray:
    """Words (which never hold a space) as the UTF-8 bytes of their space-joined text: a fixed-width string
    array would give every word the width of the longest."""
    return np.frombuffer(" ".join(words).encode("utf-8"), dtype=np.uint8)


def _unpacked(packed: np.ndarray | None) -> list[str]:
    text = packed.tobytes().decode("utf-8") if packed is not None else ""
    return text.split(" ") if text else []


def _id_type(vocabulary: int) -> type[np.integer]:
    """The narrowest id type for a vocabulary of this size (most notes' files are read on every build)."""
    return np.uint16 if vocabulary <= np.iinfo(np.uint16).max else np.int32


class WordingTerms:
    """The lexical terms of entity wordings (labels, and the keys of nodes without a usable label), kept beside
    each index in ``wording_terms.arrow`` the way the notes' terms are: the next build cuts only texts it has not
    seen (37,442 labels at 10,000 notes took 0.6 s to cut on every build). Only the texts a build used are kept."""

    def __init__(self, known: dict[str, tuple[str, ...]] | None = None) -> None:
        self.known = known or {}
        self.used: dict[str, tuple[str, ...]] = {}
        self.cut = 0  # texts cut this build

    @classmethod
    def load(cls, folder: Path | None) -> WordingTerms:
        path = folder / WORDINGS_FILE if folder is not None else None
        if path is None or not path.exists():
            return cls()
        written = _wordings_written.get(str(folder.parent), (path,))
        if written is not None:
            return cls(written)  # what this process saved there (35 ms a build to read back at 10,000 notes)
        try:
            table = read_table(path)
            listed = table.column("terms").to_pylist()
            return cls(dict(zip(table.column("text").to_pylist(), map(tuple, listed), strict=True)))
        except UNREADABLE:
            return cls()  # unreadable: every wording is cut again

    def of(self, text: str) -> tuple[str, ...]:
        """The distinct terms of ``text`` in order (``lexical.terms``)."""
        found = self.used.get(text)
        if found is None:
            found = self.known.get(text)
            if found is None:
                found = tuple(dict.fromkeys(terms(text)))
                self.cut += 1
            self.used[text] = found
        return found

    def took(self, used: dict[str, tuple[str, ...]]) -> None:
        """Count as used (and kept) the texts another :class:`WordingTerms` cut or took for this build; those it cut
        and this one did not know count as cut."""
        self.cut += sum(1 for text in used if text not in self.known and text not in self.used)
        self.used.update(used)

    def save(self, folder: Path) -> None:
        texts = sorted(self.used)
        table = pa.table({"text": pa.array(texts, pa.string()),
                          "terms": pa.array([list(self.used[text]) for text in texts], pa.list_(pa.string()))})
        write_table(table, folder / WORDINGS_FILE)
        _wordings_written.put(str(folder.parent), (folder / WORDINGS_FILE,), dict(self.used))


# Per folder of indexes (a home's), the wordings' terms this process saved last (never changed: ``known`` is only read).
_wordings_written: FilesKept[dict[str, tuple[str, ...]]] = FilesKept()
