"""The merge queue: the machine's candidate pairs beside what people decided about them."""

from __future__ import annotations

import json

import pandas as pd

from engramrag.catalog.connection import catalog_reader, has_table
from engramrag.decisions.store import MERGE, DecisionsStore
from engramrag.store import Home


def merge_queue(home: Home, include_decided: bool = False, include_vetoed: bool = False) -> pd.DataFrame:
    """Candidate pairs, best first, each with its current verdict (``verdict``/``decided_by``/``decided_at``,
    empty when undecided) and, when the overlay refused it, why (``blocked``). Without ``include_decided`` only
    pairs nobody decided are listed; ``auto_merge`` marks those the machine merges unless someone objects."""
    with catalog_reader(home) as catalog:
        if catalog is None or not has_table(catalog, "resolution_candidates"):
            return pd.DataFrame()
        frame = catalog.execute("SELECT * FROM resolution_candidates ORDER BY score DESC, left_key, right_key").df()
        blocked = (
            catalog.execute("SELECT left_key, right_key, reason FROM resolution_blocked").df()
            if has_table(catalog, "resolution_blocked")
            else pd.DataFrame(columns=["left_key", "right_key", "reason"])
        )
    verdicts = {v.pair: v for v in DecisionsStore.for_home(home).current(MERGE)}
    frame["verdict"] = [verdicts[p].verdict if p in verdicts else None for p in _pairs(frame)]
    frame["decided_by"] = [verdicts[p].operator if p in verdicts else None for p in _pairs(frame)]
    frame["decided_at"] = [verdicts[p].decided_at if p in verdicts else None for p in _pairs(frame)]
    reasons = {(a, b): reason for a, b, reason in blocked.itertuples(index=False)}
    frame["blocked"] = [reasons.get(p) for p in _pairs(frame)]
    for column in ("reasons", "features", "left_evidence", "right_evidence"):
        frame[column] = frame[column].map(lambda text: json.loads(text) if isinstance(text, str) else text)
    if not include_vetoed:
        frame = frame[~frame["vetoed"]]
    if not include_decided:
        frame = frame[frame["verdict"].isna()]
    return frame.reset_index(drop=True)


def _pairs(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(frame["left_key"], frame["right_key"], strict=True))
