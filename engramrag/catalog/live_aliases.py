"""Each distinct (label, aliases) of the live notes' entity mentions that carry aliases, read once per note: the
timeline joins these names in every build, and a scan of every mention row for them took 60 ms of each one-note edit
at 10,000 notes.

A note's mention rows are written only by its extraction, so its pairs are a function of its digest
(``timeline_notes.NOTE_DIGEST``: its text, front matter and extraction). A process keeps, per catalog file, the
pairs of each note it read and how many notes give each pair; the next read takes them for every note whose digest
is the same and reads only the others (``LastKept``). A read of more than ``WHOLE_READ_SHARE`` of the notes reads
them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import duckdb

from engramrag.run_memo import LastKept

WHOLE_READ_SHARE = 0.25
Aliased = tuple[str, tuple[str, ...]]


@dataclass(frozen=True)
class _Read:
    digests: dict[str, str]  # per live note read, its digest then
    pairs: dict[str, frozenset[Aliased]]  # per note with aliased mentions, its pairs
    counts: Counter[Aliased]  # per pair, how many notes give it


_kept: LastKept[_Read] = LastKept()


def live_aliases(
    catalog: duckdb.DuckDBPyConnection, catalog_path: Path, digests: Mapping[str, str], whole: bool = False
) -> set[Aliased]:
    """Every distinct (label, aliases) with aliases among the mentions of the live notes ``digests`` names (doc id
    -> its ``NOTE_DIGEST``). ``whole``: every note read again (the consistency pass)."""
    kept = None if whole else _kept.pop(str(catalog_path))
    stale = [doc for doc, digest in digests.items() if kept is None or kept.digests.get(doc) != digest]
    gone = [] if kept is None else [doc for doc in kept.digests if doc not in digests]
    if kept is None or len(stale) + len(gone) > WHOLE_READ_SHARE * max(1, len(digests)):
        pairs = _pairs(catalog, None)  # the live notes, which ``digests`` names
        read = _Read(dict(digests), pairs, Counter(pair for found in pairs.values() for pair in found))
    else:
        pairs, counts = dict(kept.pairs), Counter(kept.counts)
        for doc in [*stale, *gone]:
            counts.subtract(pairs.pop(doc, frozenset()))
        fresh = _pairs(catalog, stale)
        for found in fresh.values():
            counts.update(found)
        pairs.update(fresh)
        read = _Read(dict(digests), pairs, +counts)  # unary plus: the pairs no note gives any more go
    _kept.put(str(catalog_path), read)
    return set(read.counts)


def _pairs(catalog: duckdb.DuckDBPyConnection, doc_ids: list[str] | None) -> dict[str, frozenset[Aliased]]:
    """Per note of ``doc_ids`` (every live note when None) with aliased mentions, its distinct (label, aliases)."""
    if doc_ids is not None and not doc_ids:
        return {}
    notes = "SELECT doc_id FROM documents WHERE NOT gone" if doc_ids is None else "SELECT unnest(?::VARCHAR[])"
    rows = catalog.execute(
        f"SELECT DISTINCT doc_id, label, aliases FROM entities WHERE len(aliases) > 0 AND doc_id IN ({notes})",
        [] if doc_ids is None else [doc_ids],
    ).fetchall()
    found: dict[str, set[Aliased]] = {}
    for doc_id, label, aliases in rows:
        found.setdefault(doc_id, set()).add((str(label), tuple(map(str, aliases))))
    return {doc_id: frozenset(pairs) for doc_id, pairs in found.items()}
