"""The agent write path: propose a write, let a person decide, execute only what was bound.

``propose_write``/``propose_edit`` touch no file: they resolve the destination, compute the new content and
its diff, check the field domain, and issue a confirmation row. ``execute`` then re-checks every binding
against the row (decision, single use, window, argument hash, destination, domain), records a checkpoint of
the prior bytes and writes atomically, all inside one decisions-store transaction, so a failed write leaves
the row unspent. The permission mode decides what needs a person: ``read-only`` refuses every write (and
records the refusal), ``confirm-each-write`` waits for ``decide``, ``trusted-paths`` lets writes inside the
listed folders through at once, still recorded (operator ``policy:trusted-path``) and checkpointed.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engramrag.agent import approvals, checkpoints, confirmations, destinations, note_checks
from engramrag.agent import policy as write_policy
from engramrag.agent.confirmations import Refused, Window
from engramrag.agent.domains import Edit, FieldDomain, apply_edit, changed_parts
from engramrag.store import Home

READ_ONLY = "read-only"
CONFIRM_EACH_WRITE = "confirm-each-write"
TRUSTED_PATHS = "trusted-paths"
MODES = (READ_ONLY, CONFIRM_EACH_WRITE, TRUSTED_PATHS)
TRUSTED_OPERATOR = "policy:trusted-path"
READ_ONLY_OPERATOR = "policy:read-only"


@dataclass(frozen=True)
class Policy:
    """The permission mode, trusted folders, window and write policy rules; ``version`` goes on rows.

    ``version`` defaults to the content hash of ``text`` (the rules' file text with the mode, folders and window),
    so every row names the exact policy that was in force, the built-in default included.
    """

    mode: str = CONFIRM_EACH_WRITE
    trusted_paths: tuple[str, ...] = ("learned/",)
    window_s: float = 900.0
    version: str = ""
    rules: write_policy.WritePolicy = field(default_factory=write_policy.WritePolicy)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown permission mode {self.mode!r}; the modes are {', '.join(MODES)}")
        if not self.version:
            object.__setattr__(self, "version", write_policy.version_of(self.text))

    @property
    def text(self) -> str:
        return write_policy.policy_text(self.rules, self.mode, self.trusted_paths, self.window_s)

    def trusts(self, relative_path: str) -> bool:
        folders = [folder.strip("/") + "/" for folder in self.trusted_paths if folder.strip("/")]
        return self.mode == TRUSTED_PATHS and any(relative_path.startswith(folder) for folder in folders)


@dataclass(frozen=True)
class Pending:
    """A proposed write waiting for ``decide``: what a person is shown."""

    confirmation_id: str
    summary: str
    diff: str
    expires_at: str


@dataclass(frozen=True)
class Executed:
    """A write that happened, the confirmation it spent and the checkpoint that can rewind it."""

    confirmation_id: str
    path: str
    checkpoint_id: str
    written_state: str
    operator: str


def propose_write(
    home: Home,
    vault: str | os.PathLike[str],
    path: str,
    content: str,
    agent: str,
    policy: Policy | None = None,
    domain: FieldDomain | None = None,
    now: datetime | None = None,
) -> Pending | Executed:
    """Propose creating or replacing the note at ``path`` with ``content`` (Executed at once on a trusted path)."""
    arguments = {"tool": "write", "path": path, "content": content, "agent": agent}
    return _propose(home, vault, arguments, policy or Policy(), domain or FieldDomain(), now)


def propose_edit(
    home: Home,
    vault: str | os.PathLike[str],
    path: str,
    changes: Edit,
    agent: str,
    policy: Policy | None = None,
    domain: FieldDomain | None = None,
    now: datetime | None = None,
) -> Pending | Executed:
    """Propose front-matter updates and/or section replacements on an existing note."""
    arguments = {"tool": "edit", "path": path, "changes": changes.as_arguments(), "agent": agent}
    return _propose(home, vault, arguments, policy or Policy(), domain or FieldDomain(), now)


def execute(
    home: Home,
    vault: str | os.PathLike[str],
    confirmation_id: str,
    arguments: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> Executed:
    """Carry out an approved confirmation, or raise Refused naming the binding that failed.

    ``arguments`` are the call as the agent makes it again at execution; when given they must hash to the
    bound arguments. A refusal is noted on the row (the audit shows it) and writes nothing.
    """
    moment = now or datetime.now(UTC)
    try:
        return _execute(home, Path(vault).resolve(), confirmation_id, arguments, moment)
    except Refused as refusal:
        if refusal.binding != "unknown-confirmation":
            confirmations.record_refusal(home, confirmation_id, refusal, moment, fail=True)
        raise


def _propose(
    home: Home,
    vault: str | os.PathLike[str],
    arguments: dict[str, Any],
    policy: Policy,
    domain: FieldDomain,
    now: datetime | None,
) -> Pending | Executed:
    moment = now or datetime.now(UTC)
    root = Path(vault).resolve()
    destination = destinations.resolve(root, arguments["path"])
    prior = destinations.read_bytes(root, destinations.relative_parts(destination.relative_path))
    new = _render(arguments, prior)
    fields, sections = _changes(prior, new)
    diff = _diff(destination.relative_path, prior, new)
    summary = (
        f"{arguments['tool']} {destination.relative_path} ({'new file' if prior is None else 'existing file'}): "
        f"fields {sorted(fields) or 'none'}; sections {sorted(sections) or 'none'}; by {arguments['agent']}"
    )
    window = Window(moment, moment + timedelta(seconds=policy.window_s), policy.version)
    write_policy.remember(home, policy.version, policy.text, moment)
    try:
        if policy.mode != READ_ONLY:  # read-only refuses every write below, whatever it holds
            domain = policy.rules.domain_for(destination.relative_path, domain)
            domain.check(fields, sections, destination.relative_path)
            if approvals.in_agent_folder(destination.relative_path):
                note_checks.check_agent_note(
                    home, root, destination.relative_path, prior, new, arguments["agent"], now=moment
                )
            else:
                note_checks.check_author(destination.relative_path, prior, new, arguments["agent"])
    except Refused as refusal:
        _record_refused_proposal(home, arguments, policy, destination.as_row(), domain, window, summary, diff,
                                 refusal, moment)
        raise
    row = confirmations.issue(
        home,
        tool=arguments["tool"],
        agent=arguments["agent"],
        mode=policy.mode,
        arguments=arguments,
        destination=destination.as_row(),
        domain=domain.as_row(),
        window=window,
        summary=summary,
        diff=diff,
    )
    if policy.mode == READ_ONLY:
        confirmations.decide(home, row.id, False, READ_ONLY_OPERATOR, moment)
        raise Refused(
            "mode",
            f"the permission mode is read-only, so the write to {destination.relative_path} was refused and "
            f"recorded as {row.id}; switch to confirm-each-write to let a person approve writes.",
        )
    if policy.trusts(destination.relative_path) and not domain.confirmers:
        confirmations.decide(home, row.id, True, TRUSTED_OPERATOR, moment)
        return execute(home, root, row.id, arguments, moment)
    return Pending(row.id, summary, diff, row.expires_at or confirmations.UNKNOWN)


def _record_refused_proposal(
    home: Home,
    arguments: dict[str, Any],
    policy: Policy,
    destination: Mapping[str, str],
    domain: FieldDomain,
    window: Window,
    summary: str,
    diff: str,
    refusal: Refused,
    moment: datetime,
) -> None:
    """A proposal the policy or the note checks refused, kept as a refused row with its reason, for the audit."""
    row = confirmations.issue(
        home, tool=arguments["tool"], agent=arguments["agent"], mode=policy.mode, arguments=arguments,
        destination=destination, domain=domain.as_row(), window=window, summary=summary, diff=diff,
    )
    confirmations.decide(home, row.id, False, f"policy:{refusal.binding}", moment)
    confirmations.record_refusal(home, row.id, refusal, moment)


def _execute(
    home: Home, root: Path, confirmation_id: str, arguments: Mapping[str, Any] | None, moment: datetime
) -> Executed:
    row = confirmations.get(home, confirmation_id)
    if row.tool not in ("write", "edit"):
        raise Refused("tool", f"{row.id} confirms a {row.tool}, not a note write; it is executed by its own tool.")
    bound = confirmations.check_spendable(row, moment, arguments)
    destination, prior = destinations.snapshot(root, bound["path"])  # the one read: checked, edited, displaced
    for name, now_value in destination.as_row().items():
        then_value = getattr(row, "prior_state" if name == "state" else name)
        if now_value != then_value:
            raise Refused(
                "destination",
                f"the destination of {row.id} moved: {name} was {then_value} when confirmed and is {now_value} "
                "now (a file replaced, created or moved in between). Nothing was written; propose again.",
            )
    parts = destinations.relative_parts(destination.relative_path)
    new = _render(bound, prior)
    FieldDomain.from_row(json.loads(row.domain)).check(*_changes(prior, new), destination.relative_path)
    written = destinations.bytes_state(new)
    with confirmations.write_transaction(home) as connection:
        confirmations.check_status(confirmations.row_in(connection, row.id))
        checkpoint_id = checkpoints.record(
            connection, home, destination.vault_id, row.id, [(destination.relative_path, prior, written)], moment
        )
        confirmations.mark_executed(connection, row.id, written, checkpoint_id, moment)
        try:
            destinations.replace_exactly(root, parts, new, row.prior_state)
        except OSError as error:
            raise Refused("destination", f"{destination.relative_path} could not be written ({error}).") from error
    return Executed(row.id, destination.relative_path, checkpoint_id, written, row.operator or "")


def _render(arguments: Mapping[str, Any], prior: bytes | None) -> bytes:
    if arguments["tool"] == "write":
        return str(arguments["content"]).encode("utf-8")
    if prior is None:
        raise ValueError(f"{arguments['path']} does not exist; use a write to create it, not an edit.")
    changes = arguments["changes"]
    edit = Edit(fields=changes.get("fields", {}), sections=changes.get("sections", {}))
    return apply_edit(prior.decode("utf-8"), edit, arguments["path"]).encode("utf-8")


def _changes(prior: bytes | None, new: bytes) -> tuple[set[str], set[str]]:
    return changed_parts(prior.decode("utf-8") if prior is not None else None, new.decode("utf-8"))


def _diff(path: str, prior: bytes | None, new: bytes) -> str:
    before = prior.decode("utf-8").splitlines(keepends=True) if prior is not None else []
    lines = difflib.unified_diff(before, new.decode("utf-8").splitlines(keepends=True), f"a/{path}", f"b/{path}")
    return "".join(lines)


__all__ = [
    "CONFIRM_EACH_WRITE",
    "MODES",
    "READ_ONLY",
    "TRUSTED_OPERATOR",
    "TRUSTED_PATHS",
    "Executed",
    "Pending",
    "Policy",
    "execute",
    "propose_edit",
    "propose_write",
]
