"""Nearest entity labels: synonym edges and the local density CSLS subtracts.

Exact k-nearest neighbours by blocked matrix products over the unique labels' unit vectors (float32,
BLAS), so memory stays at one block of similarities whatever the number of labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCK = 2048


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


def nearest_neighbours(vectors: np.ndarray, k: int) -> Neighbours:
    """The ``k`` most similar other rows of each row of ``vectors`` (unit rows, so dot = cosine)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n = vectors.shape[0]
    width = max(0, min(k, n - 1))
    indices = np.full((n, k), -1, dtype=np.int64)
    similarities = np.full((n, k), -np.inf, dtype=np.float32)
    if width == 0:
        return Neighbours(indices, similarities)
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        block = vectors[start:stop] @ vectors.T
        block[np.arange(stop - start), np.arange(start, stop)] = -np.inf  # a label is not its own neighbour
        top = np.argpartition(-block, width - 1, axis=1)[:, :width]
        top_sims = np.take_along_axis(block, top, axis=1)
        order = np.argsort(-top_sims, axis=1, kind="stable")
        indices[start:stop, :width] = np.take_along_axis(top, order, axis=1)
        similarities[start:stop, :width] = np.take_along_axis(top_sims, order, axis=1)
    return Neighbours(indices, similarities)
