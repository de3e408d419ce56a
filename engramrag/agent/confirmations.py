"""Confirmation records: a person's "yes" to an agent write as a row that binds what it said yes to.

A boolean "confirmed" cannot answer which request, what content, where, how much, or until when; a row can.
Each row binds, at the moment it is issued, the exact arguments (canonical JSON and its hash), the resolved
destination (vault identity, real path, the file's content hash or "absent"), the writable field domain and
the validity window (issued at, expires at, the policy version that set it). The window lives on the row so
an audit months later reads it from there instead of recomputing it from today's configuration. Approval and
refusal go through the one ``decide`` entry point and land on the same row, so a binding added to one can
never be forgotten by the other. Rows are never deleted.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from engramrag.decisions.store import DecisionsStore
from engramrag.store import Home

PENDING = "pending"
APPROVED = "approved"
REFUSED = "refused"
EXECUTED = "executed"
FAILED = "failed"
UNKNOWN = "unknown"

_COLUMNS = (
    "id, tool, agent, mode, arguments_text, arguments_hash, vault_id, relative_path, real_path, prior_state, "
    "domain, issued_at, expires_at, policy_version, summary, diff, status, operator, decided_at, executed_at, "
    "written_state, checkpoint_id, last_refusal, last_refusal_at, operator_auth"
)


class Refused(RuntimeError):
    """An agent write was refused; ``binding`` names what failed and the message says what to do."""

    def __init__(self, binding: str, message: str) -> None:
        super().__init__(message)
        self.binding = binding


@dataclass(frozen=True)
class Window:
    """How long a confirmation stays usable, and the policy version that decided it."""

    issued_at: datetime
    expires_at: datetime
    policy_version: str


@dataclass(frozen=True)
class Confirmation:
    """One row of ``agent_confirmations``; timestamps are ISO 8601 UTC strings, window fields may be None."""

    id: str
    tool: str
    agent: str
    mode: str
    arguments_text: str
    arguments_hash: str
    vault_id: str
    relative_path: str
    real_path: str
    prior_state: str
    domain: str
    issued_at: str | None
    expires_at: str | None
    policy_version: str | None
    summary: str
    diff: str
    status: str
    operator: str | None
    decided_at: str | None
    executed_at: str | None
    written_state: str | None
    checkpoint_id: str | None
    last_refusal: str | None
    last_refusal_at: str | None
    operator_auth: str | None = None

    @property
    def arguments(self) -> dict[str, Any]:
        return json.loads(self.arguments_text)

    def audit(self) -> dict[str, Any]:
        """Every bound field, with the window read from the row ("unknown" where the row has none)."""
        row = asdict(self)
        row["domain"] = json.loads(self.domain)
        row["domain_unconstrained"] = not row["domain"].get("fields") and not row["domain"].get("sections")
        row["arguments"] = json.loads(row.pop("arguments_text"))
        for name in ("issued_at", "expires_at", "policy_version"):
            if row[name] is None:
                row[name] = UNKNOWN
        return row


def canonical_arguments(arguments: Mapping[str, Any]) -> tuple[str, str]:
    """The canonical JSON text of a call's arguments and its blake2b hash; any changed character changes both."""
    try:
        text = json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"the arguments of an agent write must be plain JSON: {error}") from error
    return text, "blake2b:" + hashlib.blake2b(text.encode("utf-8"), digest_size=32).hexdigest()


def issue(
    home: Home,
    *,
    tool: str,
    agent: str,
    mode: str,
    arguments: Mapping[str, Any],
    destination: Mapping[str, str],
    domain: Mapping[str, Any],
    window: Window | None,
    summary: str,
    diff: str,
) -> Confirmation:
    """Write a pending confirmation row binding the call as it is now, and return it."""
    if not agent.strip():
        raise ValueError("every agent write names its agent")
    text, digest = canonical_arguments(arguments)
    domain_text = json.dumps(dict(domain), ensure_ascii=False, sort_keys=True)
    confirmation_id = "conf-" + secrets.token_hex(8)
    with _write(home) as connection:
        row = connection.execute(
            f"""
            INSERT INTO agent_confirmations (id, tool, agent, mode, arguments_text, arguments_hash, vault_id,
                relative_path, real_path, prior_state, domain, issued_at, expires_at, policy_version, summary, diff,
                status)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            RETURNING {_COLUMNS}
            """,
            (
                confirmation_id,
                tool,
                agent.strip(),
                mode,
                text,
                digest,
                destination["vault_id"],
                destination["relative_path"],
                destination["real_path"],
                destination["state"],
                domain_text,
                _iso(window.issued_at) if window else None,
                _iso(window.expires_at) if window else None,
                window.policy_version if window else None,
                summary,
                diff,
                PENDING,
            ),
        ).fetchone()
    return Confirmation(*row)


