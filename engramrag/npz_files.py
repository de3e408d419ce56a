"""NumPy ``.npz`` files that steps keep beside their outputs: written whole through a temporary file replaced at
once (a run killed while writing leaves the previous file), read back as named arrays or as nothing when the file
is missing, broken or lacks one of them (a kept file can only save work). Texts are kept as one UTF-8 byte array.

A process reads back what it wrote itself from memory while the file is the one it wrote (the same stamp: inode,
size and modification time, which a rename keeps and any other write changes): a resident builder (``engram watch``)
read its four resolution files back at every build, 0.1 s at 10,000 notes. The arrays read are read-only."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from engramrag.arrow_files import file_stamp
from engramrag.run_memo import LastKept

KEPT_FILES = 8  # the files written last whose arrays are kept (a home's resolution files, and a second home's)
_written: LastKept[dict[str, np.ndarray]] = LastKept(KEPT_FILES)  # by the stamp of the file as written


def save_arrays(folder: Path, name: str, **arrays: np.ndarray) -> Path:
    """``arrays`` as ``folder/name``; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f".{name}.{os.getpid()}.npz"
    np.savez(temporary, **arrays)
    os.replace(temporary, folder / name)
    _keep(folder / name, arrays)
    return folder / name


def _keep(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Remember read-only copies of the arrays just written to ``path`` (not those holding objects, which a read
    refuses)."""
    stamp = file_stamp(path)
    copies = {name: np.array(values, copy=True) for name, values in arrays.items()}
    if stamp is None or any(values.dtype.hasobject for values in copies.values()):
        return
    for values in copies.values():
        values.setflags(write=False)
    _written.put(stamp, copies)


def load_arrays(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The named arrays of the file, or None when it is missing, cannot be read or lacks one of them."""
    stamp = file_stamp(path)
    if stamp is None:
        return None
    kept = _written.get(stamp)
    if kept is not None and all(name in kept for name in names):
        return {name: kept[name] for name in names}
    try:
        with np.load(path, allow_pickle=False) as stored:
            found = {name: stored[name] for name in names}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    for values in found.values():
        values.setflags(write=False)  # as the kept ones are: a reader changing them in place would change those
    return found


def joined_texts(texts: list[str]) -> np.ndarray:
    """Texts as one UTF-8 byte array, a newline between them (a stable key holds no newline)."""
    return np.frombuffer("\n".join(texts).encode("utf-8", "surrogatepass"), dtype=np.uint8)


def split_texts(stored: np.ndarray) -> list[str]:
    text = stored.tobytes().decode("utf-8", "surrogatepass")
    return text.split("\n") if stored.size else [""]
