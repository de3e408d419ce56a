"""What `engram watch` hears from the operating system about its vault (watchdog: inotify on Linux, FSEvents on
macOS), so that it looks at the vault when a file under it changed rather than every few seconds: a look at a
100,000-note vault took 4.6 s, so looking every two seconds kept a core busy while nothing changed, and a saved note
waited for the next look.

Only writes count: files and folders created, written, moved or deleted outside hidden folders (the home's
``.engram`` inside a vault, ``.git``, ``.obsidian``: a build writing its stores or reading the notes is no change).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path, PurePath

from watchdog.events import (
    DirModifiedEvent,
    FileClosedNoWriteEvent,
    FileOpenedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

log = logging.getLogger(__name__)

# Reading a file is no change, nor is a folder's own entry changing (its files' events say what changed).
NOT_WRITES = (FileOpenedEvent, FileClosedNoWriteEvent, DirModifiedEvent)


class VaultEvents(FileSystemEventHandler):
    """Whether a file of the vault changed since the last ``take``, heard on watchdog's thread."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault.resolve()
        self._heard = threading.Event()
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
        paths = [event.src_path, getattr(event, "dest_path", "")]
        if any(path and self._visible(str(path)) for path in paths):
            self._heard.set()

    def _visible(self, path: str) -> bool:
        try:
            parts = PurePath(path).relative_to(self.vault).parts
        except ValueError:
            return False
        return bool(parts) and not any(part.startswith(".") for part in parts)

    def take(self) -> bool:
        """Whether a change was heard since the last call."""
        heard = self._heard.is_set()
        self._heard.clear()
        return heard

    def wait(self, timeout_s: float) -> bool:
        """Until a change is heard or ``timeout_s`` passed; whether one was heard (it is still there to ``take``)."""
        return self._heard.wait(timeout_s)

    def close(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)
