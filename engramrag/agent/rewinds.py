"""An agent's rewind of a checkpoint: immediate for its own unreviewed writes, confirmed for a person's.

A rewind writes vault files (and deletes the ones the write created). When a person approved the write, undoing
it is a decision of the same weight, so an agent's rewind of such a write is a proposal: a pending confirmation
row (tool ``rewind``) that binds the checkpoint and the files' current state, shows the reverse diff, and is
decided like any write. Writes that ran under a policy (trusted paths) were never a person's decision, so the
agent may rewind those at once, as before. A person at the CLI rewinds directly (``engram agent rewind``).
"""

from __future__ import annotations

import difflib
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engramrag.agent import checkpoints, confirmations, destinations, writes
from engramrag.agent.confirmations import Refused, Window
from engramrag.store import Home

TOOL = "rewind"


def request(
    home: Home, vault: str | os.PathLike[str], checkpoint_id: str, agent: str, policy: writes.Policy
) -> dict[str, Any]:
    """The agent asks to rewind: done at once for a policy's write, a pending confirmation for a person's."""
    if policy.mode == writes.READ_ONLY:
        raise Refused("mode", "the permission mode is read-only: a rewind writes vault files.")
    root = Path(vault).resolve()
    point = _checkpoint(home, checkpoint_id)
    decided = confirmations.get(home, point["confirmation_id"]) if point["confirmation_id"] else None
    if decided is not None and (decided.operator or "").startswith("policy:"):
        return checkpoints.rewind(home, root, checkpoint_id, agent)
    return propose(home, root, point, agent, policy)


def propose(
    home: Home, root: Path, point: dict[str, Any], agent: str, policy: writes.Policy, now: datetime | None = None
) -> dict[str, Any]:
    """Issue a pending ``rewind`` confirmation binding the checkpoint and the files as they are now."""
    moment = now or datetime.now(UTC)
    if point["rewound_at"] is not None:
        raise Refused("single-use", f"checkpoint {point['id']} was rewound at {point['rewound_at']}.")
    states, diffs = [], []
    for entry in point["files"]:
        parts = destinations.relative_parts(entry["path"])
        current = destinations.read_bytes(root, parts)
        kept = entry["prior"]
        prior = None if kept == destinations.ABSENT else checkpoints.blob_path(home, kept).read_bytes()
        states.append(destinations.bytes_state(current))
        diffs.append(_diff(entry["path"], current, prior))
    paths = ", ".join(entry["path"] for entry in point["files"])
    summary = f"rewind {point['id']} ({paths}): put back the bytes from before write {point['confirmation_id']}"
    row = confirmations.issue(
        home,
        tool=TOOL,
        agent=agent,
        mode=policy.mode,
        arguments={"tool": TOOL, "checkpoint_id": point["id"], "agent": agent},
        destination={
            "vault_id": destinations.vault_identity(root),
            "relative_path": paths,
            "real_path": str(root),
            "state": ";".join(states),
        },
        domain={},
        window=Window(moment, moment + timedelta(seconds=policy.window_s), policy.version),
        summary=summary,
        diff="".join(diffs),
    )
    return {
        "status": confirmations.PENDING,
        "confirmation_id": row.id,
        "summary": summary,
        "diff": row.diff,
        "expires_at": row.expires_at,
        "next": f"a person approved the write this undoes, so a person decides the rewind too: `engram agent confirm "
        f"{row.id}`, the dashboard, or the confirm tool with a one-time code",
    }


def execute(home: Home, vault: str | os.PathLike[str], confirmation_id: str, now: datetime | None = None) -> dict:
    """Carry out an approved ``rewind`` confirmation; a refusal is recorded and fails the row."""
    moment = now or datetime.now(UTC)
    try:
        row = confirmations.get(home, confirmation_id)
        if row.tool != TOOL:
            raise Refused("tool", f"{row.id} confirms a {row.tool}, not a rewind.")
        bound = confirmations.check_spendable(row, moment)
        root = Path(vault).resolve()
        point = _checkpoint(home, bound["checkpoint_id"])
        now_states = ";".join(
            destinations.bytes_state(destinations.read_bytes(root, destinations.relative_parts(entry["path"])))
            for entry in point["files"]
        )
        if now_states != row.prior_state:
            raise Refused("destination", f"the files of {point['id']} changed since the rewind was proposed; "
                          "nothing was rewound. Propose the rewind again.")
        done = checkpoints.rewind(home, root, point["id"], row.operator or row.agent)
        with confirmations.write_transaction(home) as connection:
            confirmations.mark_executed(connection, row.id, "rewound", point["id"], moment)
    except Refused as refusal:
        if refusal.binding != "unknown-confirmation":
            confirmations.record_refusal(home, confirmation_id, refusal, moment, fail=True)
        raise
    return done


def _checkpoint(home: Home, checkpoint_id: str) -> dict[str, Any]:
    for point in checkpoints.checkpoints(home):
        if point["id"] == checkpoint_id:
            return point
    raise Refused("unknown-checkpoint", f"there is no checkpoint {checkpoint_id!r}; list them with checkpoints().")


def _diff(path: str, current: bytes | None, prior: bytes | None) -> str:
    before = current.decode("utf-8", "replace").splitlines(keepends=True) if current is not None else []
    after = prior.decode("utf-8", "replace").splitlines(keepends=True) if prior is not None else []
    return "".join(difflib.unified_diff(before, after, f"a/{path}", f"b/{path}"))


__all__ = ["TOOL", "execute", "propose", "request"]
