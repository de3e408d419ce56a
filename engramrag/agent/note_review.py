"""What a person reviews before approving an agent's note, and an approval bound to exactly that.

The listing (``engram agent notes``, the dashboard) shows each held note's whole text and each quote with
whether it is verbatim in its source now, plus the hash of the bytes shown. Approving takes that hash back:
bytes that changed since (an agent rewrote the note between the listing and the button) are refused with a
message to look again, and so is a note whose quotes no longer check, because a quote that was verbatim when
the agent wrote it may not be after its source was edited. A note (or a quote in it) that reads like an
instruction to a model is listed with ``warnings``: a verbatim quote of a planted instruction passes the quote
check, and approving it would carry the instruction into the graph. Every refused approval is kept in
``note_approval_refusals`` so the audit shows it.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from engramrag.agent import approvals
from engramrag.agent.confirmations import Refused
from engramrag.agent.injection import looks_like_instruction
from engramrag.agent.note_checks import MIN_QUOTE_CHARS, quote_status
from engramrag.decisions.store import DecisionsStore
from engramrag.store import Home
from engramrag.vault.config import VaultConfig

MIN_HASH_CHARS = 12


def pending_notes(
    home: Home, vault: str | os.PathLike[str], config: VaultConfig | None = None
) -> list[dict[str, Any]]:
    """``approvals.pending_notes`` with each note's full text (``body``), the hash to approve it by (``hash``,
    the state of exactly these bytes) and its sources with each quote checked now (``quotes_ok``)."""
    config = config or VaultConfig()
    notes = []
    for row in approvals.pending_notes(home, vault, config):
        note = approvals.read_note(vault, row["path"], config)
        checked = quote_status(vault, home, row.get("sources") or [], config)
        body = note.raw.decode("utf-8", errors="replace")
        notes.append({
            **row,
            "hash": note.state,
            "body": body,
            "sources": checked,
            "quotes_ok": _quote_problem(checked) is None,
            "quote_problem": _quote_problem(checked),
            "warnings": looks_like_instruction(body),
        })
    return notes


def approve_note(
    home: Home,
    vault: str | os.PathLike[str],
    path: str,
    operator: str,
    shown_state: str | None,
    note: str = "",
    config: VaultConfig | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Approve the note whose bytes hash to ``shown_state`` (a prefix of at least 12 hex digits will do);
    Refused, and recorded, when there is no hash, the note changed since it was shown, or a quote fails now."""
    config = config or VaultConfig()
    moment = now or datetime.now(UTC)
    current = None
    try:
        current = approvals.read_note(vault, path, config)
        if not shown_state or not shown_state.strip():
            raise Refused(
                "hash",
                f"approving {current.path} needs the hash of the version you read: list it with `engram agent notes` "
                "(or `engram agent note PATH`) and pass --hash.",
            )
        expected = _full_state(shown_state.strip(), current.state)
        if expected != current.state:
            raise Refused(
                "changed-since",
                f"{current.path} changed since it was shown (shown {shown_state.strip()}, now {current.state}); look "
                "at it again (`engram agent notes`) and approve what you see now.",
            )
        problem = _quote_problem(quote_status(vault, home, current.front_matter.get("sources") or [], config))
        if problem is not None:
            raise Refused(
                "quote",
                f"{current.path} cannot be approved: {problem}. Reject it, or ask the agent to correct the quote.",
            )
        return approvals.approve_note(home, vault, current.path, operator, note, config, moment, expected)
    except Refused as refusal:
        if refusal.binding not in ("note", "already-approved"):
            _record(home, current.path if current else path, shown_state, current.state if current else None,
                    operator, moment, refusal)
        raise


def refusals(home: Home, path: str | None = None) -> list[dict[str, Any]]:
    """Every refused note approval (optionally of one path), oldest first."""
    columns = ("id", "path", "shown_state", "current_state", "operator", "refused_at", "reason")
    with DecisionsStore.for_home(home)._connection() as connection:
        rows = connection.execute(f"SELECT {', '.join(columns)} FROM note_approval_refusals ORDER BY id").fetchall()
    return [dict(zip(columns, row, strict=True)) for row in rows if path is None or row[1] == path]


def _quote_problem(sources: list[dict[str, Any]]) -> str | None:
    if not any(entry.get("quote") for entry in sources):
        return f"no source is quoted (at least one quote of {MIN_QUOTE_CHARS}+ characters is needed)"
    for index, entry in enumerate(sources, 1):
        if entry.get("verbatim") is False or (entry.get("verbatim") and entry.get("problem")):
            return f"source {index} ({entry.get('path')}): {entry.get('problem')}"
    return None


def _full_state(shown: str, current: str) -> str:
    """The shown hash as a full state: itself, or ``current`` when it is a long enough prefix of it."""
    digits = shown.removeprefix("blake2b:")
    if shown != current and len(digits) >= MIN_HASH_CHARS and current.removeprefix("blake2b:").startswith(digits):
        return current
    return shown


def _record(
    home: Home, path: str, shown: str | None, current: str | None, operator: str, moment: datetime, refusal: Refused
) -> None:
    with DecisionsStore.for_home(home)._write() as connection:
        connection.execute(
            "INSERT INTO note_approval_refusals (path, shown_state, current_state, operator, refused_at, reason) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (path, shown, current, str(operator or ""), moment.isoformat(timespec="seconds"),
             f"{refusal.binding}: {refusal}"),
        )


__all__ = ["MIN_HASH_CHARS", "approve_note", "pending_notes", "refusals"]
