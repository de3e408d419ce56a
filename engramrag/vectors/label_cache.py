"""The entity label matrix a process last read or wrote, per store, with the table version it is true of.

The resolution candidates and the retrieval index read every label vector in one build, and a resident builder
(``engram watch``) in every build: 200,000 labels of 512 floats at 100,000 notes, 2.4 s per read on this machine.
An edit adds a few labels and drops a few, so the store's own writes keep the matrix current here (the rows it
appended, the rows it dropped) together with the version they made; a read at that version takes the matrix from
here, a read at any other (another process wrote, a table made again) reads the table.

Appended rows go into spare rows at the end of one buffer, so a matrix handed out earlier (a view of the rows
before them) never changes under its holder; dropping rows copies the kept ones into a new buffer.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

Version = tuple[int, str]  # the table's version number and its time (a table made again numbers from 1)


@dataclass(frozen=True)
class CachedLabels:
    version: Version
    texts: tuple[str, ...]
    buffer: np.ndarray  # rows [:len(texts)] hold the labels' vectors; the rows after them are room for more
    matrix: np.ndarray  # a read-only view of those rows, the same object for every read at this version

    @classmethod
    def of(cls, version: Version, texts: Sequence[str], vectors: np.ndarray, spare: int = 0) -> CachedLabels:
        buffer = np.empty((len(texts) + spare, vectors.shape[1]), dtype=np.float32)
        buffer[: len(texts)] = vectors
        return cls._viewed(version, tuple(texts), buffer)

    @classmethod
    def _viewed(cls, version: Version, texts: tuple[str, ...], buffer: np.ndarray) -> CachedLabels:
        matrix = buffer[: len(texts)]
        matrix.setflags(write=False)
        return cls(version, texts, buffer, matrix)

    def appended(self, version: Version, texts: Sequence[str], vectors: np.ndarray) -> CachedLabels:
        """These labels added at the end (into a buffer an eighth larger when this one has no room: doubling 400 MB
        at 100,000 notes would hold 400 MB more for the few labels an edit adds)."""
        size, count = len(self.texts), len(texts)
        buffer = self.buffer
        if size + count > len(buffer):
            buffer = np.empty((size + max(count, size // 8), buffer.shape[1]), dtype=np.float32)
            buffer[:size] = self.matrix
        buffer[size : size + count] = vectors
        return self._viewed(version, self.texts + tuple(texts), buffer)

    def without(self, version: Version, texts: Collection[str]) -> CachedLabels:
        """These labels' rows left out, the others in their order."""
        kept = [row for row, text in enumerate(self.texts) if text not in texts]
        buffer = np.empty((len(kept) + len(kept) // 8, self.buffer.shape[1]), dtype=np.float32)
        np.take(self.matrix, kept, axis=0, out=buffer[: len(kept)])
        return self._viewed(version, tuple(self.texts[row] for row in kept), buffer)


_CACHE: dict[Path, CachedLabels] = {}


def cached(path: Path, version: Version) -> CachedLabels | None:
    """The matrix of the store at ``path`` as it is at ``version``, if this process knows it."""
    found = _CACHE.get(path)
    return found if found is not None and found.version == version else None


def remember(path: Path, labels: CachedLabels | None) -> None:
    """What a read found or a write made (None: forget the store's matrix)."""
    if labels is None:
        _CACHE.pop(path, None)
    else:
        _CACHE[path] = labels
