"""Opening the catalog. Writers hold ``Home.writing()``; readers hold ``Home.reading()``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from engramrag.catalog.schema import SCHEMA_VERSION, TABLES
from engramrag.store import Home


class BucketCountMismatch(RuntimeError):
    pass


@contextmanager
def catalog_writer(home: Home, bucket_count: int) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection under the home's exclusive lock, with the schema in place."""
    with home.writing():
        connection = duckdb.connect(str(home.catalog_path))
        try:
            _ensure_schema(connection)
            _check_meta(connection, bucket_count)
            yield connection
        finally:
            connection.close()


@contextmanager
def catalog_reader(home: Home) -> Iterator[duckdb.DuckDBPyConnection | None]:
    """A read-only connection under the home's shared lock, or None when nothing was built yet."""
    with home.reading():
        if not home.catalog_path.exists():
            yield None
            return
        connection = duckdb.connect(str(home.catalog_path), read_only=True)
        try:
            yield connection
        finally:
            connection.close()


def remember_vault(catalog: duckdb.DuckDBPyConnection, vault: Path) -> None:
    """Record the vault this home is built from, so later commands need only ``--home``."""
    catalog.execute("INSERT OR REPLACE INTO meta VALUES ('vault', ?)", [str(vault)])


def remembered_vault(home: Home) -> Path | None:
    """The vault the home's last build read, or None for a home never built (or built before it was recorded)."""
    with catalog_reader(home) as catalog:
        if catalog is None:
            return None
        row = catalog.execute("SELECT value FROM meta WHERE key = 'vault'").fetchone()
    return Path(row[0]) if row else None


def has_table(catalog: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether the catalog has the table (one written by a later step, or a catalog from before it existed)."""
    return bool(
        catalog.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()[0]
    )


def has_column(catalog: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    """Whether the catalog's table has the column (a read-only reader of an older catalog may lack it)."""
    return bool(
        catalog.execute(
            "SELECT count(*) FROM information_schema.columns WHERE table_name = ? AND column_name = ?",
            [table, column],
        ).fetchone()[0]
    )


def _ensure_schema(connection: duckdb.DuckDBPyConnection) -> None:
    # Every statement is CREATE ... IF NOT EXISTS, so a catalog from before a new table gains it here.
    connection.execute(TABLES)


def _check_meta(connection: duckdb.DuckDBPyConnection, bucket_count: int) -> None:
    rows = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    if not rows:
        connection.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("schema_version", str(SCHEMA_VERSION)), ("bucket_count", str(bucket_count))],
        )
        return
    built_with = int(rows["bucket_count"])
    if built_with != bucket_count:
        raise BucketCountMismatch(
            f"this home was built with {built_with} buckets but {bucket_count} are configured; "
            f"set ENGRAM_BUCKETS={built_with}, or build into a new --home to change the bucket count."
        )
