"""Whole-note BM25: the lexical floor of every search, built with the ``bm25s`` library.

Chunk BM25 (LanceDB's full-text index) scores each chunk on its own, so a note whose words are spread over
several chunks ranks below a note with one lucky chunk. This index scores whole notes, the way the simplest
peer a user would compare against does (BM25 over whole notes), so the fused ranking can start from it.
BM25's length normalisation (``b``) keeps a long note from winning by length.

Terms are the lexical leg's (:func:`engramrag.retrieve.lexical.terms`: words, Hangul as character bigrams,
no function words) with English words stemmed (Snowball, as LanceDB's own index stems), so "researched"
finds "research". Document frequencies are kept beside the index: the abstention estimate asks how much of
a question's rarity the best notes cover, and a word no note contains is the strongest sign of a question
the vault cannot answer.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

import bm25s
import numpy as np
import scipy.sparse as sp
import Stemmer

from engramrag.embed.tokens import is_cjk, word_runs
from engramrag.extract.korean import analyse
from engramrag.retrieve.lexical import smoothed_idf, terms

if TYPE_CHECKING:
    from engramrag.retrieve.body_terms import Tokens

FOLDER = "notes_bm25"
FREQUENCIES = "document_frequency.json"
# Korean question words and the verb endings of a spoken question: a note never contains "뭐였지", and
# counting their bigrams as missing words would make every Korean question look unanswerable.
KOREAN_QUESTION_WORDS = frozenset(
    ("무엇", "뭐", "뭘", "무슨", "누구", "누가", "누군", "어디", "언제", "어느", "얼마", "어떻게", "왜", "몇")
)
KOREAN_QUESTION_ENDINGS = (
    "였지", "였나", "였어", "이었지", "인가요", "인가", "인지", "했어", "했나", "했지", "하나요", "하나", "하니",
    "해요", "했나요", "나요", "까요", "을까", "일까", "야", "지",
)


def _model() -> bm25s.BM25:
    """An empty ``bm25s`` model. Its sparse matrix is assembled by scipy (bm25s's ``csc_backend`` option): the same
    arrays as its numpy default, 7 s sooner at 100,000 notes (profiled)."""
    return _ArrayScoredBM25(csc_backend="scipy")


@dataclass(frozen=True)
class NoteIds:
    """Each note's token ids, sorted within the note: note ``i`` holds ``ids[offsets[i]:offsets[i + 1]]`` (the form
    ``body_terms.Tokens`` keeps them in)."""

    ids: np.ndarray
    offsets: np.ndarray


@dataclass(frozen=True)
class _IdCorpus:
    """A corpus as ``bm25s.BM25.index`` takes an object: ``ids`` per note and the ``vocab`` (term -> id)."""

    ids: NoteIds
    vocab: dict[str, int]


class _ArrayScoredBM25(bm25s.BM25):
    """``bm25s``'s model, with the score matrix of notes given as :class:`NoteIds` computed on whole arrays.

    ``build_index_from_ids`` is the step bm25s documents for overriding ("if you want to build the index in a
    different way"). Its own version loops over the notes in Python (a ``Counter`` and a few small arrays per note:
    12 of the 15 s of the whole-note BM25 at 100,000 notes); this one takes each note's term counts from the runs
    of its sorted ids and scores every (note, term) at once, with the same arithmetic in the same float types
    (Lucene's variant, bm25s's default), so the arrays are those bm25s computes, to the bit
    (``tests/test_retrieval_units.py`` compares them). Anything else goes to bm25s's own loop."""

    def build_index_from_ids(self, unique_token_ids, corpus_token_ids, show_progress=True, leave_progress=False):
        arrays = isinstance(corpus_token_ids, NoteIds) and len(corpus_token_ids.offsets) > 1
        if not arrays or (self.method, self.idf_method, self.csc_backend) != ("lucene", "lucene", "scipy"):
            if isinstance(corpus_token_ids, NoteIds):
                corpus_token_ids = _id_lists(corpus_token_ids)
            return super().build_index_from_ids(unique_token_ids, corpus_token_ids, show_progress, leave_progress)
        self.nonoccurrence_array = None
        ids = corpus_token_ids.ids.astype(np.int64)
        lengths = np.diff(corpus_token_ids.offsets.astype(np.int64))
        notes, vocabulary = len(lengths), len(unique_token_ids)
        average_length = lengths.mean()
        note_of = np.repeat(np.arange(notes, dtype=np.int64), lengths)
        starts = np.ones(len(ids), dtype=bool)
        starts[1:] = (ids[1:] != ids[:-1]) | (note_of[1:] != note_of[:-1])
        first = np.flatnonzero(starts)
        term_frequency = np.diff(np.append(first, len(ids))).astype(self.dtype)
        term, note = ids[first], note_of[first]
        document_frequency = np.bincount(term, minlength=vocabulary)
        idf = np.zeros(vocabulary, dtype=self.dtype)
        for count in np.unique(document_frequency[document_frequency > 0]).tolist():
            # math.log per distinct frequency, as bm25s computes it per term (numpy's log may differ in the last bit)
            idf[document_frequency == count] = math.log(1 + (notes - count + 0.5) / (count + 0.5))
        k1, b = self.k1, self.b
        saturation = term_frequency / (k1 * ((1 - b) + b * lengths[note] / average_length) + term_frequency)
        scores = (idf[term] * saturation).astype(self.dtype)
        matrix = sp.csc_matrix(
            (scores, (note.astype(self.int_dtype), term.astype(self.int_dtype))),
            shape=(notes, vocabulary), dtype=self.dtype,
        )  # fmt: skip
        return {"data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr, "num_docs": notes}


def _id_lists(notes: NoteIds) -> list[list[int]]:
    flat, bounds = notes.ids.tolist(), notes.offsets.tolist()
    return [flat[start:end] for start, end in pairwise(bounds)]


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def note_terms(text: str) -> list[str]:
    """The terms of a note or a question, in order: :func:`terms`, English words stemmed."""
    return stemmed(terms(text))


def stemmed(listed: Sequence[str]) -> list[str]:
    """Terms (as :func:`terms` gives them) with the English words stemmed."""
    stem = _stemmer().stemWord
    return [stem(term) if term.isascii() and term.isalpha() else term for term in listed]


def question_terms(query: str) -> list[str]:
    """A question's distinct terms: Korean words lose their particle (``analyse``) and spoken question endings,
    Korean question words are dropped, then :func:`note_terms`."""
    words: list[str] = []
    for word in word_runs(query):
        if is_cjk(word):
            length, role = analyse(word)
            if role == "stop":
                continue
            stem = word[:length] if role == "marked" and length else word
            for ending in KOREAN_QUESTION_ENDINGS:
                if stem.endswith(ending) and len(stem) > len(ending):
                    stem = stem[: -len(ending)]
                    break
            if stem in KOREAN_QUESTION_WORDS or any(stem.startswith(w) for w in KOREAN_QUESTION_WORDS if len(w) > 1):
                continue
            words.append(stem)
        else:
            words.append(word)
    return list(dict.fromkeys(note_terms(" ".join(words))))


class NoteIndex:
    """BM25 over whole notes; note ``i`` is the index's ``i``-th passage (``passage_nodes`` order)."""

    def __init__(self, model: bm25s.BM25 | None, frequency: dict[str, int], notes: int) -> None:
        self.model = model
        self.frequency = frequency
        self.notes = notes

    @classmethod
    def build(cls, texts: Sequence[str], tokens: Sequence[Sequence[str]] | None = None) -> NoteIndex:
        """The index of ``texts``; ``tokens``: their :func:`note_terms` when the caller has them already."""
        tokens = list(tokens) if tokens is not None else [note_terms(text) for text in texts]
        frequency: Counter[str] = Counter()
        for listed in tokens:
            frequency.update(set(listed))
        if not any(tokens):
            return cls(None, dict(frequency), len(texts))
        model = _model()
        model.index(tokens, show_progress=False)
        return cls(model, dict(frequency), len(texts))

    @classmethod
    def from_tokens(cls, stems: Tokens) -> NoteIndex:
        """The index of notes given as stem ids (``body_terms.Tokens``): the same model and frequencies as
        :meth:`build` on their stems, without naming millions of strings again."""
        stems = stems.compacted()
        counts = stems.document_frequency()
        frequency = {stem: int(count) for stem, count in zip(stems.vocab, counts.tolist(), strict=True) if count}
        if not len(stems.ids):
            return cls(None, frequency, stems.notes)
        model = _model()
        vocab = {stem: number for number, stem in enumerate(stems.vocab)}
        model.index(_IdCorpus(NoteIds(stems.ids, stems.offsets), vocab), show_progress=False)
        return cls(model, frequency, stems.notes)

    def save(self, folder: Path) -> None:
        target = folder / FOLDER
        target.mkdir(parents=True, exist_ok=True)
        if self.model is not None:
            self.model.save(str(target), show_progress=False)
        (target / FREQUENCIES).write_text(
            json.dumps({"notes": self.notes, "frequency": self.frequency}, ensure_ascii=False)
        )

    @classmethod
    def load(cls, folder: Path) -> NoteIndex:
        target = folder / FOLDER
        stored = json.loads((target / FREQUENCIES).read_text())
        model = None
        if (target / "params.index.json").exists():
            model = bm25s.BM25.load(str(target), mmap=False, show_progress=False, verbosity=0)
        return cls(model, stored["frequency"], int(stored["notes"]))

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        """BM25 of every note for the terms (zeros where nothing matches)."""
        known = [term for term in query_terms if term in self.frequency]
        if self.model is None or not known:
            return np.zeros(self.notes, dtype=np.float32)
        return np.asarray(self.model.get_scores(known), dtype=np.float32)

    def presence(self, query_terms: Sequence[str], notes: Sequence[int]) -> np.ndarray:
        """(len(notes), len(query_terms)) booleans: whether each note contains each term."""
        out = np.zeros((len(notes), len(query_terms)), dtype=bool)
        if self.model is None or not len(notes):
            return out
        rows = np.asarray(notes, dtype=np.int64)
        for column, term in enumerate(query_terms):
            if term in self.frequency:
                out[:, column] = self.model.get_scores([term])[rows] > 0
        return out

    def idf(self, term: str) -> float:
        """Smoothed inverse document frequency; a term no note contains gets the largest value."""
        return smoothed_idf(self.frequency.get(term, 0), self.notes)
