"""Rendering the core's progress records (``engramrag.progress``) as a live progress display.

Dagster captures a step's standard output and error while it runs (its compute logs), so a display drawn on
``sys.stderr`` would reach the terminal only when the step ends, all at once. The display therefore writes to
its own duplicate of the terminal's file descriptor, taken before the run starts, which the capture does not
touch.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
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
def progress_display(enabled: bool = True, stream: TextIO | None = None) -> Iterator[None]:
    """Draw the progress records logged inside the block on the terminal of ``stream`` (standard error)."""
    if not enabled:
        yield
        return
    terminal = os.fdopen(os.dup((stream or sys.stderr).fileno()), "w", buffering=1, encoding="utf-8")
    display = Progress(
        TextColumn("{task.description:<20}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(file=terminal, force_terminal=True), transient=False, redirect_stdout=False,
        redirect_stderr=False, refresh_per_second=4,
    )  # fmt: skip
    handler = _ProgressHandler(display)
    LOGGER.addHandler(handler)
    try:
        with display:
            yield
    finally:
        LOGGER.removeHandler(handler)
        terminal.close()
