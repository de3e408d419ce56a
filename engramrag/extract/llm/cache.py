"""The response cache: every answer the model server was paid for, kept so that it is never paid for twice.

Keyed by (document body hash, segment, model, prompt version): an unchanged document asks nothing, an edited
one asks again only because its hash changed, and a new prompt version is a deliberate re-extraction. Each row
also keeps a hash of exactly what the segment's request said (the segment text and the hints from earlier
segments), so a different segmentation of the same text is a miss rather than the answer to another question.

Rows are written one short transaction at a time the moment an answer arrives (SQLite in WAL mode, through
``SqliteFile``), so a build that is killed keeps what it paid for and its resumption reads it back. The cache is
disposable: deleting it costs money, never data.

An estimate (``engram build --dry-run``) opens the cache with ``read_only=True``: it must count the answers a
build would reuse without creating or touching anything in the home. A missing file then reads as an empty
cache. A file no connection holds open (no ``-wal`` beside it) is opened ``immutable``, because even a
``mode=ro`` reader of a WAL file creates ``-wal`` and ``-shm`` files and leaves them behind; while a build holds
it open (or after one was killed) the ``-wal`` has rows the main file lacks, so it is opened ``mode=ro``, which
reads them and, like any reader, uses the ``-shm`` index the writer already created.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engramrag.decisions.sqlite_file import SqliteFile, reading_only
from engramrag.store import Home

CACHE_FILE = "llm_cache.sqlite"


class ResponseCacheError(RuntimeError):
    """The cache file cannot be used; the message names the file and what to do."""


@dataclass(frozen=True)
class CacheKey:
    body_hash: str
    segment: int
    model: str
    prompt_version: str


@dataclass(frozen=True)
class CachedAnswer:
    answer: dict[str, Any]
    tokens_in: int  # what the answer cost when it was paid for
    tokens_out: int
    requests: int
    latency_ms: float
    created_at: str


def _create(connection: sqlite3.Connection) -> None:
    connection.execute(
        """CREATE TABLE responses (
            body_hash TEXT NOT NULL,
            segment INTEGER NOT NULL,
            model TEXT NOT NULL,
            prompt_version TEXT NOT NULL,
            input_hash TEXT NOT NULL,
            answer TEXT NOT NULL,
            tokens_in INTEGER NOT NULL,
            tokens_out INTEGER NOT NULL,
            requests INTEGER NOT NULL,
            latency_ms REAL NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (body_hash, segment, model, prompt_version)
        )"""
    )


class _Unusable(Exception):
    pass


class _ReadOnlyFile:
    """The cache file read without writing anything next to it (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        with reading_only(self.path) as connection:
            if connection is not None and connection.execute(
                "SELECT count(*) FROM sqlite_master WHERE name = 'responses'"
            ).fetchone()[0]:
                yield connection
                return
        # No file, or one a build created but has not yet given its table: nothing is cached yet.
        empty = sqlite3.connect(":memory:")
        try:
            _create(empty)
            yield empty
        finally:
            empty.close()


class ResponseCache:
    """Answers by key; safe to share between threads and processes (a fresh connection per operation).

    ``read_only`` (for estimates): nothing is created or written, a missing file is an empty cache, and
    :meth:`put` raises ResponseCacheError."""

    def __init__(self, path: str | Path, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if read_only:
            self._file: SqliteFile | _ReadOnlyFile = _ReadOnlyFile(self.path)
        else:
            self._file = self._guard(lambda: SqliteFile(self.path, [_create], "LLM response cache", _Unusable))

    @classmethod
    def for_home(cls, home: Home, read_only: bool = False) -> ResponseCache:
        return cls(home.root / CACHE_FILE, read_only=read_only)

    def get(self, key: CacheKey, input_hash: str | None) -> CachedAnswer | None:
        """The answer stored under ``key`` when it answered the same request (``input_hash``); with
        ``input_hash=None`` any answer under the key (for estimates, where later requests are not known)."""

        def read() -> tuple | None:
            with self._file.connection() as connection:
                return connection.execute(
                    """SELECT input_hash, answer, tokens_in, tokens_out, requests, latency_ms, created_at
                    FROM responses WHERE body_hash = ? AND segment = ? AND model = ? AND prompt_version = ?""",
                    (key.body_hash, key.segment, key.model, key.prompt_version),
                ).fetchone()

        row = self._guard(read)
        if row is None or (input_hash is not None and row[0] != input_hash):
            return None
        return CachedAnswer(json.loads(row[1]), row[2], row[3], row[4], row[5], row[6])

    def put(
        self,
        key: CacheKey,
        input_hash: str,
        answer: dict[str, Any],
        tokens_in: int,
        tokens_out: int,
        requests: int,
        latency_ms: float,
    ) -> None:
        """Keep a paid answer, replacing what the key held before (an answer to an older request)."""
        if self.read_only:
            raise ResponseCacheError(f"{self.path} was opened read-only, for an estimate: nothing is written to it")

        def write() -> None:
            with self._file.write() as connection:
                connection.execute(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key.body_hash, key.segment, key.model, key.prompt_version, input_hash,
                     json.dumps(answer, ensure_ascii=False), tokens_in, tokens_out, requests, latency_ms,
                     datetime.now(UTC).isoformat()),
                )  # fmt: skip

        self._guard(write)

    def __len__(self) -> int:
        def count() -> int:
            with self._file.connection() as connection:
                return connection.execute("SELECT count(*) FROM responses").fetchone()[0]

        return self._guard(count)

    def _guard(self, operation):
        try:
            return operation()
        except (_Unusable, sqlite3.Error) as error:
            raise ResponseCacheError(
                f"{self.path}: the LLM response cache cannot be used ({_first_sentence(error)}). It only saves "
                "money: move the file aside or delete it and the next build starts an empty cache, asking the "
                "model server again for every document it extracts."
            ) from error


def input_hash(text: str, hints: list[tuple[str, str]]) -> str:
    """What a segment's request said besides the fixed prompt: its text and the hints it was given."""
    payload = json.dumps([text, hints], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _first_sentence(error: BaseException) -> str:
    text = str(error)
    return text.split(". ", 1)[0].rstrip(".")


__all__ = ["CACHE_FILE", "CacheKey", "CachedAnswer", "ResponseCache", "ResponseCacheError", "input_hash"]
