"""The surface legs of blocking, kept from one run to the next while the set of keys stays the same.

The pairs found from the keys' surface forms alone (``resolve.blocking.surface_pairs``: one compact form, acronyms,
word containment, edit similarity) are a function of the sorted keys and of the settings, nothing else: not the
mention rows, aliases or vectors. An edit that adds or removes no key (most edits of prose) therefore finds them
again unchanged, and the edit-similarity index, the costliest leg (about 2.5 s at 10,000 notes), need not be
rebuilt. They are kept in ``<home>/resolution/surface_pairs.npz`` with a digest of the keys and settings they were
found for, and used only when the digest matches; a run with other keys finds them afresh (the posting caps of the
containment and edit indexes depend on every key, so changing the pairs of a few keys in place would not give what
a full run gives).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engramrag.npz_files import load_arrays, save_arrays

FILE = "surface_pairs.npz"


def surface_fingerprint(keys: list[str], settings: str) -> str:
    """The digest of the sorted ``keys`` and the ``settings`` (the caller's digest of the knobs and the code)."""
    digest = hashlib.blake2b(settings.encode(), digest_size=16)
    digest.update("\n".join(keys).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@dataclass(frozen=True)
class SurfacePairs:
    """Pairs of rows of the sorted keys (left < right) and the edit similarity computed for each (NaN: none)."""

    fingerprint: str
    left: np.ndarray  # int64
    right: np.ndarray  # int64
    edit: np.ndarray  # float64

    @classmethod
    def of(cls, pairs: dict[tuple[int, int], float | None], fingerprint: str) -> SurfacePairs:
        ordered = sorted(pairs.items())
        return cls(
            fingerprint,
            np.fromiter((i for (i, _j), _e in ordered), dtype=np.int64, count=len(ordered)),
            np.fromiter((j for (_i, j), _e in ordered), dtype=np.int64, count=len(ordered)),
            np.fromiter((np.nan if e is None else e for _p, e in ordered), dtype=np.float64, count=len(ordered)),
        )

    def pairs(self) -> dict[tuple[int, int], float | None]:
        edits = [None if e != e else e for e in self.edit.tolist()]  # NaN is the one value unequal to itself
        return dict(zip(zip(self.left.tolist(), self.right.tolist(), strict=True), edits, strict=True))

    def save(self, folder: Path) -> None:
        save_arrays(folder, FILE, fingerprint=np.array(self.fingerprint), left=self.left, right=self.right,
                    edit=self.edit)  # fmt: skip

    @classmethod
    def load(cls, folder: Path, fingerprint: str) -> SurfacePairs | None:
        """The stored pairs when they were found for ``fingerprint``, else None."""
        stored = load_arrays(folder / FILE, ("fingerprint", "left", "right", "edit"))
        if stored is None:
            return None  # missing or unreadable: found afresh and written again
        found = cls(str(stored["fingerprint"]), stored["left"].astype(np.int64), stored["right"].astype(np.int64),
                    stored["edit"].astype(np.float64))  # fmt: skip
        consistent = len(found.left) == len(found.right) == len(found.edit)
        return found if consistent and found.fingerprint == fingerprint else None
