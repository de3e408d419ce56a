"""One SQLite file that people's decisions live in: WAL mode, a busy timeout, a versioned schema, short writes.

The dashboard, the CLI, agents and a running build all read and write such files at once, so every write is
one short ``BEGIN IMMEDIATE`` transaction on a fresh connection: a writer waits for the write lock (up to the
busy timeout) instead of failing half-way through, readers never block writers (WAL), and a process killed
in the middle of a write leaves the previous state. ``synchronous=NORMAL`` keeps commits cheap; in WAL mode it
survives any process crash (only a power cut can lose the last few commits). The schema is versioned with
``PRAGMA user_version``: ``migrations[n]`` takes the file from version ``n`` to ``n + 1``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

Migration = Callable[[sqlite3.Connection], None]
DEFAULT_BUSY_TIMEOUT_S = 30.0
_DAMAGED = (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT)


class SqliteFile:
    """A versioned SQLite file; ``error`` is raised (naming the file and what to do) when it cannot be used."""

    def __init__(
        self,
        path: str | Path,
        migrations: Sequence[Migration],
        what: str,
        error: type[Exception],
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    ) -> None:
        self.path = Path(path)
        self.migrations = tuple(migrations)
        self.what = what
        self.error = error
        self.busy_timeout_s = busy_timeout_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.connection() as connection:
            self._enable_wal(connection)
            with immediate(connection):
                self._migrate(connection)

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """A fresh connection (autocommit; use :meth:`write` or :func:`immediate` for a transaction)."""
        try:
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None)
        except sqlite3.Error as error:
            raise self.error(f"{self.path}: cannot open the {self.what}: {error}") from error
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
            yield connection
        except sqlite3.DatabaseError as error:
            if getattr(error, "sqlite_errorcode", None) not in _DAMAGED:
                raise
            raise self.error(
                f"{self.path} is not a usable SQLite database ({error}). The {self.what} holds what people "
                "decided and is never rebuilt from the vault, so do not delete it: move it aside (`sqlite3 FILE "
                ".recover` can salvage its rows), then open the store again to start an empty one, or point "
                "--home / ENGRAM_HOME at the right folder."
            ) from error
        finally:
            connection.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on a fresh connection."""
        with self.connection() as connection, immediate(connection):
            yield connection

    def _migrate(self, connection: sqlite3.Connection) -> None:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        latest = len(self.migrations)
        if version > latest:
            raise self.error(
                f"{self.path}: this {self.what} has schema version {version}, newer than the {latest} this "
                "EngramRAG knows; upgrade EngramRAG before opening it."
            )
        for number in range(version, latest):
            self.migrations[number](connection)
            connection.execute(f"PRAGMA user_version = {number + 1}")

    def _enable_wal(self, connection: sqlite3.Connection) -> None:
        # Switching a new file to WAL needs a moment of exclusive access; another process creating the same
        # file at the same time makes this report "locked" instead of waiting, so wait here.
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        if str(mode).lower() != "wal":
            raise self.error(
                f"{self.path}: SQLite could not switch this file to WAL mode (it reports {mode!r}); keep the "
                "home folder on a local file system, where concurrent readers and writers are safe."
            )


@contextmanager
def reading_only(path: str | Path) -> Iterator[sqlite3.Connection | None]:
    """A connection to an existing SQLite file that creates and changes nothing, for estimates that promise to
    leave the disk as they found it; None when the file does not exist. No migration runs, so a caller must
    cope with tables an older file lacks. Even a ``mode=ro`` reader of a WAL file creates ``-wal`` and
    ``-shm`` files and leaves them behind, so a file no connection holds open (no ``-wal`` beside it) is opened
    ``immutable``; while a writer holds it open, or after one was killed, the ``-wal`` has rows the main file
    lacks, so it is opened ``mode=ro``, which reads them through the ``-shm`` index the writer created."""
    path = Path(path)
    if not path.exists():
        yield None
        return
    mode = "mode=ro" if path.with_name(f"{path.name}-wal").exists() else "immutable=1"
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True)
    try:
        yield connection
    finally:
        connection.close()


@contextmanager
def immediate(connection: sqlite3.Connection) -> Iterator[None]:
    """One write transaction that takes the write lock up front, so it never fails half-way on a lock upgrade."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


__all__ = ["DEFAULT_BUSY_TIMEOUT_S", "SqliteFile", "immediate"]
