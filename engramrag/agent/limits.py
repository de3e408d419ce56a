"""Refusals at proposal time, written down: oversized arguments, and every other check that fails before a row.

A write's arguments are stored whole on its confirmation row, so an agent sending 30 MB would put 30 MB into the
decisions store (and in front of a person). So each proposal's arguments are measured first (canonical JSON,
UTF-8) and refused over ``MAX_ARGUMENT_BYTES``, naming the limit. A refusal before a row exists (too large, a
path outside the vault, a change outside the field domain, a missing source, arguments that cannot be used)
still leaves a row: status ``refused``, operator ``policy:proposal-check``, the reason in ``last_refusal``, so
the audit shows every attempt. Oversized arguments are not stored; the row keeps their size and hash instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from engramrag.agent import confirmations, destinations
from engramrag.agent.confirmations import Refused, Window
from engramrag.store import Home

MAX_ARGUMENT_BYTES = 1_048_576
PROPOSAL_OPERATOR = "policy:proposal-check"
UNRESOLVED = "unresolved"


def check_size(tool: str, arguments: Mapping[str, Any], limit: int = MAX_ARGUMENT_BYTES) -> None:
    """Refused("size") when the call's canonical arguments are larger than ``limit`` bytes."""
    size = _size(arguments)
    if size > limit:
        raise Refused(
            "size",
            f"the {tool} call is {size:,} bytes of arguments; the limit is {limit:,} bytes (1 MiB). Nothing was "
            "proposed; split the change into smaller notes or edits.",
        )


@contextmanager
def recorded_proposal(
    home: Home, vault: str | os.PathLike[str], tool: str, agent: str, mode: str, arguments: Mapping[str, Any]
) -> Iterator[None]:
    """Check the size, then run the proposal; a refusal that left no row behind gets one, then is raised."""
    try:
        check_size(tool, arguments)
        yield
    except Refused as refusal:
        if refusal.binding != "mode" and getattr(refusal, "confirmation_id", None) is None:
            record(home, vault, tool, agent, mode, arguments, refusal)
        raise
    except ValueError as error:  # unusable arguments (an edit of a missing note, an unknown kind): refused too
        record(home, vault, tool, agent, mode, arguments, Refused("arguments", str(error)))
        raise


def record(
    home: Home,
    vault: str | os.PathLike[str],
    tool: str,
    agent: str,
    mode: str,
    arguments: Mapping[str, Any],
    refusal: Refused,
    now: datetime | None = None,
) -> str:
    """Write a refused row for a proposal that was refused before it was issued; returns its id."""
    moment = now or datetime.now(UTC)
    size = _size(arguments)
    kept = dict(arguments)
    if size > MAX_ARGUMENT_BYTES:
        kept = {
            "tool": tool,
            "agent": agent,
            "path": str(arguments.get("path") or arguments.get("title") or "")[:500],
            "arguments_bytes": size,
            "arguments_hash": confirmations.canonical_arguments(arguments)[1],
        }
    try:
        identity = destinations.vault_identity(vault)
    except (OSError, Refused):
        identity = UNRESOLVED
    row = confirmations.issue(
        home,
        tool=tool,
        agent=agent or "unknown agent",
        mode=mode,
        arguments=kept,
        destination={
            "vault_id": identity,
            "relative_path": str(kept.get("path") or kept.get("title") or "")[:500],
            "real_path": "",
            "state": UNRESOLVED,
        },
        domain={},
        window=Window(moment, moment, "proposal-refused"),
        summary=f"{tool} refused when proposed ({refusal.binding}): nothing to decide",
        diff="",
    )
    confirmations.decide(home, row.id, False, PROPOSAL_OPERATOR, moment)
    confirmations.record_refusal(home, row.id, refusal, moment)
    return row.id


def _size(arguments: Mapping[str, Any]) -> int:
    return len(confirmations.canonical_arguments(arguments)[0].encode("utf-8"))


__all__ = ["MAX_ARGUMENT_BYTES", "PROPOSAL_OPERATOR", "check_size", "record", "recorded_proposal"]
