"""The merge queue: the machine's candidate pairs beside what people decided about them.

What needs a person comes first: pairs the machine merges on its own (a declared alias, a spelling variant) are
listed apart, and the rest are ordered by ``priority``, how uncertain the score is (0.5 is a coin toss, 1.0 or the
lowest scores are near-certain) times how many documents a merge would join (``reach``: the documents mentioning
either key, whose retrieval the merge changes)."""

from __future__ import annotations

import json
from collections import defaultdict

import pandas as pd

from engramrag.catalog.connection import catalog_reader, has_table
from engramrag.decisions.store import MERGE, DecisionsStore
from engramrag.extract.textutil import normalise_label
from engramrag.store import Home

NEEDS_PERSON, AUTOMATIC, ALL = "person", "automatic", "all"


def merge_queue(
    home: Home, include_decided: bool = False, include_vetoed: bool = False, show: str = ALL
) -> pd.DataFrame:
    """Candidate pairs, each with its current verdict (``verdict``/``decided_by``/``decided_at``, empty when
    undecided), when the overlay refused it, why (``blocked``), and ``reach``/``uncertainty``/``priority``. Without
    ``include_decided`` only pairs nobody decided are listed; ``auto_merge`` marks those the machine merges unless
    someone objects. ``show``: ``all`` (best score first), ``person`` (no automatic merges, highest priority
    first) or ``automatic`` (only those, best score first)."""
    if show not in (NEEDS_PERSON, AUTOMATIC, ALL):
        raise ValueError(f"show must be one of {NEEDS_PERSON!r}, {AUTOMATIC!r}, {ALL!r}, not {show!r}")
    with catalog_reader(home) as catalog:
        if catalog is None or not has_table(catalog, "resolution_candidates"):
            return pd.DataFrame()
        frame = catalog.execute("SELECT * FROM resolution_candidates ORDER BY score DESC, left_key, right_key").df()
        documents = _documents_per_key(catalog)
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
    frame["reach"] = [len(documents.get(a, set()) | documents.get(b, set())) for a, b in _pairs(frame)]
    frame["uncertainty"] = [uncertainty(score) for score in frame["score"]]
    frame["priority"] = frame["uncertainty"] * frame["reach"]
    if show == AUTOMATIC:
        frame = frame[frame["auto_merge"]]
    elif show == NEEDS_PERSON:
        frame = needing_person(frame)
    return frame.reset_index(drop=True)


def needing_person(queue: pd.DataFrame) -> pd.DataFrame:
    """The pairs of a queue the machine will not merge on its own, highest ``priority`` first."""
    return queue[~queue["auto_merge"]].sort_values(
        ["priority", "left_key", "right_key"], ascending=[False, True, True], kind="stable"
    )


def uncertainty(score: float) -> float:
    """1.0 for a score of 0.5 (the machine cannot tell), falling to 0.0 at 0 and 1 (it is sure either way)."""
    return max(0.0, 1.0 - abs(float(score) - 0.5) * 2.0)


def _documents_per_key(catalog) -> dict[str, set[str]]:
    # A stable key is a normalised label (``resolve.keytable``): the documents that mention it under any spelling.
    rows = catalog.execute(
        "SELECT DISTINCT e.label, e.doc_id FROM entities e JOIN documents d USING (doc_id) WHERE NOT d.gone"
    ).fetchall()
    documents: dict[str, set[str]] = defaultdict(set)
    for label, doc_id in rows:
        documents[normalise_label(str(label))].add(doc_id)
    return documents


def _pairs(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(frame["left_key"], frame["right_key"], strict=True))
