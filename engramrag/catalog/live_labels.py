"""The distinct labels of the live notes' entity mentions, read once per state of those notes: the timeline and the
overlay's check both ask for them in every build that changed a note, and at 100,000 notes each read is a scan of
5.6 M mention rows; the second reader of a build takes the first one's.

A note's mention rows are written only by its extraction, which records ``extracted_at`` (a re-extraction of the same
text too), so the labels are a function of which notes are live and of their extractions: the digest below. A
process keeps the labels of the last state it read, per catalog file (``run_memo.LastKept``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from engramrag.run_memo import LastKept

_LIVE_EXTRACTIONS = (
    "SELECT count(*), bit_xor(hash(doc_id, extracted_hash, extractor, extracted_at::VARCHAR)) "
    "FROM documents WHERE NOT gone"
)


@dataclass(frozen=True)
class _Read:
    state: tuple
    labels: tuple[str, ...]


_kept: LastKept[_Read] = LastKept()


def live_labels(catalog: duckdb.DuckDBPyConnection, catalog_path: Path) -> tuple[str, ...]:
    """Every distinct label of the live notes' mentions, sorted (the same tuple while the live notes and their
    extractions are the same)."""
    state = tuple(catalog.execute(_LIVE_EXTRACTIONS).fetchone() or ())
    kept = _kept.get(str(catalog_path))
    if kept is not None and kept.state == state:
        return kept.labels
    labels = tuple(label for (label,) in catalog.execute(
        "SELECT DISTINCT e.label FROM entities e JOIN documents d USING (doc_id) WHERE NOT d.gone ORDER BY e.label"
    ).fetchall())  # fmt: skip
    _kept.put(str(catalog_path), _Read(state, labels))
    return labels
