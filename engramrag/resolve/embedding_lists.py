"""The embedding leg of blocking: each key's nearest later keys by label vector, kept from one run to the next.

Among each key's ``embedding_neighbours`` most similar later keys (in key order, so each pair is met once), those
at or above a search cut; of these, the pairs whose full cosine reaches the cut are proposed
(``resolve.blocking``). Vectors longer than ``embedding_projection`` are searched after a fixed random rotation to
that length, with the cut lowered by ``embedding_projection_margin``.

Searching every key against every later key is quadratic: 5 s at 10,000 notes (37,000 keys), minutes at 100,000,
and an edit changes a handful of keys. So the lists are a function of the vectors alone (a hit's similarity is
recomputed in float64 and rounded to ``DIGITS`` decimals; ties go to the earlier key) and are kept between runs
(``<home>/resolution/embedding_lists.npz``): a key whose vector did not change keeps its list, merged with the
keys that are new or changed, unless its list was full and lost a member (then a key beyond it may belong, and the
key is searched again). :func:`update_lists` gives exactly what :func:`search_lists` gives over the whole set.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from engramrag.npz_files import joined_texts, load_arrays, save_arrays, split_texts
from engramrag.resolve.candidate_config import CandidateConfig
from engramrag.retrieve.neighbours import equal_rows, equal_values, match_keys
from engramrag.run_memo import RunMemo, read_only

BLOCK = 2048
DIGITS = 6
# Float32 products of unit vectors are off by about 1e-7: hits are taken this much below the cut and below each
# row's k-th float32 similarity, then decided on their float64 similarity.
PREFILTER = 2e-5
FILE = "embedding_lists.npz"
CUTS_FILE = "embedding_cuts.npz"


@dataclass(frozen=True)
class SearchSettings:
    cut: float  # full cosine a proposed pair reaches
    search_cut: float  # similarity of the searched (maybe rotated) vectors a listed key reaches
    k: int
    rotate_to: int | None  # length of the rotated vectors, None when searched as they are

    @property
    def fingerprint(self) -> str:
        return json.dumps([self.cut, self.search_cut, self.k, self.rotate_to, DIGITS])


@dataclass(frozen=True)
class NeighbourLists:
    keys: list[str]  # sorted
    digests: list[str]  # per key, a hash of its vector ("" where it has none)
    indices: np.ndarray  # (n, k) int64 into keys, best first; -1 where fewer than k later keys qualify
    similarities: np.ndarray  # (n, k) float64, rounded; -inf where absent
    settings: str  # SearchSettings.fingerprint the lists were searched with

    def save(self, folder: Path) -> None:
        save_arrays(folder, FILE, keys=joined_texts(self.keys), digests=joined_texts(self.digests),
                     indices=self.indices, similarities=self.similarities, settings=joined_texts([self.settings]))

    @classmethod
    def load(cls, folder: Path) -> NeighbourLists | None:
        # None when missing or unreadable: searched afresh and written again.
        stored = load_arrays(folder / FILE, ("keys", "digests", "indices", "similarities", "settings"))
        if stored is None:
            return None
        keys, digests = split_texts(stored["keys"]), split_texts(stored["digests"])
        lists = cls(keys, digests, stored["indices"], stored["similarities"], split_texts(stored["settings"])[0])
        return lists if len(keys) == len(digests) == lists.indices.shape[0] else None


@dataclass(frozen=True)
class ListUpdate:
    lists: NeighbourLists
    searched: int  # keys searched against every later key
    kept: int  # keys whose list was kept and merged with the new or changed keys only
    unchanged: bool = False  # the previous lists, as they were (nothing to write again)


@dataclass
class ListCache:
    """The lists a run starts from (``previous``: the last run's, or None) and, after blocking, this run's; the same
    for the listed pairs' outcomes (``previous_cuts``, ``cuts``)."""

    previous: NeighbourLists | None = None
    update: ListUpdate | None = None
    previous_cuts: PairCuts | None = None
    cuts: PairCuts | None = None

    def save(self, folder: Path) -> None:
        """This run's lists and outcomes, where they are not the previous ones taken as they were (the file's)."""
        if self.update is not None and not self.update.unchanged:
            self.update.lists.save(folder)
        taken = self.previous_cuts is not None and self.cuts is not None and self.cuts.mixed is self.previous_cuts.mixed
        if self.cuts is not None and not taken:
            self.cuts.save(folder)


def search_settings(config: CandidateConfig, dimension: int) -> SearchSettings | None:
    """The cuts of the embedding leg, or None when no cosine can lift a pair to ``min_score`` (with at most the
    shared-documents feature beside it; every other feature has its own index)."""
    needed = (1.0 - (1.0 - config.min_score) / (1.0 - config.shared_documents_weight)) / config.embedding_weight
    if needed > 1.0 or not config.embedding_neighbours:
        return None
    cut = config.embedding_floor + max(0.0, needed) * (1.0 - config.embedding_floor)
    if dimension > config.embedding_projection:
        return SearchSettings(cut, cut - config.embedding_projection_margin, config.embedding_neighbours,
                              config.embedding_projection)  # fmt: skip
    return SearchSettings(cut, cut, config.embedding_neighbours, None)


def searched_vectors(vectors: np.ndarray, present: np.ndarray, settings: SearchSettings) -> np.ndarray:
    """The vectors the lists are searched on (float64 unit rows, zero where a key has no vector): rotated by a
    fixed random rotation when ``settings.rotate_to`` is set (cosines kept to about 1/sqrt(length))."""
    if settings.rotate_to is None:
        matrix = np.asarray(vectors, dtype=np.float64)
    else:
        gaussian = np.random.default_rng(0).standard_normal((vectors.shape[1], settings.rotate_to))
        rotation = np.linalg.qr(gaussian)[0]
        matrix = np.empty((vectors.shape[0], settings.rotate_to), dtype=np.float64)
        for start in range(0, vectors.shape[0], BLOCK):  # a block at a time: no float64 copy of all long vectors
            matrix[start : start + BLOCK] = np.asarray(vectors[start : start + BLOCK], dtype=np.float64) @ rotation
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return np.where(present[:, None], matrix, 0.0)


def vector_digests(vectors: np.ndarray, present: np.ndarray, keys: list[str] | None = None) -> list[str]:
    """Per row, a digest of its vector ("" where ``present`` is False). Given the rows' ``keys``, a key whose row is
    the one this process digested last for it (compared element by element, a block of rows at a time) keeps that
    digest: hashing 200,000 rows of 512 floats took 2 s of every run at 100,000 notes."""
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    digests: list[str | None] = [None] * rows.shape[0]
    last = _last_digests
    if (keys is not None and rows is last.rows and not rows.flags.writeable and keys == last.keys
            and np.array_equal(present, last.present)):  # fmt: skip
        return list(last.digests)  # the very rows digested last, which nobody can have changed since (20 ms)
    if keys is not None and last.keys is not None and last.rows is not None and last.rows.shape[1:] == rows.shape[1:]:
        same_rows = equal_rows(last.rows, rows)
        _, old_of_new, _ = match_keys(
            last.keys, keys, lambda old, new: same_rows(old, new) & (last.present[old] == present[new])
        )  # fmt: skip
        for new in np.flatnonzero(old_of_new >= 0).tolist():
            digests[new] = last.digests[old_of_new[new]]
    for i, digest in enumerate(digests):
        if digest is None:
            digests[i] = hashlib.blake2b(rows[i].tobytes(), digest_size=12).hexdigest() if present[i] else ""
    if keys is not None:
        kept = rows if not rows.flags.writeable else rows.copy()  # a caller may still change a writable matrix
        last.keys, last.rows, last.present, last.digests = list(keys), kept, np.asarray(present, dtype=bool), digests
    return digests


@dataclass
class _LastDigests:
    """The rows (by key) this process digested last, and their digests."""

    keys: list[str] | None = None
    rows: np.ndarray | None = None
    present: np.ndarray | None = None
    digests: list[str] = field(default_factory=list)


_last_digests = _LastDigests()


def search_lists(keys: list[str], digests: list[str], searched: np.ndarray, settings: SearchSettings) -> NeighbourLists:
    """Every key's list, each key searched against all later keys."""
    indices, similarities = _rows_against_later(searched, np.arange(len(keys)), settings)
    return NeighbourLists(list(keys), list(digests), indices, similarities, settings.fingerprint)


def update_lists(
    previous: NeighbourLists | None, keys: list[str], digests: list[str],
    searched: np.ndarray | Callable[[], np.ndarray], settings: SearchSettings,
) -> ListUpdate:  # fmt: skip
    """The lists of ``keys`` from the ``previous`` run's: equal to :func:`search_lists` over the whole set.
    ``searched``: the vectors searched on, or the function that gives them, called only when a key is new or its
    vector changed (an edit that adds no key keeps every list, and rotating every vector took 0.6 s at 10,000
    notes)."""
    n, k = len(keys), _width(settings, len(keys))
    vectors = functools.cache(searched) if callable(searched) else lambda: searched
    if previous is None or previous.settings != settings.fingerprint or previous.indices.shape[1] != k:
        return ListUpdate(search_lists(keys, digests, vectors(), settings), n, 0)
    new_of_old, old_of_new, changed = match_keys(previous.keys, keys, equal_values(previous.digests, digests))
    if n == len(previous.keys) and not changed.any():
        # The same keys with the same vectors: the same lists (merging each with nothing keeps its order).
        return ListUpdate(NeighbourLists(list(keys), list(digests), previous.indices, previous.similarities,
                                         settings.fingerprint), 0, n, unchanged=True)  # fmt: skip
    kept = np.nonzero(~changed)[0]
    old_lists = previous.indices[old_of_new[kept]]
    mapped = np.where(old_lists >= 0, new_of_old[np.maximum(old_lists, 0)], -1)
    # A full list that lost a member may now admit a key that was beyond it; a list that was not full held every
    # qualifying later key, so the new and changed keys are all it can gain.
    full = (old_lists >= 0).sum(axis=1) == k
    lost = ((old_lists >= 0) & (mapped < 0)).any(axis=1)
    again = kept[full & lost]
    merge_rows, merge_lists = kept[~(full & lost)], mapped[~(full & lost)]
    merge_sims = np.where(merge_lists >= 0, previous.similarities[old_of_new[merge_rows]], -np.inf)

    indices = np.full((n, k), -1, dtype=np.int64)
    similarities = np.full((n, k), -np.inf, dtype=np.float64)
    recompute = np.sort(np.concatenate([np.nonzero(changed)[0], again]))
    if len(recompute):
        indices[recompute], similarities[recompute] = _rows_against_later(vectors(), recompute, settings)
    fresh = np.nonzero(changed)[0]
    if len(merge_rows) and len(fresh):
        extra_index, extra_sims = _hits(vectors(), merge_rows, fresh, settings)
        candidates = np.concatenate([merge_lists, extra_index], axis=1)
        scores = np.concatenate([merge_sims, extra_sims], axis=1)
        indices[merge_rows], similarities[merge_rows] = _best(candidates, scores, k)
    elif len(merge_rows):
        indices[merge_rows], similarities[merge_rows] = _best(merge_lists, merge_sims, k)
    return ListUpdate(NeighbourLists(list(keys), list(digests), indices, similarities, settings.fingerprint),
                      len(recompute), len(merge_rows))  # fmt: skip


def proposed_pairs(
    lists: NeighbourLists, vectors: np.ndarray, settings: SearchSettings, cache: ListCache | None = None
) -> set[tuple[int, int]]:
    """The pairs of ``proposed_rows`` as a set of (earlier, later)."""
    rows, cols = proposed_rows(lists, vectors, settings, cache)
    return set(zip(rows.tolist(), cols.tolist(), strict=True))


def proposed_rows(
    lists: NeighbourLists, vectors: np.ndarray, settings: SearchSettings, cache: ListCache | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The listed pairs (earlier, later) whose full cosine reaches the cut, as two arrays (a pair listed by both its
    keys comes twice). A pair of two vectors whose outcome the last run recorded (``cache.previous_cuts``) keeps it;
    the others are compared (a block of pairs at a time: the pairs' vectors side by side would take gigabytes at
    100,000 notes). This run's outcomes go to ``cache.cuts``."""
    halves = _digest_halves(lists.digests)
    # The same lists of the same vectors as the last call: its pairs and outcomes (searching 370,000 pairs' outcomes
    # among the kept ones took 40 ms of each edit at 10,000 notes).
    inputs = (lists.indices.tobytes(), lists.indices.shape, halves.tobytes(), settings.fingerprint)
    with _PROPOSED.run() as made:
        found, cuts = made(inputs, lambda: _proposed(lists, vectors, settings, halves, cache))
    if cache is not None:
        cache.cuts = cuts if cache.cuts is cuts else replace(cuts, compared=0)
    return found


def _proposed(
    lists: NeighbourLists, vectors: np.ndarray, settings: SearchSettings, halves: np.ndarray, cache: ListCache | None
) -> tuple[tuple[np.ndarray, np.ndarray], PairCuts]:  # fmt: skip
    """``proposed_rows``' pairs, and the outcomes of every listed pair (``cache.cuts``, also set there)."""
    cut = round(settings.cut, DIGITS)
    n, width = lists.indices.shape
    rows = np.repeat(np.arange(n, dtype=np.int64), width)
    cols = lists.indices.reshape(-1)
    rows, cols = rows[cols >= 0], cols[cols >= 0]
    left, right = halves[rows], halves[cols]
    reached = np.zeros(len(rows), dtype=bool)
    known = np.zeros(len(rows), dtype=bool)
    previous = cache.previous_cuts if cache is not None else None
    if previous is not None and previous.settings == settings.fingerprint:
        known, reached = previous.outcomes(left, right)
    unknown = np.flatnonzero(~known)
    if cache is not None and previous is not None and not len(unknown) and len(previous.mixed) == len(rows):
        # Every listed pair's outcome was kept, and as many were kept as are listed: the kept outcomes serve as
        # they are (an outcome is a function of the two vectors), not sorted and written again.
        cache.cuts = replace(previous, compared=0)
        return (read_only(rows[reached]), read_only(cols[reached])), cache.cuts
    for start in range(0, len(unknown), BLOCK * width):
        chosen = unknown[start : start + BLOCK * width]
        first = np.asarray(vectors[rows[chosen]], dtype=np.float64)
        cosine = np.einsum("ij,ij->i", first, np.asarray(vectors[cols[chosen]], dtype=np.float64))
        reached[chosen] = np.round(cosine, DIGITS) >= cut
    cuts = PairCuts.of(left, right, reached, settings.fingerprint, compared=len(unknown))
    if cache is not None:
        cache.cuts = cuts
    return (read_only(rows[reached]), read_only(cols[reached])), cuts


_PROPOSED: RunMemo[tuple, tuple[tuple[np.ndarray, np.ndarray], PairCuts]] = RunMemo()


@dataclass(frozen=True)
class PairCuts:
    """Whether each listed pair's full cosine reached the cut, by the digests of its two vectors (their first 64
    bits): kept from one run to the next (``<home>/resolution/embedding_cuts.npz``), so an edit compares only the
    pairs with a new or changed vector. The 370,000 listed pairs' vectors side by side cost 1.7 s at 10,000 notes.
    The outcome is a function of the two vectors (and the cut, in ``settings``) alone, so a kept one is what
    comparing them gives."""

    mixed: np.ndarray  # (m,) uint64, sorted: the two halves mixed into one key to search by
    left: np.ndarray  # (m,) uint64: the earlier key's vector digest
    right: np.ndarray  # (m,) uint64: the later key's
    reached: np.ndarray  # (m,) bool
    settings: str  # SearchSettings.fingerprint
    compared: int = 0  # pairs compared by this run (the rest were known)

    @classmethod
    def of(cls, left: np.ndarray, right: np.ndarray, reached: np.ndarray, settings: str, compared: int) -> PairCuts:
        mixed = _mixed(left, right)
        order = np.argsort(mixed, kind="stable")
        return cls(mixed[order], left[order], right[order], reached[order], settings, compared)

    def outcomes(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(known, reached) for the pairs (``left``, ``right``): known only where both digests match a kept pair."""
        if not len(self.mixed):
            return np.zeros(len(left), dtype=bool), np.zeros(len(left), dtype=bool)
        mixed = _mixed(left, right)
        at = np.minimum(np.searchsorted(self.mixed, mixed), len(self.mixed) - 1)
        known = (self.mixed[at] == mixed) & (self.left[at] == left) & (self.right[at] == right)
        return known, known & self.reached[at]

    def save(self, folder: Path) -> None:
        save_arrays(folder, CUTS_FILE, mixed=self.mixed, left=self.left, right=self.right, reached=self.reached,
                     settings=joined_texts([self.settings]))  # fmt: skip

    @classmethod
    def load(cls, folder: Path) -> PairCuts | None:
        # None when missing or unreadable: every pair is compared again.
        stored = load_arrays(folder / CUTS_FILE, ("mixed", "left", "right", "reached", "settings"))
        if stored is None:
            return None
        found = cls(stored["mixed"], stored["left"], stored["right"], stored["reached"],
                    split_texts(stored["settings"])[0])  # fmt: skip
        return found if len(found.mixed) == len(found.left) == len(found.right) == len(found.reached) else None


def _digest_halves(digests: list[str]) -> np.ndarray:
    """The first 64 bits of each vector digest (``vector_digests``; 0 for a key without a vector)."""
    return np.array([int(digest[:16], 16) if digest else 0 for digest in digests], dtype=np.uint64)


def _mixed(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return left * np.uint64(0x9E3779B97F4A7C15) + right  # wraps modulo 2**64; ties are told apart by both halves


def _rows_against_later(
    searched: np.ndarray, rows: np.ndarray, settings: SearchSettings
) -> tuple[np.ndarray, np.ndarray]:
    """The lists of ``rows`` (sorted), each searched against every later key."""
    n, k = searched.shape[0], _width(settings, searched.shape[0])
    narrow = searched.astype(np.float32)
    transposed = np.ascontiguousarray(narrow.T)
    indices = np.full((len(rows), k), -1, dtype=np.int64)
    similarities = np.full((len(rows), k), -np.inf, dtype=np.float64)
    height = max(1, min(BLOCK, len(rows)))
    products = np.empty((height, n), dtype=np.float32)  # reused: fresh pages cost more than the BLAS
    hits = np.empty((height, n), dtype=bool)
    for start in range(0, len(rows), BLOCK):
        chosen = rows[start : start + BLOCK]
        first = int(chosen[0]) + 1  # no column at or before the block's first row can be later than any of its rows
        if first >= n:
            continue
        block, found = products[: len(chosen), : n - first], hits[: len(chosen), : n - first]
        np.matmul(narrow[chosen], transposed[:, first:], out=block)
        near_diagonal = int(chosen[-1]) - first + 1  # only these columns can be at or before one of the rows
        if near_diagonal > 0:
            square = block[:, :near_diagonal]
            square[np.arange(first, first + near_diagonal)[None, :] <= chosen[:, None]] = -np.inf
        np.greater_equal(block, settings.search_cut - PREFILTER, out=found)
        result = _ranked_hits(block, found, chosen, first, searched, settings)
        indices[start : start + len(chosen)], similarities[start : start + len(chosen)] = result
    return indices, similarities


def _hits(
    searched: np.ndarray, rows: np.ndarray, columns: np.ndarray, settings: SearchSettings
) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``rows``, its up to k best hits among ``columns`` later than it (padded with -1 / -inf)."""
    k = _width(settings, searched.shape[0])
    indices = np.full((len(rows), k), -1, dtype=np.int64)
    similarities = np.full((len(rows), k), -np.inf, dtype=np.float64)
    if not len(columns):
        return indices, similarities
    narrow = searched.astype(np.float32)
    for start in range(0, len(rows), BLOCK):
        chosen = rows[start : start + BLOCK]
        block = narrow[chosen] @ narrow[columns].T
        block[columns[None, :] <= chosen[:, None]] = -np.inf
        found = block >= settings.search_cut - PREFILTER
        found_index, found_sims = _ranked_hits(block, found, chosen, 0, searched, settings, columns)
        indices[start : start + len(chosen)], similarities[start : start + len(chosen)] = found_index, found_sims
    return indices, similarities


def _ranked_hits(
    block: np.ndarray, found: np.ndarray, chosen: np.ndarray, offset: int, searched: np.ndarray,
    settings: SearchSettings, columns: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Per row of a float32 ``block`` of similarities (``found``: where it is near the cut or above), its k best
    hits by float64 similarity (rounded), at or above the search cut, ties to the earlier key. Column c of the
    block is key ``offset + c`` (or ``columns[c]``)."""
    k = _width(settings, searched.shape[0])
    busy = np.flatnonzero(found.any(axis=1))
    local, cols = np.nonzero(found[busy])  # a contiguous copy of the rows with hits: far faster than a strided view
    local = busy[local]
    rough = block[local, cols]
    order = np.lexsort((-rough, local))
    local, cols, rough = local[order], cols[order], rough[order]
    rank = np.arange(len(local)) - np.searchsorted(local, local, side="left")
    # Only hits within float32's error of a row's k-th float32 similarity can be among its k best.
    kth = np.full(len(chosen), -np.inf, dtype=np.float32)
    at_k = rank == k - 1
    kth[local[at_k]] = rough[at_k]
    near = rough >= kth[local] - PREFILTER
    local, cols = local[near], cols[near]
    keys = cols + offset if columns is None else columns[cols]
    rows = chosen[local]
    exact = np.round(np.einsum("ij,ij->i", searched[rows], searched[keys]), DIGITS) if len(rows) else np.zeros(0)
    keep = exact >= round(settings.search_cut, DIGITS)
    local, keys, exact = local[keep], keys[keep], exact[keep]
    order = np.lexsort((keys, -exact, local))  # by row, then most similar, then earlier key
    local, keys, exact = local[order], keys[order], exact[order]
    rank = np.arange(len(local)) - np.searchsorted(local, local, side="left")
    top = rank < k
    indices = np.full((len(chosen), k), -1, dtype=np.int64)
    similarities = np.full((len(chosen), k), -np.inf, dtype=np.float64)
    indices[local[top], rank[top]], similarities[local[top], rank[top]] = keys[top], exact[top]
    return indices, similarities


def _width(settings: SearchSettings, keys: int) -> int:
    """The length of a list: k, or fewer when there are fewer other keys."""
    return max(1, min(settings.k, keys - 1))


def _best(candidates: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the k candidates of highest score, ties to the lower index; absent ones (-1) last."""
    scores = np.where(candidates >= 0, scores, -np.inf)
    order = np.lexsort((np.where(candidates >= 0, candidates, np.iinfo(np.int64).max), -scores), axis=1)
    top = np.take_along_axis(candidates, order, axis=1)[:, :k]
    top_scores = np.take_along_axis(scores, order, axis=1)[:, :k]
    if top.shape[1] < k:
        pad = k - top.shape[1]
        top = np.pad(top, ((0, 0), (0, pad)), constant_values=-1)
        top_scores = np.pad(top_scores, ((0, 0), (0, pad)), constant_values=-np.inf)
    return np.where(np.isfinite(top_scores), top, -1), np.where(np.isfinite(top_scores), top_scores, -np.inf)
