"""The offline default embedder: signed feature hashing of character n-grams and words.

Each word (see :mod:`engramrag.embed.tokens`) contributes itself and the character n-grams of
``<word>`` (the angle brackets mark its boundaries, so prefixes and suffixes are features of their own).
Korean needs nothing special: "박민지" and "박민지는" share the n-grams ``<박``, ``박민``, ``민지``,
``<박민``, ``박민지``; with ``jamo`` the n-grams run over the decomposed letters instead, which also
relates inflected forms such as "했다" and "한다".

Every feature is hashed with keyed BLAKE2b (stable across processes and machines, unlike ``hash()``)
to a bucket and a sign. A hashed feature counted ``tf`` times in a text adds ``±(1 + ln tf)`` to its
bucket (times ``word_weight`` for whole words). Rows are L2-normalised, so a dot product is a cosine.

Speed: a word's hashed features are computed once and cached, and the counting, weighting and summing
of a batch are done with numpy, so the Python work per text is one regex split and a few list extends.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections import Counter
from collections.abc import Sequence
from itertools import chain

import numpy as np

from engramrag.embed.base import HashEmbedderConfig, l2_normalise
from engramrag.embed.tokens import is_cjk, word_runs

VERSION = "1"
_WORD = "\x01"  # prefix of whole-word features, so the word "abc" and the n-gram "abc" stay apart
_EMPTY = "\x02"  # the single feature of a text without words: its vector is a unit vector, never zero
_BATCH = 4096  # texts per accumulation step, bounding the dense scratch matrix
_CACHE_LIMIT = 200_000  # distinct words kept in the feature cache


class HashEmbedder:
    """Deterministic multilingual embedder; no model, no downloads."""

    def __init__(self, config: HashEmbedderConfig | None = None) -> None:
        self.config = config or HashEmbedderConfig()
        self._key = self.config.seed.encode("utf-8")[:64]  # BLAKE2b keys are at most 64 bytes
        self._word_codes: dict[str, tuple[int, ...]] = {}
        self._feature_codes: dict[str, int] = {}  # n-grams recur across words: hash each once
        self._empty_code = self._code(_EMPTY)

    @property
    def name(self) -> str:
        c = self.config
        jamo = "/jamo" if c.jamo else ""
        return f"hash/v{VERSION}/d{c.dimension}/n{c.ngram_min}-{c.ngram_max}/w{c.word_weight:g}{jamo}/{c.seed}"

    @property
    def dimension(self) -> int:
        return self.config.dimension

    def features(self, text: str) -> Counter[str]:
        """The feature counts of one text, before hashing (for tests and for explaining a similarity)."""
        found = Counter(chain.from_iterable(self._word_features(word) for word in word_runs(text)))
        return found or Counter({_EMPTY: 1})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), _BATCH):
            batch = texts[start : start + _BATCH]
            out[start : start + len(batch)] = self._embed_batch(batch)
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        if len(self._word_codes) > _CACHE_LIMIT:
            self._word_codes.clear()
            self._feature_codes.clear()
        codes: list[int] = []
        lengths: list[int] = []
        for text in texts:
            before = len(codes)
            for word in word_runs(text):
                cached = self._word_codes.get(word)
                if cached is None:
                    cached = self._word_codes[word] = tuple(map(self._cached_code, self._word_features(word)))
                codes.extend(cached)
            if len(codes) == before:
                codes.append(self._empty_code)
            lengths.append(len(codes) - before)
        dim = self.dimension
        slots = 4 * dim  # a code is bucket * 4 + sign bit * 2 + whole-word bit
        rows = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
        keys, tf = np.unique(rows * slots + np.asarray(codes, dtype=np.int64), return_counts=True)
        rows, code = np.divmod(keys, slots)
        weight = 1.0 + np.log(tf)
        weight[(code & 1) == 1] *= self.config.word_weight
        weight[(code & 2) == 2] *= -1.0
        dense = np.bincount(rows * dim + (code >> 2), weights=weight, minlength=len(texts) * dim)
        return l2_normalise(dense.reshape(len(texts), dim))

    def _word_features(self, word: str) -> list[str]:
        c = self.config
        letters = unicodedata.normalize("NFD", word) if c.jamo and is_cjk(word) else word
        marked = f"<{letters}>"
        length = len(marked)
        found = [_WORD + word]
        for n in range(c.ngram_min, min(c.ngram_max, length) + 1):
            found.extend([marked[i : i + n] for i in range(length - n + 1)])
        return found

    def _cached_code(self, feature: str) -> int:
        code = self._feature_codes.get(feature)
        if code is None:
            code = self._feature_codes[feature] = self._code(feature)
        return code

    def _code(self, feature: str) -> int:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8, key=self._key).digest()
        value = int.from_bytes(digest, "little")
        bucket, sign = value % self.config.dimension, value >> 63
        return bucket * 4 + sign * 2 + (1 if feature.startswith(_WORD) else 0)
