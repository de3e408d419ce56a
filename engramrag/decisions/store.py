"""The decisions store: people's verdicts in one SQLite file in WAL mode.

The dashboard, the CLI and a running Dagster build all read and write this file at once, so every write is
one short ``BEGIN IMMEDIATE`` transaction on a fresh connection: a writer waits for the write lock (up to the
busy timeout) instead of failing half-way through, readers never block writers (WAL), and a process killed
in the middle of a write leaves the previous state, because an uncommitted transaction is discarded when the
file is next opened. ``synchronous=NORMAL`` keeps commits cheap; in WAL mode it survives any process crash
and never corrupts the file (only a power cut can lose the last few commits).

Nothing is ever deleted. A verdict on a pair that already has one records what it replaces; ``undo`` marks
the current verdict undone, which makes the verdict it replaced current again. The current verdict of a pair
is therefore always its newest row that is not undone, and the full history stays readable.

The schema is versioned with ``PRAGMA user_version``: ``MIGRATIONS[n]`` takes the file from version ``n`` to
``n + 1``, so a new table (note approvals, agent confirmation records) is one appended function.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from engramrag.decisions.sqlite_file import DEFAULT_BUSY_TIMEOUT_S, SqliteFile
from engramrag.store import Home

MERGE = "merge"
SUPERSESSION = "supersession"
MERGE_VERDICTS: tuple[str, ...] = ("same", "broader", "narrower", "related", "distinct")
SUPERSESSION_VERDICTS: tuple[str, ...] = ("accept", "reject")
TOPICS: dict[str, tuple[str, ...]] = {MERGE: MERGE_VERDICTS, SUPERSESSION: SUPERSESSION_VERDICTS}

# "A broader than B" asked as (B, A) is stored as "B narrower than A" on the canonical pair.
_FLIPPED = {"broader": "narrower", "narrower": "broader"}


class DecisionsStoreError(RuntimeError):
    """The decisions file cannot be used as it is; the message names the file and what to do."""


@dataclass(frozen=True)
class Verdict:
    """One recorded act of judgement on a pair; ``left_key``/``right_key`` are in canonical order.

    For ``merge`` the verdict reads "left is <verdict> of/than right" (``broader``: left is the broader
    notion); for ``supersession`` the pair is (earlier, later) and ``accept`` means the later supersedes
    the earlier.
    """

    id: int
    topic: str
    left_key: str
    right_key: str
    verdict: str
    operator: str
    decided_at: str
    replaces: int | None = None
    undone_at: str | None = None
    undone_by: str | None = None
    note: str = ""
    context: Mapping[str, Any] | None = field(default=None, hash=False)

    @property
    def pair(self) -> tuple[str, str]:
        return (self.left_key, self.right_key)


def _v1_verdicts(connection: sqlite3.Connection) -> None:
    connection.execute(
        """
        CREATE TABLE verdicts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            topic TEXT NOT NULL CHECK (topic IN ('merge', 'supersession')),
            left_key TEXT NOT NULL CHECK (left_key <> ''),
            right_key TEXT NOT NULL CHECK (right_key <> ''),
            verdict TEXT NOT NULL,
            operator TEXT NOT NULL CHECK (trim(operator) <> ''),
            decided_at TEXT NOT NULL,
            replaces INTEGER REFERENCES verdicts(id),
            undone_at TEXT,
            undone_by TEXT,
            note TEXT NOT NULL DEFAULT '',
            context TEXT CHECK (context IS NULL OR json_valid(context)),
            CHECK (left_key <> right_key),
            CHECK ((undone_at IS NULL) = (undone_by IS NULL))
        )
        """
    )
    connection.execute("CREATE INDEX verdicts_by_pair ON verdicts (topic, left_key, right_key, id)")


def _v2_agent_confirmations(connection: sqlite3.Connection) -> None:
    """Agent write confirmations (one row binds arguments, destination, domain, window, operator) and the
    checkpoints taken before each agent write; the window columns are nullable so a row without one reads
    "unknown" instead of a default."""
    connection.execute(
        """
        CREATE TABLE agent_confirmations (
            id TEXT PRIMARY KEY,
            tool TEXT NOT NULL,
            agent TEXT NOT NULL,
            mode TEXT NOT NULL,
            arguments_text TEXT NOT NULL CHECK (json_valid(arguments_text)),
            arguments_hash TEXT NOT NULL,
            vault_id TEXT NOT NULL,
            relative_path TEXT NOT NULL,
            real_path TEXT NOT NULL,
            prior_state TEXT NOT NULL,
            domain TEXT NOT NULL CHECK (json_valid(domain)),
            issued_at TEXT,
            expires_at TEXT,
            policy_version TEXT,
            summary TEXT NOT NULL DEFAULT '',
            diff TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'refused', 'executed')),
            operator TEXT,
            decided_at TEXT,
            executed_at TEXT,
            written_state TEXT,
            checkpoint_id TEXT,
            last_refusal TEXT,
            last_refusal_at TEXT,
            CHECK ((operator IS NULL) = (decided_at IS NULL))
        )
        """
    )
    connection.execute(
        """
        CREATE TABLE agent_checkpoints (
            id TEXT PRIMARY KEY,
            confirmation_id TEXT REFERENCES agent_confirmations(id),
            vault_id TEXT NOT NULL,
            created_at TEXT NOT NULL,
            files TEXT NOT NULL CHECK (json_valid(files)),
            rewound_at TEXT,
            rewound_by TEXT,
            rewind_forced INTEGER,
            CHECK ((rewound_at IS NULL) = (rewound_by IS NULL))
        )
        """
    )


def _v3_note_approvals(connection: sqlite3.Connection) -> None:
    """A person's approval or rejection of one exact version of an agent's note (``content_state`` is the
    ``blake2b:`` state of its bytes), so any later change to the file needs a new approval. Rows are only ever
    appended: the triggers refuse an UPDATE or DELETE, because the rows are the audit of who let what in."""
    connection.execute(
        """
        CREATE TABLE note_approvals (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            path TEXT NOT NULL CHECK (path <> ''),
            content_state TEXT NOT NULL CHECK (content_state <> ''),
            verdict TEXT NOT NULL CHECK (verdict IN ('approved', 'rejected')),
            operator TEXT NOT NULL CHECK (trim(operator) <> ''),
            decided_at TEXT NOT NULL,
            note TEXT NOT NULL DEFAULT ''
        )
        """
    )
    connection.execute("CREATE INDEX note_approvals_by_path ON note_approvals (path, content_state, id)")
    for action in ("UPDATE", "DELETE"):
        connection.execute(
            f"""
            CREATE TRIGGER note_approvals_no_{action.lower()} BEFORE {action} ON note_approvals
            BEGIN SELECT RAISE(ABORT, 'note_approvals is append-only'); END
            """
        )


def _v4_agent_policies(connection: sqlite3.Connection) -> None:
    """The write policy texts confirmation rows name by version (``policy:blake2b:...`` of the text), kept
    content-addressed so a row's policy reads the same after the policy file changed; and the note approvals
    that were refused (the bytes changed since the person was shown them, or a quote no longer checks), so the
    audit shows attempts that let nothing in. Both append-only."""
    connection.execute(
        """
        CREATE TABLE agent_policies (
            version TEXT PRIMARY KEY CHECK (version <> ''),
            text TEXT NOT NULL CHECK (json_valid(text)),
            recorded_at TEXT NOT NULL
        )
        """
    )
    connection.execute(
        """
        CREATE TABLE note_approval_refusals (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            path TEXT NOT NULL CHECK (path <> ''),
            shown_state TEXT,
            current_state TEXT,
            operator TEXT NOT NULL,
            refused_at TEXT NOT NULL,
            reason TEXT NOT NULL
        )
        """
    )
    for table in ("agent_policies", "note_approval_refusals"):
        for action in ("UPDATE", "DELETE"):
            connection.execute(
                f"""
                CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table}
                BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END
                """
            )


def _v5_operator_authentication(connection: sqlite3.Connection) -> None:
    """Who decided an agent write, and how that person was authenticated (``operator_auth``); a ``failed``
    status for an approved write whose execution was refused, so it cannot be retried silently; and the
    one-time codes a person types into an MCP confirmation (only their blake2b hash is kept).

    SQLite cannot alter a CHECK constraint, and rebuilding ``agent_confirmations`` would trip the foreign key
    from ``agent_checkpoints``; widening the status list only admits more rows, which SQLite documents as a
    safe edit of the stored schema text, so that text is edited in place (every other column is kept)."""
    old = "status IN ('pending', 'approved', 'refused', 'executed')"
    new = "status IN ('pending', 'approved', 'refused', 'executed', 'failed')"
    (sql,) = connection.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'agent_confirmations'"
                                ).fetchone()
    if old not in sql:
        raise DecisionsStoreError("agent_confirmations has an unexpected status constraint; cannot add 'failed'")
    version = connection.execute("PRAGMA schema_version").fetchone()[0]
    connection.execute("PRAGMA writable_schema = ON")
    try:
        connection.execute(
            "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'agent_confirmations'",
            (sql.replace(old, new),),
        )
        connection.execute(f"PRAGMA schema_version = {version + 1}")
    finally:
        connection.execute("PRAGMA writable_schema = OFF")
    connection.execute("ALTER TABLE agent_confirmations ADD COLUMN operator_auth TEXT")
    connection.execute(
        """
        CREATE TABLE operator_codes (
            id TEXT PRIMARY KEY,
            code_hash TEXT NOT NULL UNIQUE,
            operator TEXT NOT NULL CHECK (trim(operator) <> ''),
            confirmation_id TEXT NOT NULL,
            issued_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            used_at TEXT,
            used_for TEXT,
            failures INTEGER NOT NULL DEFAULT 0
        )
        """
    )


# MIGRATIONS[n] upgrades a file at user_version n to n + 1. Append only; never edit a shipped migration.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _v1_verdicts,
    _v2_agent_confirmations,
    _v3_note_approvals,
    _v4_agent_policies,
    _v5_operator_authentication,
)
SCHEMA_VERSION = len(MIGRATIONS)

_COLUMNS = (
    "id, topic, left_key, right_key, verdict, operator, decided_at, replaces, undone_at, undone_by, note, context"
)


class DecisionsStore:
    """People's verdicts on entity pairs (merge) and decision pairs (supersession).

    Safe to share between threads and processes: every call opens its own connection and closes it again.
    """

    def __init__(self, path: str | os.PathLike[str], busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
        self._file = SqliteFile(path, MIGRATIONS, "decisions store", DecisionsStoreError, busy_timeout_s)
        self.path = self._file.path

    @classmethod
    def for_home(cls, home: Home, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> DecisionsStore:
        return cls(home.decisions_path, busy_timeout_s)

    def decide(
        self,
        topic: str,
        left: str,
        right: str,
        verdict: str,
        operator: str,
        note: str = "",
        context: Mapping[str, Any] | None = None,
    ) -> Verdict:
        """Record a verdict on a pair and return it (canonical order). It replaces the pair's current verdict.

        Deciding what is already the pair's current verdict records nothing and returns the current one, so a
        re-run of a dashboard script cannot stack identical verdicts that would each need an undo.
        """
        left, right, verdict = _canonical(topic, left, right, verdict)
        operator = _operator(operator)
        context_json = _context_json(context)
        with self._write() as connection:
            current = _current_row(connection, topic, left, right)
            if current is not None and current.verdict == verdict:
                return current
            row = connection.execute(
                f"""
                INSERT INTO verdicts
                    (topic, left_key, right_key, verdict, operator, decided_at, replaces, note, context)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                RETURNING {_COLUMNS}
                """,
                (topic, left, right, verdict, operator, _now(), current.id if current else None, note, context_json),
            ).fetchone()
        return _verdict(row)

    def undo(self, topic: str, left: str, right: str, operator: str) -> Verdict | None:
        """Mark the pair's current verdict undone (returned, with who and when); None when it has none.

        The verdict it replaced becomes current again; calling undo again walks further back.
        """
        left, right, _ = _canonical(topic, left, right, None)
        operator = _operator(operator)
        with self._write() as connection:
            current = _current_row(connection, topic, left, right)
            if current is None:
                return None
            row = connection.execute(
                f"UPDATE verdicts SET undone_at = ?, undone_by = ? WHERE id = ? RETURNING {_COLUMNS}",
                (_now(), operator, current.id),
            ).fetchone()
        return _verdict(row)

    def current(self, topic: str) -> list[Verdict]:
        """The current verdict of every pair of the topic, in decision order."""
        _check_topic(topic)
        with self._connection() as connection:
            rows = connection.execute(
                f"""
                SELECT {_COLUMNS} FROM verdicts WHERE id IN (
                    SELECT max(id) FROM verdicts WHERE topic = ? AND undone_at IS NULL GROUP BY left_key, right_key
                ) ORDER BY id
                """,
                (topic,),
            ).fetchall()
        return [_verdict(row) for row in rows]

    def current_for(self, topic: str, left: str, right: str) -> Verdict | None:
        """The pair's current verdict (either order for merge pairs), or None."""
        left, right, _ = _canonical(topic, left, right, None)
        with self._connection() as connection:
            return _current_row(connection, topic, left, right)

    def revision(self, topic: str | None = None) -> str:
        """Changes whenever a verdict (of ``topic``, or of any topic) is recorded or undone (for a sensor's cursor,
        and for a build step to know that the verdicts it reads changed)."""
        where, parameters = ("WHERE topic = ?", (topic,)) if topic is not None else ("", ())
        if topic is not None:
            _check_topic(topic)
        with self._connection() as connection:
            newest, undone = connection.execute(
                f"SELECT max(id), count(undone_at) FROM verdicts {where}", parameters
            ).fetchone()
        return f"{newest or 0}:{undone}"

    def history(self, topic: str, left: str | None = None, right: str | None = None) -> list[Verdict]:
        """Every verdict ever recorded, undone ones included, in decision order.

        With both keys: that pair's history. With one key: every pair that key is part of, on either side.
        """
        _check_topic(topic)
        if left is not None and right is not None:
            left, right, _ = _canonical(topic, left, right, None)
            where, parameters = "topic = ? AND left_key = ? AND right_key = ?", (topic, left, right)
        elif left is not None or right is not None:
            key = left if left is not None else right
            where, parameters = "topic = ? AND (left_key = ? OR right_key = ?)", (topic, key, key)
        else:
            where, parameters = "topic = ?", (topic,)
        with self._connection() as connection:
            rows = connection.execute(f"SELECT {_COLUMNS} FROM verdicts WHERE {where} ORDER BY id", parameters)
            return [_verdict(row) for row in rows.fetchall()]

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._file.connection() as connection:
            yield connection

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._file.write() as connection:
            yield connection


