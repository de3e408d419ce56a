"""Rendering the core's progress records (``engramrag.progress``) as a live progress display."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from engramrag.progress import LOGGER


class _ProgressHandler(logging.Handler):
    def __init__(self, display: Progress) -> None:
        super().__init__(logging.DEBUG)
        self.display = display
        self.tasks: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        stage = getattr(record, "stage", None)
        if stage is None:
            return
        if stage not in self.tasks:
            self.tasks[stage] = self.display.add_task(stage, total=record.total)
        self.display.update(self.tasks[stage], completed=record.done, total=record.total)


@contextmanager
def progress_display(enabled: bool = True) -> Iterator[None]:
    if not enabled:
        yield
        return
    display = Progress(
        TextColumn("{task.description:<20}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=False
    )
    handler = _ProgressHandler(display)
    previous_level = LOGGER.level
    LOGGER.setLevel(logging.DEBUG)
    LOGGER.addHandler(handler)
    try:
        with display:
            yield
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(previous_level)
