"""Pure helpers of the retrieval benchmarks: ranking metrics, grouping, exact paired tests, percentiles and
Markdown tables. Standard library only, so they are tested without building anything.

Conventions: a ranking is a sequence of document names, best first; repeated names (several chunks of one
document) count once, at their first place. Gold is a collection of distinct document names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

# --- per-question metrics ----------------------------------------------------------------------------------


def distinct_ranked(ranked: Iterable[str]) -> list[str]:
    """The ranking with repeated documents removed, each kept at its first (best) place."""
    seen: set[str] = set()
    out = []
    for doc in ranked:
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
    return out


def _gold_set(gold: Iterable[str]) -> set[str]:
    wanted = set(gold)
    if not wanted:
        raise ValueError("recall is undefined for a question without gold documents")
    return wanted


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """|gold ∩ top-k distinct documents| / |gold|, in [0, 1]."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    wanted = _gold_set(gold)
    top = set(distinct_ranked(ranked)[:k])
    return len(wanted & top) / len(wanted)


def all_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> int:
    """1 if every gold document is among the top k distinct documents, else 0."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    wanted = _gold_set(gold)
    return int(wanted <= set(distinct_ranked(ranked)[:k]))


def reciprocal_rank(ranked: Sequence[str], gold: Iterable[str]) -> float:
    """1 / (place of the first gold document among the distinct documents), 0.0 if none is ranked."""
    wanted = _gold_set(gold)
    for place, doc in enumerate(distinct_ranked(ranked), start=1):
        if doc in wanted:
            return 1.0 / place
    return 0.0


def hop_type(question_id: str) -> str:
    """MuSiQue's hop type is the prefix of the question id before '__' ('2hop', '3hop1', '4hop3', ...)."""
    prefix, separator, _ = question_id.partition("__")
    if not separator or not prefix:
        raise ValueError(f"question id {question_id!r} has no hop prefix ('<hop>__<id>')")
    return prefix


# --- aggregation -------------------------------------------------------------------------------------------


def mean_percent(values: Sequence[float]) -> float | None:
    """Mean of values in [0, 1], in percent; None for no values."""
    return 100.0 * math.fsum(values) / len(values) if values else None


def aggregate(
    rows: Sequence[Mapping[str, Any]], metrics: Sequence[str], group: str = "hop"
) -> dict[str, Any]:
    """Mean of each metric over all rows and per value of ``group``, in percent, with the row counts:
    ``{"overall": {"n": N, metric: pct, ...}, "by_<group>": {value: {"n": n, metric: pct, ...}, ...}}``.
    Group values are sorted (for MuSiQue: 2hop, 3hop1, 3hop2, 4hop1, 4hop3)."""

    def summary(subset: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {"n": len(subset), **{m: mean_percent([float(row[m]) for row in subset]) for m in metrics}}

    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row[group]), []).append(row)
    return {
        "overall": summary(rows),
        f"by_{group}": {value: summary(groups[value]) for value in sorted(groups)},
    }


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation between closest ranks (numpy's default);
    None for no values."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, not {q}")
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def mean(values: Iterable[float | None]) -> float | None:
    """Arithmetic mean of the values that are not None; None when there are none."""
    present = [float(v) for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def share_percent(flags: Iterable[bool | None]) -> float | None:
    """Percentage of true flags among those that are not None; None when there are none."""
    present = [bool(flag) for flag in flags if flag is not None]
    return 100.0 * sum(present) / len(present) if present else None


# --- abstention --------------------------------------------------------------------------------------------


def auroc(scores_positive: Sequence[float], scores_negative: Sequence[float]) -> float | None:
    """Area under the ROC curve of a score separating positives from negatives: the Mann–Whitney estimate of
    P(score of a random positive > score of a random negative), ties counting half. None if a side is empty.
    O((m + n) log(m + n)) by midranks."""
    if not scores_positive or not scores_negative:
        return None
    pooled = sorted([(float(s), True) for s in scores_positive] + [(float(s), False) for s in scores_negative])
    rank_sum = 0.0  # sum of the positives' midranks (1-based)
    start = 0
    while start < len(pooled):
        end = start
        while end + 1 < len(pooled) and pooled[end + 1][0] == pooled[start][0]:
            end += 1
        midrank = (start + end) / 2 + 1
        rank_sum += midrank * sum(1 for _, positive in pooled[start : end + 1] if positive)
        start = end + 1
    m, n = len(scores_positive), len(scores_negative)
    return (rank_sum - m * (m + 1) / 2) / (m * n)


# --- exact paired tests ------------------------------------------------------------------------------------


def binomial_two_sided(b: int, c: int) -> float:
    """Exact two-sided p of b successes against c under Binomial(b + c, 1/2):
    min(1, 2 * P[X <= min(b, c)]); 1.0 when b + c == 0."""
    if b < 0 or c < 0:
        raise ValueError(f"counts must be non-negative, not {b}, {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact (binomial) McNemar test on the discordant pairs b (first right, second wrong) and c (the reverse)."""
    return binomial_two_sided(b, c)


def paired_binary(first: Sequence[int], second: Sequence[int]) -> dict[str, Any]:
    """McNemar on two paired binary outcomes: b = first 1 and second 0, c = first 0 and second 1."""
    if len(first) != len(second):
        raise ValueError(f"paired outcomes differ in length: {len(first)} vs {len(second)}")
    b = sum(1 for x, y in zip(first, second, strict=True) if x and not y)
    c = sum(1 for x, y in zip(first, second, strict=True) if y and not x)
    return {"n": len(first), "b": b, "c": c, "p": mcnemar_exact(b, c)}


def sign_test(differences: Iterable[float]) -> dict[str, Any]:
    """Two-sided sign test of paired differences (first minus second); zero differences (ties) are dropped."""
    diffs = list(differences)
    positive = sum(1 for d in diffs if d > 0)
    negative = sum(1 for d in diffs if d < 0)
    return {
        "n": len(diffs),
        "positive": positive,
        "negative": negative,
        "ties": len(diffs) - positive - negative,
        "p": binomial_two_sided(positive, negative),
    }


# --- reporting ---------------------------------------------------------------------------------------------


def format_number(value: Any, digits: int = 1) -> str:
    """A table cell: '-' for None, fixed decimals for floats, the text of anything else."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def format_p(p: float | None) -> str:
    """A p-value to three significant figures, or '<0.0001'."""
    if p is None:
        return "-"
    return "<0.0001" if p < 1e-4 else f"{p:.3g}"


def markdown_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    right_align: Callable[[int], bool] | None = None,
    digits: int = 1,
) -> str:
    """A GitHub-flavoured Markdown table, columns padded to equal width. By default the first column is
    left-aligned and the others right-aligned; ``right_align(column_index)`` overrides that."""
    aligned = right_align or (lambda column: column > 0)
    cells = [[format_number(value, digits) for value in row] for row in rows]
    for row in cells:
        if len(row) != len(headers):
            raise ValueError(f"a row has {len(row)} cells for {len(headers)} columns")
    widths = [max(3, len(header), *(len(row[i]) for row in cells)) for i, header in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        padded = [v.rjust(w) if aligned(i) else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if aligned(i) else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    return "\n".join([line(headers), rule, *(line(row) for row in cells)])
