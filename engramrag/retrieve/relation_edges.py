"""The relation and hierarchy edges of the index: per pair of entity nodes and kind, the summed weight of the
statement rows between them, patched from this process's last build where that gives the same sums.

A statement row adds 1 (asserted) or ``analysis_edge_weight`` (a machine's co-occurrence, 0.5) to the edge of its two
ends; a row within one node adds nothing. Sums of such weights are exact in floating point whatever their order
while the weight is a short binary fraction (0.5 is one bit), so the sums of one build can be patched into the
next: those of the rows of the notes joined again are taken away and the rows joined now added. A resident build
(``engram watch``) does that when the rows it keeps are the very table it summed last and numbered alike
(``index_graph._statement_rows``): summing a million rows again took about 0.2 s of each edit at 10,000 notes,
sorting them most of it. Anything else (another numbering, rows read from the file, a weight that is not a short
binary fraction) sums every row.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from engramrag.retrieve.edge_kinds import HIERARCHY, HIERARCHY_PREDICATES, RELATION, edge_key
from engramrag.retrieve.edge_statements import KeptRows, per_value
from engramrag.retrieve.sorted_keys import summed_and_counted
from engramrag.run_memo import LastKept

EXACT_BITS = 20  # a weight with at most this many binary fraction digits keeps every sum exact


@dataclass(frozen=True)
class RelationSums:
    """Distinct edge keys (``edge_kinds.edge_key``, ascending), each one's summed weight and its number of rows."""

    keys: np.ndarray
    sums: np.ndarray
    counts: np.ndarray


def relation_sums(
    rows: Future[pa.Table], node_count: int, analysis_weight: float, kept: KeptRows | None = None,
    joined: pa.Table | None = None,
) -> tuple[RelationSums, bool]:  # fmt: skip
    """The sums of ``rows`` (numbered statement rows, perhaps still being merged), and whether they were patched:
    from the last call's when ``rows`` are ``kept``'s rows (the last call's table, at its positions) merged with
    ``joined``, numbered alike (then ``rows`` is not waited for)."""
    last = _last.get(_LAST)
    patchable = (
        last is not None and kept is not None and joined is not None and kept.table is last.rows.result()
        and last.node_count == node_count and last.analysis_weight == analysis_weight and _exact(analysis_weight)
    )  # fmt: skip
    if patchable:
        assert last is not None and kept is not None and joined is not None
        left = np.ones(kept.table.num_rows, dtype=bool)
        left[kept.positions] = False
        gone = _summed(kept.table.take(np.flatnonzero(left)), node_count, analysis_weight)
        sums = _patched(last.sums, gone, _summed(joined, node_count, analysis_weight))
    else:
        sums = _summed(rows.result(), node_count, analysis_weight)
    _last.put(_LAST, _Last(rows, node_count, analysis_weight, sums))
    return sums, patchable


def _summed(rows: pa.Table, node_count: int, analysis_weight: float) -> RelationSums:
    """The sums of ``rows``, each key's weights added in row order (``np.bincount``)."""
    src, dst = (rows.column(end).to_numpy().astype(np.int64) for end in ("src", "dst"))
    hierarchy = per_value(rows.column("predicate"), HIERARCHY_PREDICATES.__contains__, bool)
    asserted = per_value(rows.column("role"), "assertion".__eq__, bool)
    between = src != dst
    key = edge_key(np.minimum(src, dst), np.maximum(src, dst), np.where(hierarchy, HIERARCHY, RELATION), node_count)
    return RelationSums(*summed_and_counted(key[between], np.where(asserted, 1.0, analysis_weight)[between]))


def _patched(sums: RelationSums, gone: RelationSums, added: RelationSums) -> RelationSums:
    """``sums`` without the rows of ``gone`` (all among them) and with those of ``added``; a key left with no row
    goes."""
    keys, total, counts = sums.keys, sums.sums.copy(), sums.counts.copy()
    at = np.searchsorted(keys, gone.keys)
    if len(at) and (at.max() >= len(keys) or not np.array_equal(keys[at], gone.keys)):
        raise RuntimeError("the rows taken away were not summed before: the kept sums are stale")
    total[at] -= gone.sums
    counts[at] -= gone.counts
    at = np.searchsorted(keys, added.keys)
    present = at < len(keys)
    present[present] = keys[at[present]] == added.keys[present]
    total[at[present]] += added.sums[present]
    counts[at[present]] += added.counts[present]
    new = ~present
    keys = np.insert(keys, at[new], added.keys[new])
    total = np.insert(total, at[new], added.sums[new])
    counts = np.insert(counts, at[new], added.counts[new])
    kept = counts > 0
    return RelationSums(keys[kept], total[kept], counts[kept])


def _exact(weight: float) -> bool:
    scaled = weight * (1 << EXACT_BITS)
    return 0 <= weight <= 1 << 10 and float(scaled).is_integer()


@dataclass(frozen=True)
class _Last:
    rows: Future[pa.Table]  # the rows summed (kept beside the index, and handed back as the next build's kept rows)
    node_count: int
    analysis_weight: float
    sums: RelationSums


_LAST = "last"
_last: LastKept[_Last] = LastKept(size=1)
