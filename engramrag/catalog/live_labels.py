"""The distinct labels of the live notes' entity mentions, read once per state of those notes: the merge candidates,
the overlay's check and the timeline all ask for them in every build that changed a note, and at 100,000 notes each
read was a scan of 5.6 M mention rows. The first reader of a build reads them; the others take its labels.

A note's mention rows are written only by its extraction, so the labels are a function of which notes are live and
of their extractions (``digests.LIVE_EXTRACTIONS``). A process keeps the labels of the last state it read, per catalog
file (``run_memo.LastKept``).

Both orders are a function of each live note's labels with the least entity key each has in it (its "label map"):
notes extracted again with the same label maps, no note added or gone, give the same labels. A process that reads a
second state (a resident builder, ``engram watch``) keeps a digest of each note's extraction and of its label map
(one read of every note's maps, once), and at a later state reads only the maps of the notes extracted again: when
they are the same, the labels are taken as they were (the scan of every mention row took 50-70 ms of each one-note
edit at 10,000 notes). A one-shot build reads once and never pays for the maps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from engramrag.catalog.digests import LIVE_EXTRACTIONS, extraction
from engramrag.run_memo import LastKept


@dataclass
class _Read:
    state: tuple
    first_mentioned: tuple[str, ...]
    in_order: tuple[str, ...] | None = field(default=None)  # sorted, made when first asked for
    notes: dict[str, tuple[str, int]] | None = None  # per live note: its extraction's digest, its label map's


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
    notes = None
    if kept is not None:  # a second state read by this process: it keeps the notes' label maps from now on
        extractions = dict(catalog.execute(f"SELECT doc_id, {_EXTRACTION} FROM documents WHERE NOT gone").fetchall())
        if kept.notes is not None:
            moved = {doc for doc, digest in extractions.items() if kept.notes.get(doc, (None,))[0] != digest}
            maps = _label_maps(catalog, sorted(moved))
            notes = {doc: (digest, maps.get(doc, _NO_LABELS)) if doc in moved else kept.notes[doc]
                     for doc, digest in extractions.items()}  # fmt: skip
            if extractions.keys() == kept.notes.keys() and all(notes[doc][1] == kept.notes[doc][1] for doc in moved):
                read = _Read(state, kept.first_mentioned, kept.in_order, notes)
                _kept.put(str(catalog_path), read)
                return read
        else:
            maps = _label_maps(catalog, None)
            notes = {doc: (digest, maps.get(doc, _NO_LABELS)) for doc, digest in extractions.items()}
    labels = tuple(label for (label,) in catalog.execute(
        "SELECT e.label FROM entities e JOIN documents d USING (doc_id) WHERE NOT d.gone "
        "GROUP BY e.label ORDER BY min(e.doc_id || chr(0) || e.entity_key), e.label"
    ).fetchall())  # fmt: skip
    read = _Read(state, labels, notes=notes)
    _kept.put(str(catalog_path), read)
    return read


_EXTRACTION = f"hash({extraction()})"
_NO_LABELS = 0  # the label map digest of a note without mentions (DuckDB's hashes of lists are never 0 here)


def _label_maps(catalog: duckdb.DuckDBPyConnection, doc_ids: list[str] | None) -> dict[str, int]:
    """Per note of ``doc_ids`` (every live note when None) with mentions, a digest of its label map: each label it
    mentions with the least entity key that mentions it."""
    if doc_ids is not None and not doc_ids:
        return {}
    notes = "SELECT doc_id FROM documents WHERE NOT gone" if doc_ids is None else "SELECT unnest(?::VARCHAR[])"
    return dict(catalog.execute(
        "SELECT doc_id, hash(list((label, entity_key) ORDER BY label, entity_key)) FROM ("
        f"  SELECT doc_id, label, min(entity_key) AS entity_key FROM entities WHERE doc_id IN ({notes})"
        "  GROUP BY doc_id, label"
        ") GROUP BY doc_id",
        [] if doc_ids is None else [doc_ids],
    ).fetchall())  # fmt: skip
