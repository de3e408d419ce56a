"""Nearest entity labels: synonym edges and the local density CSLS subtracts.

Exact k-nearest neighbours over the unique labels' unit vectors. Candidates are found by blocked float32 matrix
products (BLAS), so memory stays at one block of similarities whatever the number of labels; the similarity of
each candidate pair is then recomputed in float64 and rounded to ``DIGITS`` decimals, and each label's neighbours
are ordered by (similarity descending, index ascending). That makes the result a function of the vectors alone,
not of how the products were blocked, so :func:`update_neighbours` can keep the lists of labels that did not
change and still give exactly what :func:`nearest_neighbours` gives over the whole set.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

BLOCK = 2048
GROUP = 64  # columns per group when choosing a row's candidates (_widest)
DIGITS = 6
# Float32 products are off by about 1e-7: candidates are taken this much wider than k, and a row whose k-th
# similarity lies within MARGIN of the widest candidate's is computed exactly over all labels.
SLACK = 3
MARGIN = 3e-5  # float32 error bound of a 512-dimensional dot product of unit vectors


@dataclass(frozen=True)
class Neighbours:
    indices: np.ndarray  # (n, k) int64, nearest first; -1 where fewer than k other labels exist
    similarities: np.ndarray  # (n, k) float32, aligned with indices; -inf where absent

    def density(self, k: int) -> np.ndarray:
        """Mean similarity of each label to its ``k`` nearest other labels (0 for a label without any)."""
        top = self.similarities[:, :k]
        valid = np.isfinite(top)
        counts = valid.sum(axis=1)
        sums = np.where(valid, top, 0.0).sum(axis=1)
        return np.divide(sums, np.maximum(counts, 1)).astype(np.float32)

    def pairs_above(self, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unordered pairs (i < j) with similarity >= threshold among each label's neighbours."""
        rows = np.repeat(np.arange(self.indices.shape[0]), self.indices.shape[1])
        cols = self.indices.reshape(-1)
        sims = self.similarities.reshape(-1)
        keep = (cols >= 0) & (sims >= threshold)
        a, b, s = rows[keep], cols[keep], sims[keep]
        low, high = np.minimum(a, b), np.maximum(a, b)
        key = low.astype(np.int64) * max(1, self.indices.shape[0]) + high
        _, first = np.unique(key, return_index=True)
        return low[first], high[first], s[first]


@dataclass(frozen=True)
class NeighbourUpdate:
    neighbours: Neighbours
    recomputed: int  # labels whose lists were computed against every label
    kept: int  # labels whose lists were kept and merged with the changed labels only


def nearest_neighbours(vectors: np.ndarray, k: int) -> Neighbours:
    """The ``k`` most similar other rows of each row of ``vectors`` (unit rows, so dot = cosine)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    return _rows_against_all(vectors, np.arange(vectors.shape[0]), k)


def update_neighbours(
    previous: Neighbours, previous_keys: list[str], previous_vectors: np.ndarray, keys: list[str],
    vectors: np.ndarray, k: int,
) -> NeighbourUpdate:  # fmt: skip
    """The neighbours of ``keys``/``vectors`` (keys sorted, as the index numbers its nodes), computed from the
    ``previous`` lists: a label whose vector is unchanged and none of whose neighbours left or changed keeps its
    list, merged with the labels that are new or changed; every other label is computed against all. Equal to
    ``nearest_neighbours(vectors, k)``."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n = vectors.shape[0]
    if previous.indices.shape[1] != k:
        return NeighbourUpdate(nearest_neighbours(vectors, k), n, 0)
    if vectors is previous_vectors and not vectors.flags.writeable and keys == previous_keys:
        # The very read-only vectors of the same keys (a resident build's edit that named nothing new): the same lists.
        return NeighbourUpdate(previous, 0, n)
    new_of_old, old_of_new, changed = match_keys(previous_keys, keys, equal_rows(previous_vectors, vectors))
    # A kept label's old list, renumbered; a neighbour that left or changed makes its list unusable.
    kept_rows = np.nonzero(~changed)[0]
    old_lists = previous.indices[old_of_new[kept_rows]]
    mapped = np.where(old_lists >= 0, new_of_old[np.maximum(old_lists, 0)], -1)
    lost = ((old_lists >= 0) & (mapped < 0)).any(axis=1)
    recompute = np.sort(np.concatenate([np.nonzero(changed)[0], kept_rows[lost]]))
    merge_rows, merge_lists = kept_rows[~lost], mapped[~lost]
    merge_sims = _exact(previous.similarities[old_of_new[merge_rows]].astype(np.float64))  # stored as float32

    indices = np.full((n, k), -1, dtype=np.int64)
    similarities = np.full((n, k), -np.inf, dtype=np.float32)
    if len(recompute):
        full = _rows_against_all(vectors, recompute, k)
        indices[recompute], similarities[recompute] = full.indices, full.similarities
    fresh = np.nonzero(changed)[0]
    width = min(k, max(0, n - 1))
    if len(merge_rows) and width:
        reach = _reached(vectors, merge_rows, merge_sims[:, width - 1], fresh)
        for rows, with_fresh in ((np.nonzero(~reach)[0], False), (np.nonzero(reach)[0], True)):
            at, candidates, scores = merge_rows[rows], merge_lists[rows], merge_sims[rows]
            if with_fresh and len(rows):
                extra = _exact(vectors[at].astype(np.float64) @ vectors[fresh].astype(np.float64).T)
                candidates = np.concatenate([candidates, np.broadcast_to(fresh, (len(rows), len(fresh)))], axis=1)
                scores = np.concatenate([scores, extra], axis=1)
                candidates = np.where(np.isfinite(scores), candidates, -1)
            top, top_sims = _ordered(candidates, scores, width)
            indices[at, : top.shape[1]], similarities[at, : top.shape[1]] = top, top_sims
    return NeighbourUpdate(Neighbours(indices, similarities), len(recompute), len(merge_rows))


