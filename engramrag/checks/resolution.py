"""Checks on the resolution overlay: people's `distinct` holds, and every overlay row names a live entity."""

from __future__ import annotations

import pandas as pd

from engramrag.catalog.connection import catalog_reader
from engramrag.catalog.live_labels import live_labels
from engramrag.checks.expectations import CheckOutcome, validate_frame
from engramrag.decisions.store import MERGE, DecisionsStore
from engramrag.extract.textutil import normalise_label
from engramrag.run_memo import RunMemo, Same
from engramrag.store import Home


def clusters_respect_distinct_verdicts(home: Home) -> CheckOutcome:
    """No cluster holds two entities a person marked distinct."""
    distinct = [v for v in DecisionsStore.for_home(home).current(MERGE) if v.verdict == "distinct"]
    with catalog_reader(home) as catalog:
        rows = catalog.execute("SELECT entity_key, cluster_key FROM entity_clusters").fetchall() if catalog else []
    clusters = dict(rows)
    joined = [
        {"left": v.left_key, "right": v.right_key, "cluster": clusters[v.left_key], "verdict_id": v.id,
         "operator": v.operator}
        for v in distinct
        if v.left_key in clusters and clusters.get(v.left_key) == clusters.get(v.right_key)
    ]
    return CheckOutcome(
        passed=not joined,
        description=f"{len(distinct)} distinct verdicts; {len(joined)} pairs of them share a cluster",
        metadata={"distinct_verdicts": len(distinct), "violations": joined[:20]},
    )


def overlay_names_existing_entities(home: Home) -> CheckOutcome:
    """Every key of ``entity_clusters`` (and every cluster key) is the stable key of a live mention. The outcome is a
    function of the overlay's rows and the live labels: with the same rows and the very labels this process checked
    last (``live_labels`` gives the same tuple while no note's labels changed), that check's outcome is given again
    (great-expectations took 70 ms of each one-note edit at 10,000 notes to say the same)."""
    with catalog_reader(home) as catalog:
        if catalog is None:
            return CheckOutcome(True, "nothing built yet")
        rows = tuple(catalog.execute("SELECT entity_key, cluster_key FROM entity_clusters ORDER BY ALL").fetchall())
        labels = live_labels(catalog, home.catalog_path)
    with _OVERLAY_OUTCOMES.run() as made:
        return made((Same(labels), rows), lambda: _overlay_outcome(rows, labels))


def _overlay_outcome(rows: tuple[tuple[str, str], ...], labels: tuple[str, ...]) -> CheckOutcome:
    import great_expectations as gx

    live = {normalise_label(label) for label in labels} - {""}
    frame = pd.DataFrame(list(rows), columns=["entity_key", "cluster_key"], dtype=object)
    # Membership in the live keys is computed here and the expectation is that no value falls outside them:
    # great-expectations carries a value set of tens of thousands of keys slowly (1.8 s per expectation at 10,000
    # notes, against 0.05 s for this).
    for column in ("entity_key", "cluster_key"):
        # A set lookup per row: pandas' isin over the Arrow-backed strings took 0.4 s a column at 10,000 notes.
        frame[f"{column}_not_live"] = [None if key in live else key for key in frame[column].tolist()]
    passed, failures = validate_frame(
        "entity_clusters",
        frame,
        [
            gx.expectations.ExpectColumnValuesToBeNull(column="entity_key_not_live"),
            gx.expectations.ExpectColumnValuesToBeNull(column="cluster_key_not_live"),
            gx.expectations.ExpectColumnValuesToBeUnique(column="entity_key"),
        ],
    )
    return CheckOutcome(
        passed=passed,
        description=f"{len(frame)} overlay rows over {len(live)} live entity keys",
        metadata={"rows": len(frame), "failures": failures},
    )


_OVERLAY_OUTCOMES: RunMemo[tuple, CheckOutcome] = RunMemo()
