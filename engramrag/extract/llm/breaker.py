"""A circuit breaker for one run's model server: once it is unreachable, the run stops sending it documents.

Only a connection that could not be made counts: refused, an unknown host, a connect timeout. A reply of any
kind (a 4xx, a 5xx, malformed JSON) shows the server is there, and sets the count back to 0; a connection the
server closed without a reply neither counts nor resets. After ``threshold`` such failures in a row, whichever
extraction threads they came from, the breaker opens for the rest of the run: the client sends nothing more,
the documents still to do fail at once with ``STOPPED`` in their reason (the next build retries them), and the
trouble is logged once, with what to do. Without it a closed port cost every document its full
transport retries, one after another (76 s for 40 notes).

The breaker lives in the extractor's chat client, so it is shared by the threads of one run (the ``openai``
extractor waits on a server and runs on threads, never in worker processes) and starts closed in the next run.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

# In the reason of every document the open breaker stopped; `engram build` counts these documents instead of
# listing each one under the single "unreachable" line.
STOPPED = "stopped accepting connections during this build"


class Breaker:
    """Counts connection failures in a row for one server; safe to share between threads."""

    def __init__(self, base_url: str, threshold: int, setting: str) -> None:
        self.base_url = base_url
        self.threshold = threshold  # 0: never opens
        self.setting = setting  # the variable that sets the server's address, named in the advice
        self._failures = 0
        self._cause = ""
        self._open = False
        self._lock = threading.Lock()

    @property
    def is_open(self) -> bool:
        return self._open

    def reached(self) -> None:
        """The server answered (with anything at all)."""
        with self._lock:
            if not self._open:
                self._failures = 0

    def unreachable(self, cause: str) -> bool:
        """A connection could not be made (``cause``: the error, short); True when the breaker is open now."""
        with self._lock:
            if self._open:
                return True
            self._failures += 1
            self._cause = cause
            if not self.threshold or self._failures < self.threshold:
                return False
            self._open = True
        log.warning(self.message())
        return True

    def message(self) -> str:
        """The one line that says the server is unreachable and what to do."""
        return (
            f"the model server at {self.base_url} is unreachable ({self._failures} connection attempts in a row "
            f"failed, the last with {self._cause}); this build sends it no more documents, and the next build "
            f"retries them. Start the server, or set {self.setting} to its address (it ends in /v1)."
        )

    def stopped(self) -> str:
        """The reason of a document (or segment) the open breaker stopped, before or between its attempts."""
        return f"no answer: the model server at {self.base_url} {STOPPED}"


__all__ = ["STOPPED", "Breaker"]
