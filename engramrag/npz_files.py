"""NumPy ``.npz`` files that steps keep beside their outputs: written whole through a temporary file replaced at
once (a run killed while writing leaves the previous file), read back as named arrays or as nothing when the file
is missing, broken or lacks one of them (a kept file can only save work). Texts are kept as one UTF-8 byte array."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np


def save_arrays(folder: Path, name: str, **arrays: np.ndarray) -> Path:
    """``arrays`` as ``folder/name``; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f".{name}.{os.getpid()}.npz"
    np.savez(temporary, **arrays)
    os.replace(temporary, folder / name)
    return folder / name


def load_arrays(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The named arrays of the file, or None when it is missing, cannot be read or lacks one of them."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as stored:
            return {name: stored[name] for name in names}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None


def joined_texts(texts: list[str]) -> np.ndarray:
    """Texts as one UTF-8 byte array, a newline between them (a stable key holds no newline)."""
    return np.frombuffer("\n".join(texts).encode("utf-8", "surrogatepass"), dtype=np.uint8)


def split_texts(stored: np.ndarray) -> list[str]:
    text = stored.tobytes().decode("utf-8", "surrogatepass")
    return text.split("\n") if stored.size else [""]
