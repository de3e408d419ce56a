"""`engram watch` hears a vault's changes from the system: a note written, moved or deleted is heard; the notes
read, and the stores written into a hidden folder of the vault, are not."""

from __future__ import annotations

import time
from pathlib import Path

from pipelines.vault_events import VaultEvents


def _heard_within(events: VaultEvents, seconds: float) -> bool:
    events.wait(seconds)
    return events.take()


def test_a_written_note_is_heard_and_reads_and_hidden_folders_are_not(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "projects").mkdir(parents=True)
    (vault / ".engram").mkdir()
    note = vault / "projects" / "heron.md"
    note.write_text("# Heron\n", encoding="utf-8")
    events = VaultEvents.started(vault)
    assert events is not None
    try:
        time.sleep(0.2)
        assert not events.take()
        note.read_text(encoding="utf-8")  # a build reading the note
        (vault / ".engram" / "catalog.duckdb").write_bytes(b"stores")  # a home inside the vault, written by a build
        assert not _heard_within(events, 0.5)
        note.write_text("# Heron\n\nMoved to Thursday.\n", encoding="utf-8")
        assert _heard_within(events, 5.0)
        assert not events.take()  # taken once
        note.rename(vault / "projects" / "heron-launch.md")
        assert _heard_within(events, 5.0)
        (vault / "projects" / "heron-launch.md").unlink()
        assert _heard_within(events, 5.0)
        (vault / "archive").mkdir()
        (vault / "projects").rename(vault / "archive" / "projects")  # a folder moved: its notes moved
        assert _heard_within(events, 5.0)
    finally:
        events.close()
