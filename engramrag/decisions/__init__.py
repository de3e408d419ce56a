"""What people decided: the one store a person writes to through the product, never rebuilt from derived data."""

from __future__ import annotations

from engramrag.decisions.store import (
    MERGE,
    MERGE_VERDICTS,
    SUPERSESSION,
    SUPERSESSION_VERDICTS,
    TOPICS,
    DecisionsStore,
    DecisionsStoreError,
    Verdict,
)

__all__ = [
    "MERGE",
    "MERGE_VERDICTS",
    "SUPERSESSION",
    "SUPERSESSION_VERDICTS",
    "TOPICS",
    "DecisionsStore",
    "DecisionsStoreError",
    "Verdict",
]
