"""The quads a global step adds beside the documents' extractions, and the catalog table that records them.

The timeline and the accepted supersessions each add quads to documents' graphs and record them (one N-Quads
line per quad) in their own table, ``timeline_quads`` and ``supersession_quads`` (``catalog/schema.py``), so that
the next run removes exactly what it no longer adds. One rule for both: swap the quads in the store
(``QuadStore.swap_quads``), then change the record by the difference, inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Container, Iterable

import duckdb
import pandas as pd
import pyoxigraph as ox

from engramrag.catalog.connection import registered
from engramrag.ontology.quadstore import QuadStore, QuadSwap
from engramrag.store import Home

RECORD_TABLES = frozenset({"timeline_quads", "supersession_quads"})


def swap_step_quads(
    home: Home, catalog: duckdb.DuckDBPyConnection, table: str, quads: Iterable[ox.Quad],
    rewritten: Container[ox.NamedNode] | None = None,
) -> QuadSwap:  # fmt: skip
    """Make ``quads`` the step's quads in the store (the recorded ones it no longer adds are removed). ``rewritten``:
    the graphs that can have been rewritten since the step's last swap, when the step knows them
    (``QuadStore.swap_quads``)."""
    recorded = [row[0] for row in catalog.execute(f"SELECT nquad FROM {_checked(table)}").fetchall()]
    with QuadStore.opened(home.quads_path) as store:
        return store.swap_quads(recorded, quads, rewritten)


def record_swap(catalog: duckdb.DuckDBPyConnection, table: str, swap: QuadSwap) -> None:
    """Change the step's record by what the swap released and claimed (call inside the caller's transaction)."""
    table = _checked(table)
    # As frames: executemany costs about 150 us a row (700,000 quads at 10,000 notes on a first build: minutes).
    if swap.released:
        with registered(catalog, "released_quads", pd.DataFrame({"nquad": swap.released})):
            catalog.execute(f"DELETE FROM {table} WHERE nquad IN (SELECT nquad FROM released_quads)")
    if swap.claimed:
        with registered(catalog, "claimed_quads", pd.DataFrame({"nquad": swap.claimed})):
            catalog.execute(f"INSERT INTO {table} SELECT nquad FROM claimed_quads")


def _checked(table: str) -> str:
    if table not in RECORD_TABLES:
        raise ValueError(f"{table!r} is not a table of step quads ({sorted(RECORD_TABLES)})")
    return table
