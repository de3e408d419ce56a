"""Procedural memory: the user's preferences, ongoing projects and ways of working, confirmed by a person.

It is kept in its own small store, ``<home>/procedures.sqlite``, apart from the knowledge documents: a
preference is not a fact about the world, must not be rebuilt or re-extracted with the vault, and is put in
front of a model on every session, which makes it the most valuable place for an injected instruction to
hide. So an agent can only propose a procedure. Whatever the permission mode, ``propose_procedure`` issues a
confirmation row (the same binding record as every agent write) and returns it pending with warnings for the
person deciding: text that reads like an instruction to a model, text copied out of a vault document, and
sources that are content rather than the person. Only ``execute_procedure`` on an approved row stores it, with
its provenance (agent, stated sources, confirmation, who confirmed and when). Nothing is deleted: a procedure
is retired, and the store's triggers refuse deletes and edits of recorded fields.

The confirmation lives in the decisions store and the procedure in this one, two SQLite files: execution
spends the confirmation inside the decisions transaction and inserts the procedure inside it, so a failed
insert leaves the row unspent; each procedure row names its confirmation (unique), so even the narrow window
between the two commits can never store a confirmation twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engramrag.agent import confirmations, destinations, writes
from engramrag.agent.confirmations import Refused, Window
from engramrag.agent.injection import found_in_vault, looks_like_instruction, render_for_model
from engramrag.decisions.sqlite_file import SqliteFile
from engramrag.store import Home

TOOL = "remember_procedure"
KINDS = ("preference", "project", "practice")
USER_SOURCE = "user"
MAX_TEXT_CHARS = 2000
_COLUMNS = (
    "id, kind, text, agent, sources, confirmation_id, confirmed_by, confirmed_at, recorded_at, retired_at, retired_by"
)


class ProceduresStoreError(RuntimeError):
    """The procedures file cannot be used as it is; the message names the file and what to do."""


@dataclass(frozen=True)
class Pending(writes.Pending):
    """A proposed procedure waiting for a person, with the warnings the person should weigh."""

    procedure_id: str = ""
    warnings: tuple[str, ...] = ()


def store_path(home: Home) -> Path:
    return home.root / "procedures.sqlite"


def procedure_id(kind: str, text: str) -> str:
    """Content-based id: the same kind and text always get the same id, across homes and rebuilds."""
    digest = hashlib.blake2b(f"{kind}\x00{text}".encode(), digest_size=8).hexdigest()
    return f"proc-{digest}"


def propose_procedure(
    home: Home,
    vault: str | os.PathLike[str],
    text: str,
    kind: str,
    agent: str,
    sources: Sequence[str],
    policy: writes.Policy | None = None,
    now: datetime | None = None,
) -> Pending:
    """Issue a confirmation for remembering ``text``; never stores anything, whatever the permission mode.

    Read-only mode records the proposal as refused and raises Refused("mode"). A procedure that is already
    active is refused as a duplicate without a row. Outer whitespace of ``text`` is dropped before binding.
    """
    policy = policy or writes.Policy()
    moment = now or datetime.now(UTC)
    text, kind, sources = _validated(text, kind, sources)
    pid = procedure_id(kind, text)
    with _connection(home) as connection:
        state = _state(connection, pid)
    if state.startswith("active:") and policy.mode != writes.READ_ONLY:
        raise Refused("duplicate", f"this {kind} is already remembered as {pid} ({state}); nothing to confirm.")
    warnings = _warnings(vault, text, sources)
    arguments = {"tool": TOOL, "text": text, "kind": kind, "sources": sources, "agent": agent}
    destination = {
        "vault_id": destinations.vault_identity(vault),
        "relative_path": f"procedures/{pid}",
        "real_path": str(store_path(home)),
        "state": state,
    }
    summary = _summary(pid, kind, text, agent, sources, state, warnings)
    diff = f"+++ procedures/{pid}\n" + "".join(f"+{line}\n" for line in [f"kind: {kind}", *text.splitlines()])
    row = confirmations.issue(
        home,
        tool=TOOL,
        agent=agent,
        mode=policy.mode,
        arguments=arguments,
        destination=destination,
        domain={},
        window=Window(moment, moment + timedelta(seconds=policy.window_s), policy.version),
        summary=summary,
        diff=diff,
    )
    if policy.mode == writes.READ_ONLY:
        confirmations.decide(home, row.id, False, writes.READ_ONLY_OPERATOR, moment)
        raise Refused(
            "mode",
            f"the permission mode is read-only, so remembering {pid} was refused and recorded as {row.id}; "
            "switch to confirm-each-write to let a person approve it.",
        )
    return Pending(row.id, summary, diff, row.expires_at or confirmations.UNKNOWN, pid, tuple(warnings))


def execute_procedure(
    home: Home, confirmation_id: str, arguments: Mapping[str, Any] | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """Store the procedure an approved ``remember_procedure`` confirmation bound, and return the stored row.

    Re-checks the decision, single use, the row's window, the argument hash (and ``arguments`` when the agent
    repeats its call) and the destination state; a refusal is noted on the row and stores nothing.
    """
    moment = now or datetime.now(UTC)
    try:
        return _execute(home, confirmation_id, arguments, moment)
    except Refused as refusal:
        if refusal.binding != "unknown-confirmation":
            confirmations.record_refusal(home, confirmation_id, refusal, moment, fail=True)
        raise


def procedures(home: Home, include_retired: bool = False) -> list[dict[str, Any]]:
    """The stored procedures in the order they were recorded; retired ones only when asked for."""
    where = "" if include_retired else "WHERE retired_at IS NULL"
    with _connection(home) as connection:
        rows = connection.execute(f"SELECT {_COLUMNS} FROM procedures {where} ORDER BY seq").fetchall()
    return [_as_dict(row) for row in rows]


def retire_procedure(home: Home, procedure_id: str, operator: str, now: datetime | None = None) -> dict[str, Any]:
    """Take an active procedure out of use, recording who and when; the row and its provenance stay."""
    if not isinstance(operator, str) or not operator.strip():
        raise ValueError("retiring a procedure needs an operator: who retired it")
    moment = _iso(now or datetime.now(UTC))
    with _write(home) as connection:
        row = connection.execute(
            f"UPDATE procedures SET retired_at = ?, retired_by = ? WHERE id = ? AND retired_at IS NULL "
            f"RETURNING {_COLUMNS}",
            (moment, operator.strip(), procedure_id),
        ).fetchone()
        if row is None:
            state = _state(connection, procedure_id)
            raise LookupError(f"{procedure_id} is not an active procedure ({state}); list them with procedures().")
    return _as_dict(row)


def _execute(home: Home, confirmation_id: str, arguments: Mapping[str, Any] | None, moment: datetime) -> dict:
    row = confirmations.get(home, confirmation_id)
    if row.tool != TOOL:
        raise Refused("tool", f"{row.id} confirms a {row.tool}, not {TOOL}; execute it with writes.execute.")
    bound = confirmations.check_spendable(row, moment, arguments)
    try:
        text, kind, sources = _validated(bound.get("text"), bound.get("kind"), bound.get("sources"))
    except ValueError as error:
        raise Refused("arguments", f"the arguments bound on {row.id} are not a valid procedure: {error}") from error
    pid = procedure_id(kind, text)
    for name, expected in (("relative_path", f"procedures/{pid}"), ("real_path", str(store_path(home)))):
        if getattr(row, name) != expected:
            raise Refused("destination", f"{row.id} bound {name} {getattr(row, name)}, which is now {expected}.")
    with confirmations.write_transaction(home) as decisions, _write(home) as connection:
        confirmations.check_status(confirmations.row_in(decisions, row.id))
        state = _state(connection, pid)
        if state != row.prior_state:
            raise Refused(
                "destination",
                f"{pid} was {row.prior_state} when {row.id} was issued and is {state} now; nothing was stored. "
                "Look at procedures() and propose again if it is still wanted.",
            )
        written = f"active:{row.id}"
        confirmations.mark_executed(decisions, row.id, written, "", moment)
        stored = connection.execute(
            f"""
            INSERT INTO procedures (id, kind, text, agent, sources, confirmation_id, confirmed_by, confirmed_at,
                recorded_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            RETURNING {_COLUMNS}
            """,
            (
                pid,
                kind,
                text,
                row.agent,
                json.dumps(sources, ensure_ascii=False),
                row.id,
                row.operator,
                row.decided_at,
                _iso(moment),
            ),
        ).fetchone()
    return _as_dict(stored)


def _validated(text: Any, kind: Any, sources: Any) -> tuple[str, str, list[str]]:
    if kind not in KINDS:
        raise ValueError(f"unknown procedure kind {kind!r}; the kinds are {', '.join(KINDS)}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("a procedure needs its text: what the person prefers or how they work")
    if len(text.strip()) > MAX_TEXT_CHARS:
        raise ValueError(f"a procedure is a short statement (at most {MAX_TEXT_CHARS} characters); summarise it")
    if isinstance(sources, str) or not isinstance(sources, Sequence) or not sources:
        raise ValueError('say where the procedure came from: sources like ["user"], ["vault:notes/x.md#L12"]')
    for source in sources:
        if not isinstance(source, str) or not (
            source == USER_SOURCE
            or (source.startswith("vault:") and len(source) > len("vault:"))
            or source.startswith(("url:http://", "url:https://"))
        ):
            raise ValueError(f'unknown source {source!r}; use "user", "vault:PATH#Lline" or "url:https://..."')
    return text.strip(), kind, list(sources)


def _warnings(vault: str | os.PathLike[str], text: str, sources: list[str]) -> list[str]:
    found = [
        f"looks like an instruction to a model, not a preference: {reason}" for reason in looks_like_instruction(text)
    ]
    found += [
        f"found in vault document {hit}: text copied from a document is document content, not the person's instruction"
        for hit in found_in_vault(vault, text)
    ]
    found += [f"source {source} came from content, not from the person" for source in sources if source != USER_SOURCE]
    return found


def _summary(pid: str, kind: str, text: str, agent: str, sources: list[str], state: str, warnings: list[str]) -> str:
    again = "" if state == destinations.ABSENT else f", recorded before and now {state.split(':')[0]}"
    lines = [
        f"remember a {kind} as {pid}{again}, proposed by {agent}, stated sources: {', '.join(sources)}",
        *(f"    {line}" for line in text.splitlines()),
    ]
    if warnings:
        lines.append(f"WARNINGS ({len(warnings)}): approve only if the person really wants this remembered")
        lines += [f"  - {warning}" for warning in warnings]
    else:
        lines.append("warnings: none found (the checks are heuristics; read the text)")
    return "\n".join(lines)


def _state(connection: sqlite3.Connection, pid: str) -> str:
    """``absent``, or ``active:<confirmation>`` / ``retired:<confirmation>`` of the id's newest row."""
    row = connection.execute(
        "SELECT confirmation_id, retired_at FROM procedures WHERE id = ? ORDER BY seq DESC LIMIT 1", (pid,)
    ).fetchone()
    if row is None:
        return destinations.ABSENT
    return f"{'retired' if row[1] else 'active'}:{row[0]}"


def _as_dict(row: Sequence[Any]) -> dict[str, Any]:
    names = [name.strip() for name in _COLUMNS.split(",")]
    result = dict(zip(names, row, strict=True))
    result["sources"] = json.loads(result["sources"])
    return result


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware (UTC)")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _v1_procedures(connection: sqlite3.Connection) -> None:
    connection.execute(
        """
        CREATE TABLE procedures (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL CHECK (id LIKE 'proc-%'),
            kind TEXT NOT NULL CHECK (kind IN ('preference', 'project', 'practice')),
            text TEXT NOT NULL CHECK (trim(text) <> ''),
            agent TEXT NOT NULL,
            sources TEXT NOT NULL CHECK (json_valid(sources)),
            confirmation_id TEXT NOT NULL UNIQUE,
            confirmed_by TEXT NOT NULL,
            confirmed_at TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            retired_at TEXT,
            retired_by TEXT,
            CHECK ((retired_at IS NULL) = (retired_by IS NULL))
        )
        """
    )
    connection.execute("CREATE UNIQUE INDEX procedures_one_active ON procedures (id) WHERE retired_at IS NULL")
    connection.execute(
        "CREATE TRIGGER procedures_never_deleted BEFORE DELETE ON procedures "
        "BEGIN SELECT RAISE(ABORT, 'procedures are retired, never deleted'); END"
    )
    connection.execute(
        "CREATE TRIGGER procedures_recorded_fields_fixed BEFORE UPDATE OF seq, id, kind, text, agent, sources, "
        "confirmation_id, confirmed_by, confirmed_at, recorded_at ON procedures "
        "BEGIN SELECT RAISE(ABORT, 'a recorded procedure is not edited; retire it and propose a new one'); END"
    )
    connection.execute(
        "CREATE TRIGGER procedures_retired_once BEFORE UPDATE OF retired_at, retired_by ON procedures "
        "WHEN OLD.retired_at IS NOT NULL BEGIN SELECT RAISE(ABORT, 'a procedure is retired only once'); END"
    )


# MIGRATIONS[n] takes the file from PRAGMA user_version n to n + 1. Append only.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_v1_procedures,)
SCHEMA_VERSION = len(MIGRATIONS)


def _connection(home: Home) -> AbstractContextManager[sqlite3.Connection]:
    return _file(home).connection()


def _write(home: Home) -> AbstractContextManager[sqlite3.Connection]:
    return _file(home).write()


def _file(home: Home) -> SqliteFile:
    return SqliteFile(store_path(home), MIGRATIONS, "procedures store", ProceduresStoreError)


__all__ = [
    "KINDS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TOOL",
    "Pending",
    "ProceduresStoreError",
    "execute_procedure",
    "found_in_vault",
    "looks_like_instruction",
    "procedure_id",
    "procedures",
    "propose_procedure",
    "render_for_model",
    "retire_procedure",
    "store_path",
]