def decide(
    home: Home,
    confirmation_id: str,
    approve: bool,
    operator: str,
    now: datetime | None = None,
    auth: str | None = None,
) -> Confirmation:
    """Record a person's (or a policy's) approval or refusal on the row: who, when, and how they were known.

    The one entry point for both answers. Only a pending row can be decided; approving a row whose window has
    passed is refused (refusing it is always possible, so the record can say no). ``auth`` says how the
    operator was authenticated (see :mod:`engramrag.agent.operators`); a refusal here is noted on the row.
    """
    if not isinstance(operator, str) or not operator.strip():
        raise ValueError("a decision needs an operator: who decided it")
    moment = now or _utcnow()
    if auth is None:
        auth = "policy" if operator.strip().startswith("policy:") else "unverified-name"
    try:
        return _decide(home, confirmation_id, approve, operator, moment, auth)
    except Refused as refusal:
        if refusal.binding != "unknown-confirmation":
            record_refusal(home, confirmation_id, refusal, moment)
        raise


def _decide(
    home: Home, confirmation_id: str, approve: bool, operator: str, moment: datetime, auth: str
) -> Confirmation:
    with _write(home) as connection:
        current = _row(connection, confirmation_id)
        if current.status != PENDING:
            raise Refused(
                "single-use",
                f"confirmation {confirmation_id} was already decided ({current.status} by {current.operator} at "
                f"{current.decided_at}); ask the agent to propose the write again for a new confirmation.",
            )
        if approve:
            check_window(current, moment)
            check_confirmer(current, operator)
        row = connection.execute(
            f"UPDATE agent_confirmations SET status = ?, operator = ?, decided_at = ?, operator_auth = ? WHERE id = ? "
            f"RETURNING {_COLUMNS}",
            (APPROVED if approve else REFUSED, operator.strip(), _iso(moment), auth, confirmation_id),
        ).fetchone()
    return Confirmation(*row)


def check_window(confirmation: Confirmation, now: datetime) -> None:
    """Refuse when the row's own window has passed, or when the row has no window to check."""
    if confirmation.expires_at is None:
        raise Refused(
            "window",
            f"confirmation {confirmation.id} has no validity window on its row (unknown); it cannot be used, "
            "propose the write again.",
        )
    if now >= datetime.fromisoformat(confirmation.expires_at):
        raise Refused(
            "window",
            f"confirmation {confirmation.id} expired at {confirmation.expires_at} (policy "
            f"{confirmation.policy_version}); propose the write again and decide it within its window.",
        )


def confirmer_allowed(operator: str, confirmers: Any) -> bool:
    """Whether ``operator`` is one of ``confirmers`` (empty: any person may); a name with a note in parentheses
    after it ("Dana (MCP elicitation via X)") counts as that name."""
    if not confirmers:
        return True
    name = operator.strip().split(" (", 1)[0].strip()
    return name in {str(person).strip() for person in confirmers}


def check_confirmer(row: Confirmation, operator: str) -> None:
    """Refuse an approval by someone the write policy bound on the row does not name as a confirmer."""
    confirmers = json.loads(row.domain).get("confirmers") or []
    if not confirmer_allowed(operator, confirmers):
        raise Refused(
            "confirmer",
            f"the write policy lets only {', '.join(confirmers)} approve {row.id} ({row.relative_path}), not "
            f"{operator}; ask one of them to decide it (anyone may refuse it).",
        )


def check_status(row: Confirmation) -> None:
    """Refuse unless the row is approved and unspent: single use, and only a person's yes lets it run."""
    if row.status == EXECUTED:
        raise Refused("single-use", f"confirmation {row.id} was already used at {row.executed_at}; it is single use.")
    if row.status == REFUSED:
        raise Refused("decision", f"confirmation {row.id} was refused by {row.operator} at {row.decided_at}.")
    if row.status == FAILED:
        raise Refused(
            "single-use",
            f"confirmation {row.id} failed when it was executed at {row.last_refusal_at} (see its last_refusal); "
            "it is spent. Propose the write again for a new confirmation.",
        )
    if row.status != APPROVED:
        raise Refused("decision", f"confirmation {row.id} is still pending; a person must decide it first.")