def _current_row(connection: sqlite3.Connection, topic: str, left: str, right: str) -> Verdict | None:
    row = connection.execute(
        f"""
        SELECT {_COLUMNS} FROM verdicts
        WHERE topic = ? AND left_key = ? AND right_key = ? AND undone_at IS NULL
        ORDER BY id DESC LIMIT 1
        """,
        (topic, left, right),
    ).fetchone()
    return _verdict(row) if row else None


def _verdict(row: tuple[Any, ...]) -> Verdict:
    *fields, context = row
    return Verdict(*fields, context=json.loads(context) if context is not None else None)


def _check_topic(topic: str) -> None:
    if topic not in TOPICS:
        raise ValueError(f"unknown topic {topic!r}; the topics are {', '.join(TOPICS)}")


def _canonical(topic: str, left: str, right: str, verdict: str | None) -> tuple[str, str, str | None]:
    """Merge pairs sorted (flipping broader/narrower when swapped); supersession pairs kept (earlier, later)."""
    _check_topic(topic)
    if verdict is not None and verdict not in TOPICS[topic]:
        raise ValueError(f"unknown {topic} verdict {verdict!r}; the {topic} verdicts are {', '.join(TOPICS[topic])}")
    for side, key in (("left", left), ("right", right)):
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"the {side} key must be a non-empty string, got {key!r}")
    if left == right:
        raise ValueError(f"a verdict needs two different keys, got {left!r} on both sides")
    if topic == MERGE and right < left:
        left, right = right, left
        verdict = _FLIPPED.get(verdict, verdict) if verdict is not None else None
    return left, right, verdict


def _operator(operator: str) -> str:
    if not isinstance(operator, str) or not operator.strip():
        raise ValueError("every verdict needs an operator: who decided it (a person's or an agent's name)")
    return operator.strip()


def _context_json(context: Mapping[str, Any] | None) -> str | None:
    if context is None:
        return None
    if not isinstance(context, Mapping):
        raise ValueError(f"context must be a mapping (a JSON object), got {type(context).__name__}")
    try:
        return json.dumps(dict(context), ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"context must be JSON-serialisable (numbers must be finite): {error}") from error


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


__all__ = [
    "MERGE",
    "MERGE_VERDICTS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SUPERSESSION",
    "SUPERSESSION_VERDICTS",
    "TOPICS",
    "DecisionsStore",
    "DecisionsStoreError",
    "Verdict",
]
