"""The home folder and where each store lives in it.

One home holds every store of one vault (DESIGN.md, "The stores"). Writers of the catalog and the quad
store take an exclusive lock per unit of work; readers take a shared lock, so a reader never opens a
store in the middle of a write (neither DuckDB nor Oxigraph allow that across processes).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOME = ".engram"
_exclusive_held = threading.local()  # per thread: the lock files it holds exclusively (``Home._lock``)


class StoreBusy(RuntimeError):
    """A store stayed locked by a running build for longer than the caller wanted to wait."""


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def at(cls, path: str | os.PathLike[str] | None = None) -> Home:
        chosen = path or os.environ.get("ENGRAM_HOME") or DEFAULT_HOME
        root = Path(chosen).expanduser().resolve()
        root.mkdir(parents=True, exist_ok=True)
        return cls(root)

    @property
    def catalog_path(self) -> Path:
        return self.root / "catalog.duckdb"

    @property
    def quads_path(self) -> Path:
        return self.root / "quads"

    @property
    def lancedb_path(self) -> Path:
        return self.root / "lancedb"

    @property
    def ppr_path(self) -> Path:
        return self.root / "ppr"

    @property
    def resolution_path(self) -> Path:
        """What resolution keeps from one run to the next (its embedding lists)."""
        return self.root / "resolution"

    @property
    def timeline_path(self) -> Path:
        """What the timeline keeps from one run to the next (what it read of each note alone)."""
        return self.root / "timeline"

    @property
    def decisions_path(self) -> Path:
        return self.root / "decisions.sqlite"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster"

    @contextmanager
    def writing(self, timeout_s: float = 600.0) -> Iterator[None]:
        """Exclusive access to the derived stores (catalog, quads) for one unit of work."""
        with self._lock(fcntl.LOCK_EX, timeout_s):
            yield

    @contextmanager
    def reading(self, timeout_s: float = 120.0) -> Iterator[None]:
        """Shared access: waits while a writer holds the stores, never interrupts it."""
        with self._lock(fcntl.LOCK_SH, timeout_s):
            yield

    @contextmanager
    def _lock(self, mode: int, timeout_s: float) -> Iterator[None]:
        # A thread that holds the exclusive lock (a resident build's catalog session) already has what it asks for: a
        # second flock of the file from this process would wait on its own.
        path = self.root / ".stores.lock"
        held = _exclusive_held.__dict__.setdefault("paths", set())
        if path in held:
            yield
            return
        with file_lock(
            path, mode, timeout_s,
            f"{self.root}: the stores are busy with a running build for over {timeout_s:.0f}s; "
            "wait for it to finish (see the Dagster UI) and try again.",
        ):
            if mode == fcntl.LOCK_EX:
                held.add(path)
            try:
                yield
            finally:
                held.discard(path)

    def size_bytes(self) -> dict[str, int]:
        """On-disk size of each store, for metrics."""
        sizes = {}
        for name, path in {
            "catalog": self.catalog_path,
            "quads": self.quads_path,
            "lancedb": self.lancedb_path,
            "ppr": self.ppr_path,
            "decisions": self.decisions_path,
        }.items():
            if path.is_file():
                sizes[name] = path.stat().st_size
            elif path.is_dir():
                sizes[name] = _folder_size(path)
            else:
                sizes[name] = 0
        return sizes


def _folder_size(folder: str | os.PathLike[str]) -> int:
    """The bytes of the files under ``folder`` (links not followed), by ``os.scandir``: a resident builder measures
    its stores after every build, and LanceDB's thousands of version files took 50 ms a walk through ``Path.rglob``."""
    total = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                total += _folder_size(entry.path)
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    return total


@contextmanager
def file_lock(path: Path, mode: int, timeout_s: float, busy_message: str) -> Iterator[None]:
    """Hold an flock (``fcntl.LOCK_SH`` or ``LOCK_EX``) on ``path``; StoreBusy(busy_message) after ``timeout_s``."""
    handle = open(path, "a+")  # noqa: SIM115 - held for the context's lifetime
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                fcntl.flock(handle, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreBusy(busy_message) from None
                time.sleep(0.05)
        yield
    finally:
        handle.close()
