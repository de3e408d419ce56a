"""Checkpoints: the prior state of every file an agent write changes, so the write can be rewound.

Prior bytes go to content-addressed blobs under ``<home>/checkpoints/`` (identical bytes are stored once);
the metadata row (which files, their prior and written states) lives in the decisions store next to the
confirmation it belongs to. A rewind restores the prior bytes, deletes files the agent created, and refuses
when a file changed since the agent wrote it (a person's later edit would be lost) unless forced. The next
``engram build`` brings the graph in line; a rewind never touches the derived stores.
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engramrag.agent import destinations
from engramrag.agent.confirmations import Refused, write_transaction
from engramrag.decisions.store import DecisionsStore
from engramrag.store import Home

_COLUMNS = "id, confirmation_id, vault_id, created_at, files, rewound_at, rewound_by, rewind_forced"


def blob_path(home: Home, state: str) -> Path:
    digest = state.split(":", 1)[1]
    return home.root / "checkpoints" / digest[:2] / digest


def store_blob(home: Home, data: bytes) -> str:
    """Keep ``data`` as a blob (written atomically, once per content) and return its state string."""
    state = destinations.bytes_state(data)
    path = blob_path(home, state)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    return state


def record(
    connection: Any,
    home: Home,
    vault_id: str,
    confirmation_id: str,
    files: list[tuple[str, bytes | None, str]],
    now: datetime,
) -> str:
    """Record a checkpoint inside the caller's transaction; ``files`` holds (path, prior bytes, written state)."""
    rows = [
        {
            "path": path,
            "prior": store_blob(home, prior) if prior is not None else destinations.ABSENT,
            "written": written,
        }
        for path, prior, written in files
    ]
    checkpoint_id = "ckpt-" + secrets.token_hex(8)
    connection.execute(
        "INSERT INTO agent_checkpoints (id, confirmation_id, vault_id, created_at, files) VALUES (?, ?, ?, ?, ?)",
        (checkpoint_id, confirmation_id, vault_id, now.isoformat(timespec="microseconds"), json.dumps(rows)),
    )
    return checkpoint_id


def checkpoints(home: Home) -> list[dict[str, Any]]:
    """Every checkpoint, oldest first, with its files and whether (and by whom) it was rewound."""
    with DecisionsStore.for_home(home)._connection() as connection:
        rows = connection.execute(f"SELECT {_COLUMNS} FROM agent_checkpoints ORDER BY rowid").fetchall()
    return [_as_dict(row) for row in rows]


def rewind(
    home: Home, vault: str | os.PathLike[str], checkpoint_id: str, operator: str, force: bool = False
) -> dict[str, Any]:
    """Put every file of the checkpoint back as it was before the agent wrote it, and record who did it.

    Refused when the checkpoint was rewound already, belongs to another vault, or (unless ``force``) a file
    no longer holds what the agent wrote: someone edited it since, and rewinding would lose that edit.
    """
    if not isinstance(operator, str) or not operator.strip():
        raise ValueError("a rewind needs an operator: who asked for it")
    root = Path(vault).resolve()
    with write_transaction(home) as connection:
        row = connection.execute(f"SELECT {_COLUMNS} FROM agent_checkpoints WHERE id = ?", (checkpoint_id,)).fetchone()
        if row is None:
            raise Refused(
                "unknown-checkpoint", f"there is no checkpoint {checkpoint_id!r}; list them with checkpoints()."
            )
        checkpoint = _as_dict(row)
        if checkpoint["rewound_at"] is not None:
            raise Refused(
                "single-use",
                f"checkpoint {checkpoint_id} was rewound at {checkpoint['rewound_at']} by {checkpoint['rewound_by']}.",
            )
        if destinations.vault_identity(root) != checkpoint["vault_id"]:
            raise Refused("destination", f"checkpoint {checkpoint_id} belongs to vault {checkpoint['vault_id']}.")
        plans = []
        for entry in checkpoint["files"]:
            parts = destinations.relative_parts(entry["path"])
            current = destinations.bytes_state(destinations.read_bytes(root, parts))
            if current != entry["written"] and not force:
                raise Refused(
                    "changed-since",
                    f"{entry['path']} changed after the agent wrote it (someone edited it); rewinding would lose "
                    "that edit. Look at the file, then rewind with force=True if the edit should go.",
                )
            plans.append((parts, entry["prior"]))
        for parts, prior in plans:
            if prior == destinations.ABSENT:
                destinations.delete(root, parts)
            else:
                destinations.write_bytes(root, parts, blob_path(home, prior).read_bytes())
        now = datetime.now(UTC).isoformat(timespec="microseconds")
        connection.execute(
            "UPDATE agent_checkpoints SET rewound_at = ?, rewound_by = ?, rewind_forced = ? WHERE id = ?",
            (now, operator.strip(), int(force), checkpoint_id),
        )
    return {**checkpoint, "rewound_at": now, "rewound_by": operator.strip(), "rewind_forced": bool(force)}


def _as_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    names = [name.strip() for name in _COLUMNS.split(",")]
    result = dict(zip(names, row, strict=True))
    result["files"] = json.loads(result["files"])
    if result["rewind_forced"] is not None:
        result["rewind_forced"] = bool(result["rewind_forced"])
    return result


__all__ = ["blob_path", "checkpoints", "record", "rewind", "store_blob"]
