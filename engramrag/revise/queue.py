"""The supersession queue: proposed (earlier, later) decision pairs beside what people decided about them."""

from __future__ import annotations

import pandas as pd

from engramrag.catalog.connection import catalog_reader, has_table
from engramrag.decisions.store import SUPERSESSION, DecisionsStore
from engramrag.store import Home


def supersession_queue(home: Home, include_decided: bool = False) -> pd.DataFrame:
    """Proposals, best first, with their current verdict (accept / reject; empty when undecided)."""
    with catalog_reader(home) as catalog:
        if catalog is None or not has_table(catalog, "supersession_candidates"):
            return pd.DataFrame()
        frame = catalog.execute(
            "SELECT * FROM supersession_candidates ORDER BY score DESC, earlier_key, later_key"
        ).df()
    verdicts = {v.pair: v for v in DecisionsStore.for_home(home).current(SUPERSESSION)}
    pairs = list(zip(frame["earlier_key"], frame["later_key"], strict=True))
    frame["verdict"] = [verdicts[p].verdict if p in verdicts else None for p in pairs]
    frame["decided_by"] = [verdicts[p].operator if p in verdicts else None for p in pairs]
    frame["decided_at"] = [verdicts[p].decided_at if p in verdicts else None for p in pairs]
    if not include_decided:
        frame = frame[frame["verdict"].isna()]
    return frame.reset_index(drop=True)
