"""Note approval: an agent's note in the agent folder enters the graph only once a person approved it.

The front matter's ``status`` is written by whoever writes the file, an agent included, so an agent's own
``status: approved`` cannot let a note in. A note in the agent folder is held when its front matter says
``status: pending`` (what ``learn`` writes), or when its bytes are exactly what an agent wrote through the
tools (the ``written_state`` of an executed confirmation), unless a row in the decisions store approves
exactly those bytes (``destinations.bytes_state``). So an agent that marks its note approved, or edits an
approved note through the tools, puts it on hold, while a note a person wrote or approved by hand in that
folder (the example vault has one) is read like any other. ``approve_note`` rewrites the front matter
(``status: approved``, who, when) and records the state of those new bytes in the same decisions-store
transaction, so the approved version is the one on disk. Rows are append-only; the newest row for a
(path, state) is its verdict.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engramrag.agent import destinations
from engramrag.agent.confirmations import Refused, write_transaction
from engramrag.agent.domains import Edit, apply_edit, split_document
from engramrag.decisions.sqlite_file import reading_only
from engramrag.decisions.store import DecisionsStore
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.markdown import parse_document

APPROVED = "approved"
REJECTED = "rejected"
AWAITING_APPROVAL = "awaiting_approval"
_COLUMNS = "id, path, content_state, verdict, operator, decided_at, note"


@dataclass(frozen=True)
class NoteVersion:
    """One note as it is on disk now: its bytes' state, front matter and title (``error`` when unparsable)."""

    path: str
    raw: bytes
    state: str
    front_matter: dict[str, Any] = field(default_factory=dict)
    title: str = ""
    error: str | None = None


def in_agent_folder(relative_path: str, config: VaultConfig | None = None) -> bool:
    """Whether the vault path lies inside the agent folder (the same rule that flags notes agent-authored)."""
    folder = (config or VaultConfig()).agent_folder.strip("/")
    return bool(folder) and "/" in relative_path and relative_path.split("/", 1)[0] == folder


def approved_states(home: Home, read_only: bool = False) -> frozenset[tuple[str, str]]:
    """Every (path, content state) whose newest verdict is an approval; empty when no decisions store exists.
    ``read_only`` (estimates) reads the store without opening it for writing, so no migration runs either."""
    if not home.decisions_path.exists():
        return frozenset()
    verdicts: dict[tuple[str, str], str] = {}
    rows = _read_only_rows(home, f"SELECT {_COLUMNS} FROM note_approvals ORDER BY id") if read_only else _rows(home)
    for _, path, state, verdict, *_ in rows:
        verdicts[(path, state)] = verdict
    return frozenset(key for key, verdict in verdicts.items() if verdict == APPROVED)


def held_message(relative_path: str, approved_before: bool = False) -> str:
    """What the sync records for a held note: why it is not in the graph and how a person lets it in."""
    why = "changed since a person approved it and waits" if approved_before else "is an agent's note waiting"
    return (
        f"{relative_path} {why} for a person's approval: run `engram agent note {relative_path}` and approve the "
        f"version shown with `engram agent approve {relative_path} --hash HASH`, or use the dashboard's Agent "
        "writes page"
    )


def is_held(
    home: Home,
    relative_path: str,
    raw_bytes: bytes,
    config: VaultConfig | None = None,
    approved: frozenset[tuple[str, str]] | None = None,
    agent_written: frozenset[tuple[str, str]] | None = None,
) -> str | None:
    """None when the file may join the lifecycle, else the message saying it waits for a person's approval.

    Only files in the agent folder are ever held: those whose front matter says ``status: pending`` and those
    whose bytes an agent wrote through the tools, while no approval row matches exactly these bytes.
    ``approved`` and ``agent_written`` (from ``approved_states``/``agent_written_states``) let a caller
    checking many files read the store once.
    """
    if not in_agent_folder(relative_path, config):
        return None
    states = approved if approved is not None else approved_states(home)
    state = destinations.bytes_state(raw_bytes)
    if (relative_path, state) in states:
        return None
    written = agent_written if agent_written is not None else agent_written_states(home)
    if not _says_pending(raw_bytes) and (relative_path, state) not in written:
        return None
    return held_message(relative_path, any(path == relative_path for path, _ in states))


def agent_written_states(home: Home, read_only: bool = False) -> frozenset[tuple[str, str]]:
    """Every (path, content state) an agent write produced through the tools (executed confirmations)."""
    if not home.decisions_path.exists():
        return frozenset()
    query = ("SELECT relative_path, written_state FROM agent_confirmations "
             "WHERE status = 'executed' AND written_state IS NOT NULL")
    if read_only:
        return frozenset((path, state) for path, state in _read_only_rows(home, query))
    with DecisionsStore.for_home(home)._connection() as connection:
        rows = connection.execute(query).fetchall()
    return frozenset((path, state) for path, state in rows)


