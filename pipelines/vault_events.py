"""What `engram watch` hears from the operating system about its vault (watchdog: inotify on Linux, FSEvents on
macOS), so that it looks at the vault when a file under it changed rather than every few seconds: a look at a
100,000-note vault took 4.6 s, so looking every two seconds kept a core busy while nothing changed, and a saved note
waited for the next look.

Only writes count: files and folders created, written, moved or deleted outside hidden folders (the home's
``.engram`` inside a vault, ``.git``, ``.obsidian``: a build writing its stores or reading the notes is no change).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path, PurePath

from watchdog.events import (
    DirModifiedEvent,
    FileClosedNoWriteEvent,
    FileOpenedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from engramrag.lifecycle.scan import hidden

log = logging.getLogger(__name__)

# Reading a file is no change, nor is a folder's own entry changing (its files' events say what changed).
NOT_WRITES = (FileOpenedEvent, FileClosedNoWriteEvent, DirModifiedEvent)


# More files than this written between two looks (a checkout, a sync): the whole vault is looked at.
MOST_PATHS = 2_000


@dataclass(frozen=True)
class Heard:
    """What changed since the last look: these vault paths (POSIX, relative), or anything (``paths`` None: a folder
    moved or deleted, or too many files to name)."""

    paths: frozenset[str] | None


class VaultEvents(FileSystemEventHandler):
    """Which files of the vault changed since the last ``take``, heard on watchdog's thread."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault.resolve()
        self._heard = threading.Event()
        self._lock = threading.Lock()
        self._paths: set[str] | None = set()
        self._observer = Observer()

    @classmethod
    def started(cls, vault: Path) -> VaultEvents | None:
        """Listening to the vault, or None when the system cannot tell (too many folders for inotify's limit, a
        file system without events): the caller then looks every so often, as before."""
        events = cls(vault)
        try:
            events._observer.schedule(events, str(events.vault), recursive=True)
            events._observer.start()
        except OSError as problem:
            log.warning("cannot listen to changes under %s (%s); looking at it every few seconds instead", vault,
                        problem)  # fmt: skip
            return None
        return events

    def on_any_event(self, event: FileSystemEvent) -> None:
        if isinstance(event, NOT_WRITES):
            return
        visible = [path for path in map(self._relative, (event.src_path, getattr(event, "dest_path", ""))) if path]
        if not visible:
            return
        with self._lock:
            if event.is_directory or self._paths is None or len(self._paths) >= MOST_PATHS:
                self._paths = None
            else:
                self._paths.update(visible)
            self._heard.set()

    def _relative(self, path: object) -> str | None:
        """The vault path of ``path`` (a str, or bytes from some observers), None for one outside the vault or
        hidden."""
        text = os.fsdecode(path) if isinstance(path, (str, bytes)) and path else ""
        try:
            parts = PurePath(text).relative_to(self.vault).parts if text else ()
        except ValueError:
            return None
        relative = "/".join(parts)
        return relative if relative and not hidden(relative) else None

    def take(self) -> Heard | None:
        """What was heard since the last call, None for nothing."""
        with self._lock:
            if not self._heard.is_set():
                return None
            heard = Heard(frozenset(self._paths) if self._paths is not None else None)
            self._paths = set()
            self._heard.clear()
        return heard

    def wait(self, timeout_s: float) -> bool:
        """Until a change is heard or ``timeout_s`` passed; whether one was heard (it is still there to ``take``)."""
        return self._heard.wait(timeout_s)

    def listening(self) -> bool:
        """Whether the system still reports to it (its thread ended after an error: the caller looks every time)."""
        return self._observer.is_alive()

    def close(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)
