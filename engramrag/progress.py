"""Progress of long steps, reported through the standard logging system.

The core never draws progress bars; it logs records on the ``engramrag.progress`` logger carrying
``stage``, ``done`` and ``total``. The CLI renders them as a progress display on the terminal; under Dagster
they are ordinary log lines (the instance's ``python_logs`` setting manages this logger), so the run's logs in the
Dagster UI show them too. A record is logged at most every ``min_interval_s`` seconds (and at the start and the
end), so a step of 100,000 items writes a few hundred lines, not 100,000.
"""

from __future__ import annotations

import logging
import time

LOGGER = logging.getLogger("engramrag.progress")
LOGGER.setLevel(logging.INFO)  # its own level: the records reach whatever handler is attached, not the root's bar


class Progress:
    def __init__(self, stage: str, total: int, every: int = 25, min_interval_s: float = 0.5) -> None:
        self.stage = stage
        self.total = total
        self.done = 0
        self.every = max(1, every)
        self.min_interval_s = min_interval_s
        self._last = 0.0
        self._emit()

    def advance(self, step: int = 1) -> None:
        before = self.done
        self.done += step
        finished = self.done >= self.total > before
        crossed = self.done // self.every > before // self.every
        if finished or (crossed and time.monotonic() - self._last >= self.min_interval_s):
            self._emit()

    def _emit(self) -> None:
        self._last = time.monotonic()
        LOGGER.info(
            "%s: %d/%d",
            self.stage,
            self.done,
            self.total,
            extra={"stage": self.stage, "done": self.done, "total": self.total},
        )
