"""Who decided an agent write, and how we know it was a person and not the agent's own client.

Through MCP, a "person's answer" is whatever the agent's client sends back to an elicitation, so the answer
alone proves nothing: the client (or the agent driving it) can approve its own writes. An answer counts only
when it carries something the agent's channel cannot know:

- a **one-time code** that a person prints in their own terminal with ``engram agent code CONFIRMATION``, which
  shows the whole change first. The code is short-lived, single use, tied to that one confirmation (a code
  talked out of the person for another purpose cannot approve anything else), and only its hash is kept (table
  ``operator_codes`` of the decisions store). The operator recorded is the name the code was issued to, never
  a name the client sends.
- an **operator token**: a secret in a file the operator gives to ``engram mcp --operator-token-file`` and the
  agent process cannot read. The file must not be readable by group or others.

Every decision records how its operator was authenticated (``operator_auth`` on the row): one of the ``AUTH_*``
values below. The CLI and the dashboard record the name a person typed; they are not authenticated further,
they are simply outside the agent's channel.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engramrag.agent.confirmations import Refused
from engramrag.decisions.store import DecisionsStore
from engramrag.store import Home

AUTH_CLI = "cli:unverified-name"
AUTH_DASHBOARD = "dashboard:unverified-name"
AUTH_POLICY = "policy"
AUTH_CODE = "mcp:one-time-code"
AUTH_TOKEN = "mcp:operator-token"
CODE_TTL_S = 300.0
MAX_FAILURES = 5  # wrong codes typed before every outstanding code stops working
MIN_TOKEN_CHARS = 16
_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read off a screen and typed by hand
_CODE_CHARS = 10


@dataclass(frozen=True)
class OperatorCode:
    """A code as issued: ``code`` is shown once and never stored, only its hash."""

    id: str
    code: str
    operator: str
    confirmation_id: str
    issued_at: str
    expires_at: str


@dataclass(frozen=True)
class Authenticated:
    """The person behind a decision and how they were authenticated (``operator_auth`` on the row)."""

    operator: str
    auth: str


@dataclass(frozen=True)
class OperatorToken:
    """The digest of the operator's secret, read once from a file the agent cannot read."""

    digest: bytes
    source: str

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> OperatorToken:
        """Read the token; refused when the file is readable by group or others, or the token is short."""
        file = Path(path).expanduser()
        info = file.stat()
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ValueError(
                f"{file} is readable by group or others (mode {stat.filemode(info.st_mode)}); an operator token must "
                f"be readable only by the operator: chmod 600 {file}"
            )
        token = file.read_text(encoding="utf-8").strip()
        if len(token) < MIN_TOKEN_CHARS:
            raise ValueError(f"the operator token in {file} is shorter than {MIN_TOKEN_CHARS} characters")
        return cls(_digest(token), str(file))

    def matches(self, typed: str) -> bool:
        return hmac.compare_digest(self.digest, _digest(typed.strip()))


def issue_code(
    home: Home,
    operator: str,
    confirmation_id: str,
    ttl_s: float = CODE_TTL_S,
    now: datetime | None = None,
) -> OperatorCode:
    """A new one-time code for ``operator`` to answer ``confirmation_id``, valid ``ttl_s`` seconds."""
    if not isinstance(operator, str) or not operator.strip():
        raise ValueError("a code is issued to a person: pass --by NAME")
    if not 0 < ttl_s <= 3600:
        raise ValueError("a one-time code lives between 1 second and 1 hour")
    moment = now or datetime.now(UTC)
    raw = "".join(secrets.choice(_ALPHABET) for _ in range(_CODE_CHARS))
    code = f"{raw[:5]}-{raw[5:]}"
    issued = OperatorCode(
        "code-" + secrets.token_hex(6),
        code,
        operator.strip(),
        confirmation_id,
        moment.isoformat(timespec="microseconds"),
        (moment + timedelta(seconds=ttl_s)).isoformat(timespec="microseconds"),
    )
    with DecisionsStore.for_home(home)._write() as connection:
        known = connection.execute("SELECT 1 FROM agent_confirmations WHERE id = ?", (confirmation_id,)).fetchone()
        if known is None:
            raise Refused("unknown-confirmation", f"there is no confirmation {confirmation_id!r}.")
        connection.execute(
            "INSERT INTO operator_codes (id, code_hash, operator, confirmation_id, issued_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (issued.id, _code_hash(code), issued.operator, confirmation_id, issued.issued_at, issued.expires_at),
        )
    return issued


