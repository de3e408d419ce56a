"""The distinct labels of the live notes' entity mentions, read once per state of those notes: the merge candidates,
the overlay's check and the timeline all ask for them in every build that changed a note, and at 100,000 notes each
read was a scan of 5.6 M mention rows. The first reader of a build reads them; the others take its labels.

A note's mention rows are written only by its extraction, so the labels are a function of which notes are live and
of their extractions (``digests.LIVE_EXTRACTIONS``). A process keeps the labels of the last state it read, per catalog
file (``run_memo.LastKept``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from engramrag.catalog.digests import LIVE_EXTRACTIONS
from engramrag.run_memo import LastKept


@dataclass
class _Read:
    state: tuple
    first_mentioned: tuple[str, ...]
    in_order: tuple[str, ...] | None = field(default=None)  # sorted, made when first asked for


_kept: LastKept[_Read] = LastKept()


def labels_by_first_mention(catalog: duckdb.DuckDBPyConnection, catalog_path: Path) -> tuple[str, ...]:
    """Every distinct label of the live notes' mentions, in the order labels are first mentioned (by document, then
    entity key; labels first mentioned in the same row by label)."""
    return _read(catalog, catalog_path).first_mentioned


def live_labels(catalog: duckdb.DuckDBPyConnection, catalog_path: Path) -> tuple[str, ...]:
    """Every distinct label of the live notes' mentions, sorted (by code point, as DuckDB orders them)."""
    read = _read(catalog, catalog_path)
    if read.in_order is None:
        read.in_order = tuple(sorted(read.first_mentioned))
    return read.in_order


def _read(catalog: duckdb.DuckDBPyConnection, catalog_path: Path) -> _Read:
    state = tuple(catalog.execute(LIVE_EXTRACTIONS).fetchone() or ())
    kept = _kept.get(str(catalog_path))
    if kept is not None and kept.state == state:
        return kept
    labels = tuple(label for (label,) in catalog.execute(
        "SELECT e.label FROM entities e JOIN documents d USING (doc_id) WHERE NOT d.gone "
        "GROUP BY e.label ORDER BY min(e.doc_id || chr(0) || e.entity_key), e.label"
    ).fetchall())  # fmt: skip
    read = _Read(state, labels)
    _kept.put(str(catalog_path), read)
    return read
