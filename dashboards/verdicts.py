"""The verdict buttons of the review queues (merges, supersessions): record or undo one verdict in a callback.

A button's callback runs before the page does, so it cannot show anything itself: it writes to the decisions
store and leaves a confirmation that ``show_confirmation`` shows on the run that follows. Both queues do this the
same way, with the same refusals (a blank name, a busy or newer store) and the same wording, so it lives here;
each page only says how a verdict of its own reads ("“A” is the same as “B”").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dashboards.stores import NEXT_BUILD, confirm, record_verdict, undo_verdict
from engramrag.decisions.store import DecisionsStoreError, Verdict
from engramrag.store import Home, StoreBusy


def record_and_confirm(
    root: str, topic: str, left: str, right: str, verdict: str, operator: str, context: dict[str, Any], said: str
) -> None:
    """Record ``verdict`` on the pair (``left``, ``right``) of ``topic`` in the home at ``root``; ``said`` is how
    the confirmation reads it."""
    try:
        record_verdict(Home(Path(root)), topic, left, right, verdict, operator, context)
    except (ValueError, DecisionsStoreError, StoreBusy) as error:
        confirm(f"Nothing was recorded: {error}", ok=False)
        return
    confirm(f"Recorded: {said} (by {operator}). {NEXT_BUILD}")


def undo_and_confirm(root: str, topic: str, verdict: Verdict, operator: str, reads: Callable[[Verdict], str]) -> None:
    """Undo the current verdict on ``verdict``'s pair; ``reads`` says how the undone verdict reads."""
    try:
        undone = undo_verdict(Home(Path(root)), topic, verdict.left_key, verdict.right_key, operator)
    except (ValueError, DecisionsStoreError, StoreBusy) as error:
        confirm(f"Nothing was undone: {error}", ok=False)
        return
    if undone is None:
        confirm("That verdict was already undone.", ok=False)
        return
    confirm(f"Undone: {reads(undone)} (by {operator}); the history keeps it. {NEXT_BUILD}")
