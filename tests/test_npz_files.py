"""Kept ``.npz`` files: what a process wrote is read back from memory while the file is the one it wrote."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from engramrag.npz_files import load_arrays, save_arrays


def test_a_file_this_process_wrote_is_read_back_from_memory_until_another_write(tmp_path: Path) -> None:
    left = np.arange(5, dtype=np.int64)
    path = save_arrays(tmp_path, "pairs.npz", left=left, right=left * 2)
    left[0] = 99  # the caller's array changing after the write does not change what was written
    first, second = load_arrays(path, ("left", "right")), load_arrays(path, ("left",))
    assert first["left"].tolist() == [0, 1, 2, 3, 4] and first["right"].tolist() == [0, 2, 4, 6, 8]
    assert second["left"] is first["left"]  # from memory, not read again
    with pytest.raises(ValueError):
        first["left"][0] = 7  # read-only: a reader cannot change what the next one is given
    # Renamed (as a pending file is once the catalog committed): still the same file.
    renamed = tmp_path / "renamed.npz"
    os.replace(path, renamed)
    assert load_arrays(renamed, ("left",))["left"] is first["left"]
    # Written by someone else (another process, by hand): read from the file.
    np.savez(renamed, left=np.array([5, 6]), right=np.array([7, 8]))
    again = load_arrays(renamed, ("left", "right"))
    assert again["left"].tolist() == [5, 6] and not again["left"].flags.writeable
    assert load_arrays(renamed, ("left", "missing")) is None
    assert load_arrays(tmp_path / "none.npz", ("left",)) is None