def _read_only_rows(home: Home, query: str) -> list[tuple[Any, ...]]:
    """``query``'s rows, read without writing anything; none from a store too old to have the table (such a
    store has no approvals and no agent writes yet)."""
    with reading_only(home.decisions_path) as connection:
        if connection is None:
            return []
        try:
            return connection.execute(query).fetchall()
        except sqlite3.OperationalError as error:
            if "no such table" in str(error):
                return []
            raise


def _says_pending(raw_bytes: bytes) -> bool:
    try:
        front_matter, _ = split_document(raw_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return True  # unreadable front matter in the agent folder: a person should look before it counts
    return str(front_matter.get("status", "")).strip().lower() == "pending"


class ApprovalGate:
    """``is_held`` for one sync call: the store is read once, on the first file of the agent folder.

    A vault without agent notes never opens the decisions store, so the sync costs what it did before.
    """

    def __init__(self, home: Home, config: VaultConfig, read_only: bool = False) -> None:
        self.home = home
        self.config = config
        self.read_only = read_only  # an estimate: read the store without opening it for writing
        self._approved: frozenset[tuple[str, str]] | None = None
        self._agent_written: frozenset[tuple[str, str]] | None = None

    def held(self, relative_path: str, raw_bytes: bytes) -> str | None:
        if not in_agent_folder(relative_path, self.config):
            return None
        if self._approved is None or self._agent_written is None:
            self._approved = approved_states(self.home, self.read_only)
            self._agent_written = agent_written_states(self.home, self.read_only)
        return is_held(self.home, relative_path, raw_bytes, self.config, self._approved, self._agent_written)


def agent_note_paths(vault: str | os.PathLike[str], config: VaultConfig | None = None) -> list[str]:
    """The vault paths of the visible Markdown notes under the agent folder, sorted."""
    config = config or VaultConfig()
    root = Path(vault).resolve()
    folder = root / config.agent_folder.strip("/")
    if not config.agent_folder.strip("/") or not folder.is_dir() or folder.is_symlink():
        return []
    found = []
    for current, subfolders, files in os.walk(folder):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        for name in files:
            if not name.startswith(".") and name.lower().endswith(config.suffixes):
                found.append((Path(current) / name).relative_to(root).as_posix())
    return sorted(found)


def read_note(vault: str | os.PathLike[str], relative_path: str, config: VaultConfig | None = None) -> NoteVersion:
    """The note's current version, read without following symlinks; Refused when it does not exist."""
    config = config or VaultConfig()
    parts = destinations.relative_parts(relative_path, config)
    path = "/".join(parts)
    raw = destinations.read_bytes(Path(vault).resolve(), parts)
    if raw is None:
        raise Refused("note", f"{path} does not exist in the vault; list the held notes with pending_notes().")
    state = destinations.bytes_state(raw)
    try:
        document = parse_document(raw, path, config)
    except DocumentRejected as rejection:
        return NoteVersion(path, raw, state, {}, path.rsplit("/", 1)[-1].rsplit(".", 1)[0], rejection.message)
    return NoteVersion(path, raw, state, dict(document.front_matter), document.title)


def pending_notes(
    home: Home, vault: str | os.PathLike[str], config: VaultConfig | None = None
) -> list[dict[str, Any]]:
    """The agent notes held now (no approval for their current bytes), with what a person needs to decide.

    ``approved_before`` says an earlier version was approved (the note changed since); ``rejected`` says a
    person already rejected exactly this version (it stays held until it changes or someone approves it).
    """
    config = config or VaultConfig()
    history = _history(home)
    approved, agent_written = approved_states(home), agent_written_states(home)
    held = []
    for relative_path in agent_note_paths(vault, config):
        try:
            note = read_note(vault, relative_path, config)
        except Refused:
            continue
        if is_held(home, relative_path, note.raw, config, approved, agent_written) is None:
            continue
        verdicts = history.get(relative_path, [])
        current = [row for row in verdicts if row["content_state"] == note.state]
        front = note.front_matter
        held.append(
            {
                "path": note.path,
                "title": note.title,
                "author": front.get("author"),
                "status": front.get("status"),
                "learned_at": front.get("learned_at"),
                "sources": front.get("sources") or [],
                "content_state": note.state,
                "approved_before": any(row["verdict"] == APPROVED for row in verdicts),
                "rejected": bool(current) and current[-1]["verdict"] == REJECTED,
                "rejection_note": current[-1]["note"] if current else "",
                "error": note.error,
            }
        )
    return held


def approve_note(
    home: Home,
    vault: str | os.PathLike[str],
    path: str,
    operator: str,
    note: str = "",
    config: VaultConfig | None = None,
    now: datetime | None = None,
    expected_state: str | None = None,
) -> dict[str, Any]:
    """Approve the held note's current version: mark its front matter approved and record the new bytes.

    The file write and the approval row share one decisions-store transaction, and the file is re-read
    inside it, so a note that changed after it was read is refused rather than approved unseen.
    ``expected_state`` is the state of the bytes the person was shown; other bytes are refused.
    """
    operator, moment, config, current = _verdict_on_held_note(home, vault, path, operator, config, now, "approve")
    if expected_state is not None and current.state != expected_state:
        raise Refused(
            "changed-since",
            f"{current.path} changed since it was shown (shown {expected_state}, now {current.state}); look at it "
            "again (`engram agent notes`) and approve what you see now.",
        )
    if current.error is not None:
        raise Refused("note", f"{current.path} cannot be approved as it is: {current.error}")
    edit = Edit(fields={"status": APPROVED, "approved_by": operator, "approved_at": _iso(moment)})
    new = apply_edit(current.raw.decode("utf-8"), edit, current.path).encode("utf-8")
    new_state = destinations.bytes_state(new)
    root = Path(vault).resolve()
    parts = destinations.relative_parts(current.path, config)
    with write_transaction(home) as connection:
        if destinations.bytes_state(destinations.read_bytes(root, parts)) != current.state:
            raise Refused("changed-since", f"{current.path} changed while it was being approved; look at it again.")
        row = _insert(connection, current.path, new_state, APPROVED, operator, moment, note)
        destinations.write_bytes(root, parts, new)
    return {**row, "title": current.title, "approved_state": new_state, "prior_state": current.state}


def reject_note(
    home: Home,
    vault: str | os.PathLike[str],
    path: str,
    operator: str,
    note: str = "",
    config: VaultConfig | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Record a person's rejection of the held note's current version; the file is left as it is, still held."""
    operator, moment, _, current = _verdict_on_held_note(home, vault, path, operator, config, now, "reject")
    with write_transaction(home) as connection:
        row = _insert(connection, current.path, current.state, REJECTED, operator, moment, note)
    return {**row, "title": current.title}


def approvals(home: Home, path: str | None = None) -> list[dict[str, Any]]:
    """Every approval and rejection ever recorded (optionally of one path), oldest first: the audit."""
    names = [name.strip() for name in _COLUMNS.split(",")]
    return [dict(zip(names, row, strict=True)) for row in _rows(home) if path is None or row[1] == path]


def _verdict_on_held_note(
    home: Home,
    vault: str | os.PathLike[str],
    path: str,
    operator: str,
    config: VaultConfig | None,
    now: datetime | None,
    verb: str,
) -> tuple[str, datetime, VaultConfig, NoteVersion]:
    """What approving and rejecting both start from: the operator (refused when blank), the moment, the config,
    and the note as it is now, refused unless it is an agent note held for approval (``verb`` says which)."""
    operator = _operator(operator)
    moment = now or datetime.now(UTC)
    config = config or VaultConfig()
    note = read_note(vault, path, config)
    if not in_agent_folder(note.path, config):
        raise Refused(
            "note",
            f"{note.path} is not in the agent folder {config.agent_folder}/; only agent notes wait for approval.",
        )
    if is_held(home, note.path, note.raw, config) is None:
        raise Refused(
            "already-approved",
            f"{note.path} is approved as it is now; there is nothing to {verb}. To take it out of the graph, move "
            "or delete the file.",
        )
    return operator, moment, config, note


def _history(home: Home) -> dict[str, list[dict[str, Any]]]:
    by_path: dict[str, list[dict[str, Any]]] = {}
    for row in approvals(home) if home.decisions_path.exists() else []:
        by_path.setdefault(row["path"], []).append(row)
    return by_path


def _rows(home: Home) -> list[tuple[Any, ...]]:
    with DecisionsStore.for_home(home)._connection() as connection:
        return connection.execute(f"SELECT {_COLUMNS} FROM note_approvals ORDER BY id").fetchall()


def _insert(
    connection: Any, path: str, state: str, verdict: str, operator: str, moment: datetime, note: str
) -> dict[str, Any]:
    row = connection.execute(
        f"INSERT INTO note_approvals (path, content_state, verdict, operator, decided_at, note) "
        f"VALUES (?, ?, ?, ?, ?, ?) RETURNING {_COLUMNS}",
        (path, state, verdict, operator, _iso(moment), note or ""),
    ).fetchone()
    return dict(zip([name.strip() for name in _COLUMNS.split(",")], row, strict=True))


def _operator(operator: str) -> str:
    if not isinstance(operator, str) or not operator.strip():
        raise ValueError("a note approval needs an operator: who decided it")
    return operator.strip()


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware (UTC)")
    return moment.astimezone(UTC).isoformat(timespec="seconds")


__all__ = [
    "APPROVED",
    "AWAITING_APPROVAL",
    "REJECTED",
    "ApprovalGate",
    "NoteVersion",
    "agent_note_paths",
    "approvals",
    "approve_note",
    "approved_states",
    "held_message",
    "in_agent_folder",
    "is_held",
    "pending_notes",
    "read_note",
    "reject_note",
]
