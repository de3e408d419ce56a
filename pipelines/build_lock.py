"""One `engram build` at a time on a home, and a build that has to wait says for whom.

The stores' own lock (``Home.writing``) is taken per unit of work, so two builds started together used to
interleave: both planned the same buckets, the second found the first's documents already extracted, and each
then printed the catalog's last build instead of its own. A build now holds ``<home>/.build.lock`` (an flock,
released by the system when the process ends, even killed) from its plan to its record, and writes who it is
(pid, host, start time) into ``<home>/.build.holder.json`` beside it. A second build waits for the lock, says
once whose build it waits for, then plans what is left: usually nothing.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from engramrag.store import Home

LOCK_FILE = ".build.lock"
HOLDER_FILE = ".build.holder.json"


@contextmanager
def build_lock(home: Home, on_wait: Callable[[str], None], poll_s: float = 0.1) -> Iterator[None]:
    """Hold the home's build lock; when another build holds it, call ``on_wait`` once with the line that says
    whose build this one waits for, and wait (Ctrl-C stops waiting)."""
    handle = open(home.root / LOCK_FILE, "a+")  # noqa: SIM115 - held for the context's lifetime
    try:
        if not _try_lock(handle):
            on_wait(waiting_line(home, poll_s))
            while not _try_lock(handle):
                time.sleep(poll_s)
        _write_holder(home)
        try:
            yield
        finally:
            (home.root / HOLDER_FILE).unlink(missing_ok=True)
    finally:
        handle.close()


def waiting_line(home: Home, poll_s: float = 0.1, patience_s: float = 2.0) -> str:
    """The line "waiting for the build started at T by PID P ...". The holder writes its file just after it
    takes the lock, so a build that finds the lock taken gives it a moment; the file of a build that is gone is
    ignored."""
    deadline = time.monotonic() + patience_s
    holder = _read_holder(home)
    while holder is None and time.monotonic() < deadline:
        time.sleep(poll_s)
        holder = _read_holder(home)
    if holder is None:
        return f"engram: waiting for another build of {home.root} to finish (Ctrl-C to stop waiting)"
    started = datetime.fromisoformat(holder["started_at"]).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    host = "" if holder.get("host") == socket.gethostname() else f" on {holder.get('host')}"
    return (
        f"engram: waiting for the build started at {started} by PID {holder['pid']}{host} to finish; this build "
        f"then does what is left in {home.root} (Ctrl-C to stop waiting)"
    )


def _try_lock(handle) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _write_holder(home: Home) -> None:
    target = home.root / HOLDER_FILE
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "started_at": datetime.now().astimezone().isoformat()}
    partial.write_text(json.dumps(holder), encoding="utf-8")
    partial.replace(target)  # whole or not at all, for a build that reads it meanwhile


def _read_holder(home: Home) -> dict | None:
    """The holder's file, or None when there is none yet, it is unreadable, or its build (on this host) is gone."""
    try:
        holder = json.loads((home.root / HOLDER_FILE).read_text(encoding="utf-8"))
        pid = int(holder["pid"])
        datetime.fromisoformat(holder["started_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if holder.get("host") == socket.gethostname() and not process_alive(pid):
        return None
    return holder


def process_alive(pid: int) -> bool:
    """Whether a process of this machine with that pid is running (one we may not signal counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = ["HOLDER_FILE", "LOCK_FILE", "build_lock", "waiting_line"]