def _reached(vectors: np.ndarray, rows: np.ndarray, kth: np.ndarray, fresh: np.ndarray) -> np.ndarray:
    """Which of ``rows`` (kept lists whose ``kth`` similarity is their last place's) a ``fresh`` label could enter:
    one whose float32 similarity comes within twice the float32 error (and the rounding) of that place, or any
    when the list is not full. Only those are compared with the fresh labels in float64 (every kept row in float64
    was 0.39 s of an edit that named something new at 10,000 notes)."""
    if not len(fresh):
        return np.zeros(len(rows), dtype=bool)
    approximate = (vectors @ vectors[fresh].T)[rows]  # all rows at once: no copy of the kept rows' vectors
    return ~np.isfinite(kth) | (approximate.max(axis=1) >= kth - 2 * MARGIN)


def match_keys(
    previous_keys: Sequence[Hashable], keys: Sequence[Hashable],
    unchanged: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Which rows a list update can keep: per previous row its new row (-1: gone or changed), per new row its
    previous row (-1: new or changed), and which new rows are new or changed. A key is kept when it is in both
    lists and ``unchanged(previous_rows, new_rows)`` (arrays of row numbers, one pair per key in both) is True
    for it: asked once for all of them, so it compares whole columns (a call per key was 0.25 s of every index at
    10,000 notes)."""
    if len(previous_keys) == len(keys) and all(map(operator.eq, previous_keys, keys)):
        old_of_key = np.arange(len(keys), dtype=np.int64)  # the same keys (an edit's usual case): no index of them
    else:
        old_index = {key: i for i, key in enumerate(previous_keys)}
        old_of_key = np.fromiter((old_index.get(key, -1) for key in keys), dtype=np.int64, count=len(keys))
    both = np.nonzero(old_of_key >= 0)[0]
    kept = both[np.asarray(unchanged(old_of_key[both], both), dtype=bool)] if len(both) else both
    new_of_old = np.full(len(previous_keys), -1, dtype=np.int64)
    new_of_old[old_of_key[kept]] = kept
    changed = np.ones(len(keys), dtype=bool)
    changed[kept] = False
    old_of_new = np.full(len(keys), -1, dtype=np.int64)
    old_of_new[kept] = old_of_key[kept]
    return new_of_old, old_of_new, changed


def equal_rows(previous: np.ndarray, current: np.ndarray, chunk: int = 8192) -> Callable[[np.ndarray, np.ndarray],
                                                                                      np.ndarray]:  # fmt: skip
    """``match_keys``' test for rows of two matrices that must be equal element by element, compared a block of
    rows at a time (two copies of every row at once would be 1.2 GB at 100,000 notes). A block whose rows follow
    each other on both sides (the usual edit keeps every key, so every block) is compared in place, not copied
    first."""

    def unchanged(old: np.ndarray, new: np.ndarray) -> np.ndarray:
        if previous.shape[1:] != current.shape[1:]:
            return np.zeros(len(old), dtype=bool)
        found = np.empty(len(old), dtype=bool)
        for start in range(0, len(old), chunk):
            part = slice(start, start + chunk)
            before, after = _rows(previous, old[part]), _rows(current, new[part])
            found[part] = (before == after).all(axis=1)
        return found

    return unchanged


def _rows(matrix: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``matrix[rows]``: a view when the rows follow each other, else a copy (the ends are compared first: a block
    with a gap is told without a pass over it)."""
    if len(rows) and int(rows[-1]) - int(rows[0]) == len(rows) - 1 and (np.diff(rows) == 1).all():
        return matrix[int(rows[0]) : int(rows[-1]) + 1]
    return matrix[rows]


def equal_values(previous: Sequence[Hashable], current: Sequence[Hashable]) -> Callable[[np.ndarray, np.ndarray],
                                                                                    np.ndarray]:  # fmt: skip
    """``match_keys``' test for two lists whose values at the matched rows must be equal (digests, say)."""

    def unchanged(old: np.ndarray, new: np.ndarray) -> np.ndarray:
        before, after = np.asarray(previous, dtype=object), np.asarray(current, dtype=object)
        return before[old] == after[new]

    return unchanged


def _rows_against_all(vectors: np.ndarray, rows: np.ndarray, k: int) -> Neighbours:
    """Neighbours of ``vectors[rows]`` among all rows, exactly ordered (see the module docstring)."""
    n = vectors.shape[0]
    width = max(0, min(k, n - 1))
    indices = np.full((len(rows), k), -1, dtype=np.int64)
    similarities = np.full((len(rows), k), -np.inf, dtype=np.float32)
    if width == 0:
        return Neighbours(indices, similarities)
    wide = min(n - 1, width * SLACK)
    exact_all: np.ndarray | None = None  # every label in float64, made once if some row needs it
    for start in range(0, len(rows), BLOCK):
        chosen = rows[start : start + BLOCK]
        block = vectors[chosen] @ vectors.T
        block[np.arange(len(chosen)), chosen] = -np.inf  # a label is not its own neighbour
        candidates = _widest(block, wide)
        floor = np.take_along_axis(block, candidates, axis=1).min(axis=1)
        top, top_sims = _ordered(candidates, _pair_similarities(vectors, chosen, candidates), width)
        if wide < n - 1:
            # Where the k-th exact similarity comes near the widest float32 candidate's, a label outside the
            # candidates could belong: those rows are computed exactly against every label.
            unsure = np.nonzero(top_sims[:, -1] - floor <= MARGIN)[0]
            if len(unsure):
                exact_all = vectors.astype(np.float64) if exact_all is None else exact_all
                exact = _exact(exact_all[chosen[unsure]] @ exact_all.T)
                exact[np.arange(len(unsure)), chosen[unsure]] = -np.inf
                everyone = np.broadcast_to(np.arange(n), exact.shape)
                top[unsure], top_sims[unsure] = _ordered(everyone, exact, width)
        indices[start : start + len(chosen), :width] = top
        similarities[start : start + len(chosen), :width] = top_sims
    return Neighbours(indices, similarities)


def _widest(block: np.ndarray, wide: int) -> np.ndarray:
    """Per row of ``block``, the columns of its ``wide`` largest values (ties at the smallest of them broken
    arbitrarily, as ``argpartition`` does).

    Columns are taken in groups of ``GROUP``: a row's ``wide`` largest values lie in its ``wide`` groups of largest
    maximum (a group outside them holds nothing above the ``wide``-th value), so only those groups and the last,
    partial one are partitioned. A group maximum is a vectorised reduction; partitioning whole rows of 26,880
    labels was half of the neighbour search at 10,000 notes."""
    rows, columns = block.shape
    grouped = columns // GROUP
    if grouped <= wide:
        return np.argpartition(-block, wide - 1, axis=1)[:, :wide]
    maxima = block[:, : grouped * GROUP].reshape(rows, grouped, GROUP).max(axis=2)
    groups = np.argpartition(-maxima, wide - 1, axis=1)[:, :wide]
    pool = (groups[:, :, None] * GROUP + np.arange(GROUP)).reshape(rows, -1)
    tail = np.arange(grouped * GROUP, columns)  # the last, partial group: always a candidate
    pool = np.concatenate([pool, np.broadcast_to(tail, (rows, len(tail)))], axis=1)
    chosen = np.argpartition(-np.take_along_axis(block, pool, axis=1), wide - 1, axis=1)[:, :wide]
    return np.take_along_axis(pool, chosen, axis=1)


def _pair_similarities(vectors: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Rounded float64 cosine of each of ``rows`` with each of its own ``columns`` (one list per row)."""
    found = np.empty(columns.shape, dtype=np.float64)
    for start in range(0, len(rows), 256):
        part = slice(start, start + 256)
        left = vectors[rows[part]].astype(np.float64)
        found[part] = np.einsum("rd,rcd->rc", left, vectors[columns[part]].astype(np.float64))
    return _exact(found)


def _exact(similarities: np.ndarray) -> np.ndarray:
    return np.round(similarities, DIGITS)


def _ordered(candidates: np.ndarray, scores: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``width`` candidates of highest score, ties by lower index; absent ones (-1) last."""
    scores = np.where(candidates >= 0, scores, -np.inf)
    order = np.lexsort((candidates, -scores), axis=1)[:, :width]
    top = np.take_along_axis(candidates, order, axis=1)
    top_sims = np.take_along_axis(scores, order, axis=1).astype(np.float32)
    return np.where(np.isfinite(top_sims), top, -1), top_sims
