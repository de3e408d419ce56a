"""The distinct labels of the live notes' entity mentions, read once per state of those notes: the merge candidates,
the overlay's check and the timeline all ask for them in every build that changed a note, and at 100,000 notes each
read was a scan of 5.6 M mention rows. The first reader of a build reads them; the others take its labels.

A note's mention rows are written only by its extraction, so the labels are a function of which notes are live and
of their extractions (``digests.LIVE_EXTRACTIONS``). A process keeps the labels of the last state it read, per catalog
file (``run_memo.LastKept``), with each label's first mention (the least ``doc_id, entity_key`` of its live rows) and
each live note's extraction.

At a later state only the labels the notes extracted again (or added, or gone) can have moved: those whose first
mention was in one of them, and those they name now. Every other label is still first mentioned where it was (that
note did not change) and still live. Their first mentions are worked out from the moved notes' rows, and only a
label whose first mention was in a moved note that now names it later or not at all is looked for among every note's
rows (a filtered scan, 13-22 ms at 10,000 notes, against 65 ms to read and sort every label). When no label moved,
the labels are the very tuples of the last read, which the readers' own memos recognise.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from engramrag.catalog.digests import LIVE_EXTRACTIONS, extraction
from engramrag.run_memo import LastKept

_FIRST_MENTION = "min(e.doc_id || chr(0) || e.entity_key)"  # by document, then entity key


@dataclass
class _Read:
    state: tuple
    first_mentioned: tuple[str, ...]
    first: dict[str, str]  # per label, its first mention (``_FIRST_MENTION``)
    keyed: list[tuple[str, str]]  # (first mention, label), sorted: the order of ``first_mentioned``
    extractions: dict[str, int]  # per live note, a digest of its extraction
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
    extractions = dict(catalog.execute(f"SELECT doc_id, hash({extraction()}) FROM documents WHERE NOT gone").fetchall())
    read = _patched(catalog, kept, state, extractions) if kept is not None else None
    if read is None:
        keyed = catalog.execute(
            f"SELECT {_FIRST_MENTION} AS first, e.label FROM entities e JOIN documents d USING (doc_id) "
            "WHERE NOT d.gone GROUP BY e.label ORDER BY first, e.label"
        ).fetchall()
        read = _Read(state, tuple(label for _, label in keyed), {label: first for first, label in keyed}, keyed,
                     extractions)  # fmt: skip
    _kept.put(str(catalog_path), read)
    return read


def _patched(
    catalog: duckdb.DuckDBPyConnection, kept: _Read, state: tuple, extractions: dict[str, int]
) -> _Read | None:  # fmt: skip
    """The labels at ``state`` from ``kept``: the first mentions of the labels that can have moved read again."""
    moved = sorted({doc for doc, digest in extractions.items() if kept.extractions.get(doc) != digest}
                   | (kept.extractions.keys() - extractions.keys()))  # fmt: skip
    if len(moved) > max(16, len(extractions) // 20):
        return None  # many notes moved: one read of every label costs less
    moved_set = set(moved)
    affected: set[str] = set()
    for doc in moved:  # the labels first mentioned in a note that moved
        start = bisect.bisect_left(kept.keyed, (doc + "\0",))
        end = bisect.bisect_left(kept.keyed, (doc + "\1",))
        affected.update(label for _, label in kept.keyed[start:end])
    # Each label's first mention among the moved notes' rows now (the labels they name now are affected too).
    found: dict[str, str] = {}
    for label, mention in catalog.execute(
        f"SELECT e.label, {_FIRST_MENTION} FROM entities e JOIN documents d USING (doc_id) "
        "WHERE NOT d.gone AND e.doc_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY e.label",
        [moved],
    ).fetchall():  # fmt: skip
        affected.add(label)
        found[label] = mention
    # The notes that did not move mention a label no earlier than its first mention before: that stands unless its
    # note moved, and a mention in a moved note at or before it is the first. Otherwise (its note moved and now
    # mentions it later, or not at all) the others are read for it.
    unsure = []
    for label in affected:
        before, now = kept.first.get(label), found.get(label)
        if before is not None and before.split("\0", 1)[0] not in moved_set:
            found[label] = min(before, now) if now is not None else before
        elif before is not None and (now is None or now > before):
            unsure.append(label)
    if unsure:
        found.update(catalog.execute(
            f"SELECT e.label, {_FIRST_MENTION} FROM entities e JOIN documents d USING (doc_id) "
            "WHERE NOT d.gone AND e.label IN (SELECT unnest(?::VARCHAR[])) GROUP BY e.label",
            [sorted(unsure)],
        ).fetchall())  # fmt: skip
    if all(kept.first.get(label) == found.get(label) for label in affected):
        return _Read(state, kept.first_mentioned, kept.first, kept.keyed, extractions, kept.in_order)
    first, keyed = dict(kept.first), list(kept.keyed)
    for label in affected:
        if label in first:
            del keyed[bisect.bisect_left(keyed, (first.pop(label), label))]
        if label in found:
            first[label] = found[label]
            bisect.insort(keyed, (found[label], label))
    return _Read(state, tuple(label for _, label in keyed), first, keyed, extractions)
