"""What resolution reads: the live mentions of the catalog, and the core kind each mention is compared as.

A mention's kind is what its extractor said: a core kind, or a custom kind from the configuration of that
extraction. The core kind it was declared under is kept beside it (``entities.core_kind``), so resolution reads the
declaration from the catalog and never from the configuration of its own run, which may have changed since. A kind
that is neither core nor declared (a row written before ``core_kind`` existed, a replayed extraction) is compared as
Concept, and ``unknown_kinds`` lists it so that the run can say so instead of stopping.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import duckdb
import pandas as pd

from engramrag.catalog.connection import has_column, read_frame
from engramrag.extract.base import CORE_KINDS
from engramrag.resolve.kinds import core_kind, is_known

MENTION_COLUMNS = ("doc_id", "entity_key", "label", "kind", "aliases", "mentions", "first_line", "core_kind")


def core_kind_column(catalog: duckdb.DuckDBPyConnection) -> str:
    """The SQL for ``entities e``'s ``core_kind``: NULL on a catalog from before it was recorded."""
    return "e.core_kind" if has_column(catalog, "entities", "core_kind") else "NULL::VARCHAR"


def mention_columns(catalog: duckdb.DuckDBPyConnection) -> str:
    """The SELECT list of ``MENTION_COLUMNS`` from ``entities e``."""
    return ", ".join(f"e.{name}" for name in MENTION_COLUMNS[:-1]) + f", {core_kind_column(catalog)} AS core_kind"


def live_mentions(catalog: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The entity mentions of the documents that are not gone, with ``core_kind`` (NULL where the catalog has
    none: rows, or a whole catalog, from before it was recorded)."""
    return read_frame(
        catalog,
        f"""
        SELECT {mention_columns(catalog)}
        FROM entities e JOIN documents d USING (doc_id) WHERE NOT d.gone ORDER BY e.doc_id, e.entity_key
        """
    ).astype(object)  # iterated row by row by resolution: Arrow-backed strings cost more than the work


def live_kind_totals(catalog: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The live mentions grouped by (kind, core_kind), with how many mention rows each group has in ``rows``: what
    ``unknown_kinds`` reads (a few dozen rows; grouping by label too made hundreds of thousands at 100,000 notes)."""
    return read_frame(
        catalog,
        f"""
        SELECT e.kind, {core_kind_column(catalog)} AS core_kind, count(*) AS rows
        FROM entities e JOIN documents d USING (doc_id) WHERE NOT d.gone GROUP BY ALL ORDER BY ALL
        """
    ).astype(object)


def mention_core_kinds(mentions: pd.DataFrame, custom_kinds: Mapping[str, str] | None = None) -> list[str | None]:
    """Per mention row, the core kind it is compared as: the ``core_kind`` its extraction recorded, else its kind's
    own (a core kind, or a custom kind in ``custom_kinds``); None when the kind is unknown (compared as Concept)."""
    declared = mentions["core_kind"] if "core_kind" in mentions.columns else [None] * len(mentions)
    return [_core(str(kind), core, custom_kinds) for kind, core in zip(mentions["kind"], declared, strict=True)]


def unknown_kinds(mentions: pd.DataFrame, custom_kinds: Mapping[str, str] | None = None) -> dict[str, int]:
    """The kinds resolution compares as Concept because nothing declares them, with their number of mention rows,
    most frequent first (``mentions`` may be grouped, with the rows each stands for in ``rows``)."""
    weights = mentions["rows"].tolist() if "rows" in mentions.columns else [1] * len(mentions)
    counts: Counter[str] = Counter()
    for kind, core, weight in zip(mentions["kind"], mention_core_kinds(mentions, custom_kinds), weights, strict=True):
        if core is None:
            counts[str(kind)] += weight
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _core(kind: str, declared: Any, custom_kinds: Mapping[str, str] | None) -> str | None:
    if isinstance(declared, str) and declared in CORE_KINDS:
        return declared
    return core_kind(kind, custom_kinds) if is_known(kind, custom_kinds) else None


__all__ = [
    "MENTION_COLUMNS",
    "core_kind_column",
    "live_kind_totals",
    "live_mentions",
    "mention_columns",
    "mention_core_kinds",
    "unknown_kinds",
]
