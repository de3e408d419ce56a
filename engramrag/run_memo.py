"""Values a step's last run made, by the inputs they were made from: the next run in the same process (a resident
builder, ``engram watch``) takes the values whose inputs it meets again and makes the others.

One rule for every such memo: a value is looked up by everything it is a function of (so a hit is the value a fresh
computation gives), and only what the last finished run used is kept (memory stays the size of one run's values; a
run that raised keeps the run before it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, TypeVar

from engramrag.arrow_files import file_stamp

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
A = TypeVar("A")


class RunMemo(Generic[K, V]):
    def __init__(self) -> None:
        self._kept: dict[_Hashed, V] = {}

    @contextmanager
    def run(self) -> Iterator[Callable[[K, Callable[[], V]], V]]:
        """One run: call what it yields with a value's inputs and how to make it."""
        before: dict[_Hashed, V] = self._kept
        made: dict[_Hashed, V] = {}

        def value(inputs: K, make: Callable[[], V]) -> V:
            key = _Hashed(inputs)
            found = made.get(key, _MISSING)
            if found is _MISSING:
                found = before.get(key, _MISSING)
                made[key] = found = make() if found is _MISSING else found
            return found  # type: ignore[return-value]

        yield value
        self._kept = made


_MISSING = object()


class _Hashed:
    """Inputs with their hash computed once: Python does not keep a tuple's hash, and a chain's inputs (every
    observation of it) were hashed four times per lookup, 3 s of every timeline at 100,000 notes."""

    __slots__ = ("hash", "inputs")

    def __init__(self, inputs: Hashable) -> None:
        self.inputs = inputs
        self.hash = hash(inputs)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Hashed) and self.hash == other.hash and self.inputs == other.inputs


class Same:
    """Inputs compared by identity: a value another memo kept and handed out again (held here, so its identity is not
    reused while it is kept)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.value is self.value


def read_only(array: A) -> A:
    """``array`` (a numpy array) made read-only: a value a memo keeps and hands out again, which no caller may change
    in place (the next run's lookups trust it is what was made)."""
    array.setflags(write=False)
    return array


class LastKept(Generic[V]):
    """One value per store file, for the ``size`` files put last: a resident builder's kept rows of the home it builds,
    and of a second home a process builds now and then (as the test comparing an incremental build with a full one
    does) without dropping the first's. A key names the file: its path, or its stamp (``npz_files``)."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._kept: dict[Hashable, V] = {}

    def get(self, key: Hashable) -> V | None:
        return self._kept.get(key)

    def pop(self, key: Hashable) -> V | None:
        return self._kept.pop(key, None)

    def clear(self) -> None:
        self._kept.clear()

    def put(self, key: Hashable, value: V) -> None:
        self._kept.pop(key, None)
        while len(self._kept) >= self.size:
            self._kept.pop(next(iter(self._kept)))  # the file put longest ago
        self._kept[key] = value


class FilesKept(Generic[V]):
    """What a process wrote to files, kept with the files' stamps just after the write (``arrow_files.file_stamp``):
    given back while every file still has its stamp (a file another process wrote, or wrote again, has another),
    so a resident builder need not read back what it wrote itself. One value per key (a home's folder), for the
    ``size`` keys put last (``LastKept``)."""

    def __init__(self, size: int = 2) -> None:
        self._kept: LastKept[tuple[tuple, V]] = LastKept(size)

    def put(self, key: str, files: Sequence[Path], value: V) -> None:
        self._kept.put(key, (_stamps(files), value))

    def get(self, key: str, files: Sequence[Path]) -> V | None:
        found = self._kept.get(key)
        return found[1] if found is not None and found[0] == _stamps(files) else None

    def pop(self, key: str) -> None:
        self._kept.pop(key)

    def clear(self) -> None:
        self._kept.clear()


def _stamps(files: Sequence[Path]) -> tuple:
    return tuple(file_stamp(path) for path in files)