def redeem_code(home: Home, typed: str, confirmation_id: str, now: datetime | None = None) -> Authenticated:
    """Spend the code a person typed for ``confirmation_id``, or Refused("operator") saying what to do.

    A wrong code counts against every outstanding code: after five, they all stop working, so an agent
    cannot guess its way in.
    """
    moment = (now or datetime.now(UTC)).isoformat(timespec="microseconds")
    problem = None
    with DecisionsStore.for_home(home)._write() as connection:
        row = connection.execute(
            "SELECT id, operator, confirmation_id, expires_at, used_at, failures FROM operator_codes "
            "WHERE code_hash = ?",
            (_code_hash(typed),),
        ).fetchone()
        if row is None:
            problem = "that is not a code issued by `engram agent code`"
        else:
            code_id, operator, bound_to, expires_at, used_at, failures = row
            if used_at is not None:
                problem = f"code {code_id} was already used at {used_at}"
            elif moment >= expires_at:
                problem = f"code {code_id} expired at {expires_at}"
            elif failures >= MAX_FAILURES:
                problem = f"code {code_id} was withdrawn after {failures} wrong codes were typed"
            elif bound_to != confirmation_id:
                problem = f"code {code_id} was issued for {bound_to}, not {confirmation_id}"
        if problem is None:
            connection.execute(
                "UPDATE operator_codes SET used_at = ?, used_for = ? WHERE id = ?", (moment, confirmation_id, code_id)
            )
            return Authenticated(operator, f"{AUTH_CODE}:{code_id}")
        connection.execute(
            "UPDATE operator_codes SET failures = failures + 1 WHERE used_at IS NULL AND expires_at > ?", (moment,)
        )
    raise Refused(
        "operator",
        f"the person was not authenticated: {problem}. Nothing was decided; the confirmation stays pending. The "
        f"person runs `engram agent code {confirmation_id}` in their own terminal and types the code it prints, "
        f"or decides with `engram agent confirm {confirmation_id}` or on the dashboard.",
    )


def authenticate(
    home: Home, typed: str, confirmation_id: str, name: str = "", token: OperatorToken | None = None
) -> Authenticated:
    """The person behind an MCP answer: the operator token (named ``name``) or a one-time code, else Refused."""
    typed = (typed or "").strip()
    if not typed:
        raise Refused(
            "operator",
            "no code was typed, so the answer cannot be told apart from the agent's own client. Nothing was "
            f"decided. Run `engram agent code {confirmation_id}` in your own terminal and type the code it prints, "
            f"or decide with `engram agent confirm {confirmation_id}` or on the dashboard.",
        )
    if token is not None and token.matches(typed):
        return Authenticated((name or "").strip() or "operator", AUTH_TOKEN)
    return redeem_code(home, typed, confirmation_id)


def _code_hash(code: str) -> str:
    normal = "".join(character for character in code.upper() if character.isalnum())
    return "blake2b:" + hashlib.blake2b(normal.encode("ascii", "replace"), digest_size=32).hexdigest()


def _digest(token: str) -> bytes:
    return hashlib.blake2b(token.encode("utf-8"), digest_size=32).digest()


__all__ = [
    "AUTH_CLI",
    "AUTH_CODE",
    "AUTH_DASHBOARD",
    "AUTH_POLICY",
    "AUTH_TOKEN",
    "CODE_TTL_S",
    "Authenticated",
    "OperatorCode",
    "OperatorToken",
    "authenticate",
    "issue_code",
    "redeem_code",
]
