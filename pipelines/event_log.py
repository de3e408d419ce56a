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
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
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
        return self._connection(str(run_id), lambda: super(KeptEngineEventLogStorage, self).run_connection(run_id))

    def index_connection(self) -> AbstractContextManager[Connection]:
        return self._connection(INDEX_SHARD, super().index_connection)

    @contextmanager
    def _connection(self, shard: str, first: Callable[[], AbstractContextManager[Connection]]) -> Iterator[Connection]:
        with self._kept_lock:
            engine = self._kept_engines.get(shard)
            if engine is not None:
                self._kept_engines.move_to_end(shard)
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

    def _keep(self, shard: str) -> None:
        engine = db.create_engine(self.conn_string_for_shard(shard), pool_size=1, max_overflow=0,
                                  connect_args={"timeout": BUSY_TIMEOUT_S})  # fmt: skip
        with self._kept_lock:
            if shard in self._kept_engines:
                engine.dispose()
                return
            self._kept_engines[shard] = engine
            runs = [name for name in self._kept_engines if name != INDEX_SHARD]
            for name in runs[: max(0, len(runs) - KEPT_RUN_ENGINES)]:
                self._kept_engines.pop(name).dispose()

    def dispose(self) -> None:
        with self._kept_lock:
            for engine in self._kept_engines.values():
                engine.dispose()
            self._kept_engines.clear()
        super().dispose()


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