def check_spendable(row: Confirmation, now: datetime, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The bound arguments, once the row is approved, unspent, inside its window and its arguments unchanged.

    ``arguments`` is the call as the agent makes it again at execution; when given it must hash to the bound
    arguments, and the refusal names the arguments that differ.
    """
    check_status(row)
    check_window(row, now)
    if canonical_arguments(row.arguments)[1] != row.arguments_hash:
        raise Refused("arguments", f"the arguments stored on {row.id} no longer match their hash; do not use it.")
    if arguments is not None and canonical_arguments(arguments)[1] != row.arguments_hash:
        every = row.arguments.keys() | arguments.keys()
        changed = sorted(key for key in every if row.arguments.get(key) != arguments.get(key))
        raise Refused(
            "arguments",
            f"the call differs from what {row.id} confirmed (changed: {', '.join(changed)}); propose the changed "
            "call for a new confirmation.",
        )
    return row.arguments


def get(home: Home, confirmation_id: str) -> Confirmation:
    """The row, or Refused("unknown-confirmation") when there is none."""
    with DecisionsStore.for_home(home)._connection() as connection:
        return _row(connection, confirmation_id)


def confirmations(home: Home) -> list[dict[str, Any]]:
    """The audit: every confirmation row ever issued, with all its bound fields, oldest first."""
    with DecisionsStore.for_home(home)._connection() as connection:
        rows = connection.execute(f"SELECT {_COLUMNS} FROM agent_confirmations ORDER BY rowid").fetchall()
    return [Confirmation(*row).audit() for row in rows]


def record_refusal(
    home: Home, confirmation_id: str, refusal: Refused, now: datetime | None = None, fail: bool = False
) -> None:
    """Note on the row why a proposal, decision or execution was refused, so the audit shows every attempt.

    With ``fail`` (an execution refused), an approved row becomes ``failed``: the approval is spent and the
    write cannot be retried silently; the agent proposes again and a person decides again. A failed row keeps
    the refusal that failed it.
    """
    refusal.confirmation_id = confirmation_id  # type: ignore[attr-defined]  # so no caller records it twice
    with _write(home) as connection:
        connection.execute(
            "UPDATE agent_confirmations SET last_refusal = ?, last_refusal_at = ?, "
            "status = CASE WHEN ? AND status = ? THEN ? ELSE status END WHERE id = ? AND status <> ?",
            (
                f"{refusal.binding}: {refusal}",
                _iso(now or _utcnow()),
                int(fail),
                APPROVED,
                FAILED,
                confirmation_id,
                FAILED,
            ),
        )


def mark_executed(connection: Any, confirmation_id: str, written_state: str, checkpoint_id: str, now: datetime) -> None:
    """Spend the confirmation inside the caller's write transaction; a row already spent refuses."""
    spent = connection.execute(
        "UPDATE agent_confirmations SET status = ?, executed_at = ?, written_state = ?, checkpoint_id = ? "
        "WHERE id = ? AND status = ?",
        (EXECUTED, _iso(now), written_state, checkpoint_id, confirmation_id, APPROVED),
    ).rowcount
    if spent != 1:
        raise Refused("single-use", f"confirmation {confirmation_id} was used by another execution meanwhile.")


@contextmanager
def _write(home: Home) -> Iterator[Any]:
    with DecisionsStore.for_home(home)._write() as connection:
        yield connection


def write_transaction(home: Home) -> Any:
    """One ``BEGIN IMMEDIATE`` transaction on the decisions store, for an execution that must be atomic."""
    return _write(home)


def row_in(connection: Any, confirmation_id: str) -> Confirmation:
    """The row read inside an open transaction."""
    return _row(connection, confirmation_id)


def _row(connection: Any, confirmation_id: str) -> Confirmation:
    row = connection.execute(f"SELECT {_COLUMNS} FROM agent_confirmations WHERE id = ?", (confirmation_id,)).fetchone()
    if row is None:
        raise Refused("unknown-confirmation", f"there is no confirmation {confirmation_id!r}; propose the write first.")
    return Confirmation(*row)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware (UTC)")
    return moment.isoformat(timespec="microseconds")


__all__ = [
    "APPROVED",
    "EXECUTED",
    "FAILED",
    "PENDING",
    "REFUSED",
    "UNKNOWN",
    "Confirmation",
    "Refused",
    "Window",
    "canonical_arguments",
    "check_confirmer",
    "check_window",
    "confirmations",
    "confirmer_allowed",
    "decide",
    "get",
    "issue",
    "mark_executed",
    "record_refusal",
    "row_in",
    "write_transaction",
]
