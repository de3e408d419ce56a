"""Progress of long steps, reported through the standard logging system.

The core never draws progress bars; it logs records on the ``engramrag.progress`` logger carrying
``stage``, ``done`` and ``total``. The CLI renders them as a progress display; under Dagster they are
ordinary log lines.
"""

from __future__ import annotations

import logging

LOGGER = logging.getLogger("engramrag.progress")


class Progress:
    def __init__(self, stage: str, total: int, every: int = 25) -> None:
        self.stage = stage
        self.total = total
        self.done = 0
        self.every = max(1, every)
        self._emit()

    def advance(self, step: int = 1) -> None:
        self.done += step
        if self.done % self.every == 0 or self.done >= self.total:
            self._emit()

    def _emit(self) -> None:
        LOGGER.debug(
            "%s: %d/%d",
            self.stage,
            self.done,
            self.total,
            extra={"stage": self.stage, "done": self.done, "total": self.total},
        )
