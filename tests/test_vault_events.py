"""`engram watch` hears a vault's changes from the system: the notes written, moved or deleted are heard by path;
the notes read, and the stores written into a hidden folder of the vault, are not. A look at just those paths finds
what a look at the whole vault finds for them."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from engramrag.lifecycle.scan import scan_vault, vault_files
from engramrag.vault.config import VaultConfig
from pipelines.vault_events import Heard, VaultEvents


def _heard_within(events: VaultEvents, seconds: float) -> Heard | None:
    events.wait(seconds)
    time.sleep(0.1)  # the rest of one save's events
    return events.take()


def test_written_notes_are_heard_by_path_and_reads_and_hidden_folders_are_not(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "projects").mkdir(parents=True)
    (vault / ".engram").mkdir()
    note = vault / "projects" / "heron.md"
    note.write_text("# Heron\n", encoding="utf-8")
    events = VaultEvents.started(vault)
    assert events is not None
    try:
        time.sleep(0.2)
        assert events.take() is None
        note.read_text(encoding="utf-8")  # a build reading the note
        (vault / ".engram" / "catalog.duckdb").write_bytes(b"stores")  # a home inside the vault, written by a build
        assert _heard_within(events, 0.5) is None
        note.write_text("# Heron\n\nMoved to Thursday.\n", encoding="utf-8")
        assert _heard_within(events, 5.0) == Heard(frozenset({"projects/heron.md"}))
        assert events.take() is None  # taken once
        # An editor's save: a hidden swap file renamed onto the note.
        swap = vault / "projects" / ".heron.md.swp"
        swap.write_text("# Heron\n\nMoved to Friday.\n", encoding="utf-8")
        os.replace(swap, note)
        assert _heard_within(events, 5.0) == Heard(frozenset({"projects/heron.md"}))
        note.rename(vault / "projects" / "heron-launch.md")
        assert _heard_within(events, 5.0) == Heard(frozenset({"projects/heron.md", "projects/heron-launch.md"}))
        (vault / "projects" / "heron-launch.md").unlink()
        assert _heard_within(events, 5.0) == Heard(frozenset({"projects/heron-launch.md"}))
        (vault / "archive").mkdir()
        (vault / "projects").rename(vault / "archive" / "projects")  # a folder moved: everything is looked at
        assert _heard_within(events, 5.0) == Heard(None)
        assert events.listening()
    finally:
        events.close()
    assert not events.listening()  # the watcher then looks at the vault every time, as without system events


def test_a_look_at_some_paths_lists_them_as_a_look_at_the_whole_vault_does(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / ".obsidian").mkdir()
    (vault / "sources").mkdir()
    for name in ("a.md", "b.md", "skip.txt"):
        (vault / "notes" / name).write_text(f"# {name}\n", encoding="utf-8")
    (vault / ".obsidian" / "hidden.md").write_text("# hidden\n", encoding="utf-8")
    (vault / "notes" / "twin.md").symlink_to(vault / "notes" / "a.md")  # a link to a document: not listed
    outside = tmp_path / "secret.md"
    outside.write_text("# secret\n", encoding="utf-8")
    (vault / "notes" / "leak.md").symlink_to(outside)  # listed with where it leads, so the sync refuses it
    (vault / "linked").symlink_to(vault / "notes", target_is_directory=True)  # a linked folder is not followed
    config = VaultConfig(bucket_count=8)
    whole = {file.path: file for file in scan_vault(vault, config)}
    asked = ["notes/a.md", "notes/b.md", "notes/skip.txt", ".obsidian/hidden.md", "notes/twin.md", "notes/leak.md",
             "linked/a.md", "notes/gone.md", "notes", ""]  # fmt: skip
    some = {file.path: file for file in vault_files(vault, config, asked)}
    assert set(some) == {"notes/a.md", "notes/b.md", "notes/leak.md"} == set(whole) & set(asked)
    assert some == {path: whole[path] for path in some}
    assert some["notes/leak.md"].outside == str(outside.resolve())
    shutil.rmtree(vault / "notes")
    assert vault_files(vault, config, asked) == []
