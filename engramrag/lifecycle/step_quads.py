"""The quads a global step adds beside the documents' extractions, and the catalog table that records them.

The timeline and the accepted supersessions each add quads to documents' graphs and record them (one N-Quads
line per quad) in their own table, ``timeline_quads`` and ``supersession_quads`` (``catalog/schema.py``), so that
the next run removes exactly what it no longer adds. One rule for both: swap the quads in the store
(``QuadStore.swap_quads``), then change the record by the difference, inside the caller's transaction.

A resident builder (``engram watch``) keeps the record it wrote last in memory, with a token written to ``meta`` in
the same transaction: when the catalog still names that token, the record is the one in memory and is not read
back (300,000 lines at 100,000 notes); any other write, or a rolled-back one, leaves another token.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Container, Iterable, Mapping
from dataclasses import dataclass

import duckdb
import pandas as pd
import pyoxigraph as ox

from engramrag.catalog.connection import registered
from engramrag.ontology.quadstore import QuadStore, QuadSwap
from engramrag.run_memo import LastKept
from engramrag.store import Home

RECORD_TABLES = frozenset({"timeline_quads", "supersession_quads"})


@dataclass(frozen=True)
class _Record:
    token: str
    lines: frozenset[str]


_kept: LastKept[_Record] = LastKept(size=4)  # per (catalog file, table): the record this process wrote last


def swap_step_quads(
    home: Home, catalog: duckdb.DuckDBPyConnection, table: str, quads: Iterable[ox.Quad] | Mapping[str, ox.Quad],
    rewritten: Container[ox.NamedNode] | None = None,
) -> QuadSwap:  # fmt: skip
    """Make ``quads`` (or quads by their lines: ``quadstore.lined``) the step's quads in the store (the recorded ones
    it no longer adds are removed). ``rewritten``: the graphs that can have been rewritten since the step's last swap,
    when the step knows them (``QuadStore.swap_quads``)."""
    with QuadStore.opened(home.quads_path) as store:
        return store.swap_quads(_recorded(catalog, home, _checked(table)), quads, rewritten)


def record_swap(home: Home, catalog: duckdb.DuckDBPyConnection, table: str, swap: QuadSwap) -> None:
    """Change the step's record by what the swap released and claimed (call inside the caller's transaction), and
    keep the record in memory for the next run of this process (see the module's doc)."""
    table = _checked(table)
    # As frames: executemany costs about 150 us a row (700,000 quads at 10,000 notes on a first build: minutes).
    if swap.released:
        with registered(catalog, "released_quads", pd.DataFrame({"nquad": swap.released})):
            catalog.execute(f"DELETE FROM {table} WHERE nquad IN (SELECT nquad FROM released_quads)")
    if swap.claimed:
        with registered(catalog, "claimed_quads", pd.DataFrame({"nquad": swap.claimed})):
            catalog.execute(f"INSERT INTO {table} SELECT nquad FROM claimed_quads")
    token = uuid.uuid4().hex
    catalog.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [_token_key(table), token])
    # Trusted by the next run only if it finds ``token`` in the catalog: once this transaction committed.
    _kept.put(_kept_key(home, table), _Record(token, frozenset(swap.owned)))


def _recorded(catalog: duckdb.DuckDBPyConnection, home: Home, table: str) -> Collection[str]:
    kept = _kept.get(_kept_key(home, table))
    found = catalog.execute("SELECT value FROM meta WHERE key = ?", [_token_key(table)]).fetchone()
    if kept is not None and found is not None and found[0] == kept.token:
        return kept.lines
    return [row[0] for row in catalog.execute(f"SELECT nquad FROM {table}").fetchall()]


def _token_key(table: str) -> str:
    return f"{table} record"


def _kept_key(home: Home, table: str) -> str:
    return f"{home.catalog_path}\x1f{table}"


def _checked(table: str) -> str:
    if table not in RECORD_TABLES:
        raise ValueError(f"{table!r} is not a table of step quads ({sorted(RECORD_TABLES)})")
    return table
