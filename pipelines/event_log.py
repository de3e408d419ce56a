"""The home's Dagster event log as builds write it: Dagster's own SQLite event log (the same files, one database per
run and an index database), with each database's SQLAlchemy engine kept instead of made and disposed of for every
event.

Dagster's ``SqliteEventLogStorage`` makes an engine for every connection, and a build stores about 90 events (each
step's start, output, planned and done materialisations, checks, progress lines): 5.4 ms an event, 0.5 s of every
one-note edit at 10,000 notes, against 2.5 ms through a kept engine (measured in a resident builder, 4 edits each
way). A subclass that gives its connections through ``run_connection`` and ``index_connection``, the two methods every
SQL event log implements (the MySQL and Postgres ones keep pooled engines the same way), changes nothing on disk: the
Dagster UI (`engram dev`) reads the same files through the stock class, and a database is still created and migrated
by Dagster, through the first connection to it.

Two more costs of every build, with the files unchanged in kind:

- Each run has its own database, which Dagster creates by making its tables and stamping Alembic's revision: 90 ms
  of every build. A new run's database is a copy of one Dagster made once per process, in a folder of its own
  (``_template``): the same tables, revision and journal mode, written whole under a temporary name and linked into
  place (a database another writer made first stays).
- SQLite made every event's commit wait on the disk (``synchronous=FULL``). The kept engines commit with
  ``synchronous=NORMAL``, which in the WAL journal Dagster sets keeps the database consistent through a crash and
  can lose only the last events before a power cut: 63 ms of every one-note edit at 10,000 notes.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, closing, contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as db
from dagster._core.storage.event_log import SqliteEventLogStorage
from sqlalchemy.engine import Connection, Engine

INDEX_SHARD = "index"  # the shard name Dagster gives the index database (``index.db``)
KEPT_RUN_ENGINES = 4  # engines of the latest runs' databases kept; an older run's is disposed of
BUSY_TIMEOUT_S = 30.0  # as Dagster waits on a locked SQLite database


class KeptEngineEventLogStorage(SqliteEventLogStorage):
    """``SqliteEventLogStorage`` over the same folder, with an engine kept per database (the index's, and the latest
    ``KEPT_RUN_ENGINES`` runs'). Connections are used one at a time, as Dagster's own class uses them."""

    def __init__(self, base_dir: str, inst_data: Any = None) -> None:
        self._kept_engines: OrderedDict[str, Engine] = OrderedDict()
        # Re-entrant: a connection to one database opened while one to another is held (Dagster's own class never
        # does, its lock is not re-entrant) waits on nothing here.
        self._kept_lock = threading.RLock()
        super().__init__(base_dir, inst_data)  # connects to the index database already

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Mapping[str, Any]) -> KeptEngineEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    def run_connection(self, run_id: str | None = None) -> AbstractContextManager[Connection]:
        if run_id is None:
            return super().run_connection(run_id)
        return self._connection(run_id, lambda: super(KeptEngineEventLogStorage, self).run_connection(run_id))

    def index_connection(self) -> AbstractContextManager[Connection]:
        return self._connection(INDEX_SHARD, super().index_connection)

    @contextmanager
    def _connection(self, shard: str, first: Callable[[], AbstractContextManager[Connection]]) -> Iterator[Connection]:
        with self._kept_lock:
            engine = self._kept_engines.get(shard)
            if engine is not None:
                self._kept_engines.move_to_end(shard)
        if engine is None and shard != INDEX_SHARD and _made_from_template(self.path_for_shard(shard)):
            engine = self._keep(shard)
        if engine is None:
            # Dagster's own path creates and migrates the database; the engine is kept once that is done.
            with first() as connection:
                yield connection
            self._keep(shard)
            return
        with self._kept_lock, engine.connect() as connection, connection.begin():
            yield connection

    @property
    def kept_databases(self) -> list[str]:
        """The databases whose engines are kept (run ids and ``INDEX_SHARD``), the least recently used first."""
        with self._kept_lock:
            return list(self._kept_engines)

    def _keep(self, shard: str) -> Engine:
        engine = db.create_engine(self.conn_string_for_shard(shard), pool_size=1, max_overflow=0,
                                  connect_args={"timeout": BUSY_TIMEOUT_S})  # fmt: skip
        db.event.listen(engine, "connect", _committing_without_waiting)
        with self._kept_lock:
            if shard in self._kept_engines:
                engine.dispose()
                return self._kept_engines[shard]
            self._kept_engines[shard] = engine
            runs = [name for name in self._kept_engines if name != INDEX_SHARD]
            for name in runs[: max(0, len(runs) - KEPT_RUN_ENGINES)]:
                self._kept_engines.pop(name).dispose()
            return engine

    def dispose(self) -> None:
        with self._kept_lock:
            for engine in self._kept_engines.values():
                engine.dispose()
            self._kept_engines.clear()
        super().dispose()


def _committing_without_waiting(connection: Any, _record: Any) -> None:
    connection.execute("PRAGMA synchronous=NORMAL")


def _made_from_template(path: str) -> bool:
    """Whether ``path`` (a run's database) was just made as a copy of ``_template``; False when it exists already."""
    if os.path.exists(path):
        return False
    temporary = f"{path}.{os.getpid()}.partial"
    with open(temporary, "wb") as file:
        file.write(_template())
    try:
        os.link(temporary, path)  # fails when another writer made it meanwhile (that one stays), or without links
    except OSError:
        return False
    finally:
        os.unlink(temporary)
    return True


@functools.cache
def _template() -> bytes:
    """A run's database as Dagster makes it (tables, Alembic revision, WAL journal), made once per process in a
    folder of its own."""
    with tempfile.TemporaryDirectory(prefix="engram-run-template-") as folder:
        storage = SqliteEventLogStorage(folder)
        try:
            with storage.run_connection("template"):
                pass
        finally:
            storage.dispose()
        path = storage.path_for_shard("template")
        with closing(sqlite3.connect(path)) as connection:  # everything in the file itself, none left in its WAL
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return Path(path).read_bytes()


def event_log_overrides(runs_folder: str) -> dict[str, Any]:
    """The instance settings that store a home's events through ``KeptEngineEventLogStorage`` in ``runs_folder``
    (``<dagster home>/history/runs``, where Dagster's default keeps them)."""
    return {
        "event_log_storage": {
            "module": __name__,
            "class": KeptEngineEventLogStorage.__name__,
            "config": {"base_dir": runs_folder},
        }
    }
