"""Keeping the LanceDB tables quick to search as builds change them, without rewriting what is already indexed.

Each build's replacement of the changed notes' rows (``VectorStore.replace_documents``) leaves a small fragment
(their new rows) and marks the rows it replaced as deleted in older fragments. Rows outside an index are still
found, by a scan of just those rows, but each small fragment is one more file a search opens, so they are folded in
now and then (``tidy_reason``).

LanceDB's ``Table.optimize`` compacts every fragment under a million rows and rewrites every fragment with a tenth
of its rows deleted. A full build leaves one fragment per bucket partition, each well under a million rows, so the
first optimisation after it rewrote all of them; rewritten rows get new addresses, and every index (HNSW, full
text) was remapped. At 100,000 notes that cost about 395 s of one edit's build, every twentieth edit or so (the
chunks table alone: 197 s; compacting its data without the remap: 5 s).

:func:`tidy` does what an edit needs and nothing more, with Lance's own optimiser (pylance) and explicit options:

- only fragments under :func:`small_fragment_rows` are compacted: the edits' fragments, never a bucket's;
- deleted rows stay marked (``materialize_deletions`` off), so no indexed fragment is rewritten;
- the new rows go into one delta segment per index, which absorbs the earlier delta segments; the base segment
  (built over the buckets) is left as it is;
- versions older than LanceDB's default seven days are pruned.

The consistency pass (``--full``, the nightly schedule) still runs LanceDB's full ``optimize`` on every table,
which rewrites the buckets into large fragments and merges the segments.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

# A table is tidied once it holds this many small fragments (each build's merge adds one), or when this many
# rows, and this share of the table, are outside an index (LanceDB's guidance: after 20 modifications or 100,000
# changed rows).
MAX_SMALL_FRAGMENTS = 20
MIN_UNINDEXED_ROWS = 2_000
MAX_UNINDEXED_SHARE = 0.05
# A fragment is small under 1/128 of the table's rows: a full build's bucket fragments hold about 1/16 each (16
# buckets), an edit's a few dozen rows. Below this floor a table is small enough that rewriting it all is cheap.
SMALL_FRAGMENT_DIVISOR = 128
MIN_SMALL_FRAGMENT_ROWS = 1_024
# What LanceDB's optimize keeps of old versions, so that a reader that opened one a moment ago can finish.
KEEP_VERSIONS_FOR = timedelta(days=7)


def small_fragment_rows(table_rows: int) -> int:
    """The row count under which a fragment of a table of ``table_rows`` rows is small (and compacted)."""
    return max(MIN_SMALL_FRAGMENT_ROWS, table_rows // SMALL_FRAGMENT_DIVISOR)


def tidy_reason(table: Any) -> str | None:
    """Why a LanceDB table should be tidied now, or None: many small fragments, or many rows outside an index."""
    dataset = table.to_lance()
    rows = dataset.count_rows()
    limit = small_fragment_rows(rows)
    small = sum(1 for fragment in dataset.get_fragments() if fragment.physical_rows < limit)
    if small >= MAX_SMALL_FRAGMENTS:
        return f"{small} small fragments"
    for index in table.list_indices():
        unindexed = table.index_stats(index.name).num_unindexed_rows
        if unindexed >= max(MIN_UNINDEXED_ROWS, rows * MAX_UNINDEXED_SHARE):
            return f"{unindexed} rows outside index {index.name}"
    return None


def tidy(table: Any) -> None:
    """Compact the small fragments of a LanceDB table and index the rows no index covers, rewriting no indexed
    fragment (see the module's notes)."""
    dataset = table.to_lance()
    dataset.optimize.compact_files(
        target_rows_per_fragment=small_fragment_rows(dataset.count_rows()), materialize_deletions=False
    )
    table.checkout_latest()
    dataset = table.to_lance()
    segments = Counter(index["name"] for index in dataset.list_indices())
    for name, count in sorted(segments.items()):
        # The most recent segments are merged: with one segment (the base) the new rows make a delta segment,
        # with two the delta absorbs them.
        dataset.optimize.optimize_indices(index_names=[name], num_indices_to_merge=count - 1)
        table.checkout_latest()
        dataset = table.to_lance()
    dataset.cleanup_old_versions(older_than=KEEP_VERSIONS_FOR)
    table.checkout_latest()
