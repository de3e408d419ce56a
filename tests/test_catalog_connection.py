"""The catalog's frame helpers (catalog/connection.py) on an in-memory DuckDB: no build."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from engramrag.catalog.connection import insert_frame, read_frame, registered


def test_a_registered_frame_is_a_view_inside_the_block_only() -> None:
    db = duckdb.connect()
    with registered(db, "incoming", pd.DataFrame({"a": [1, 2, 3]})):
        assert db.execute("SELECT sum(a) FROM incoming").fetchall() == [(6,)]
    with pytest.raises(duckdb.CatalogException):
        db.execute("SELECT * FROM incoming")


def test_an_error_inside_a_transaction_is_reported_as_itself_and_the_catalog_recovers() -> None:
    db = duckdb.connect()
    db.execute("CREATE TABLE documents (doc_id VARCHAR PRIMARY KEY, title VARCHAR)")
    db.execute("INSERT INTO documents VALUES ('d1', 'first')")
    db.execute("BEGIN")
    # DuckDB refuses unregister in the aborted transaction; the caller must still see the constraint it broke.
    with pytest.raises(duckdb.ConstraintException, match="d1"):
        insert_frame(db, "documents", pd.DataFrame({"doc_id": ["d2", "d1"], "title": ["second", "again"]}))
    db.execute("ROLLBACK")
    insert_frame(db, "documents", pd.DataFrame({"doc_id": ["d2"], "title": ["second"]}))
    assert db.execute("SELECT doc_id FROM documents ORDER BY doc_id").fetchall() == [("d1",), ("d2",)]


def test_read_frame_gives_the_frame_duckdb_gives() -> None:
    db = duckdb.connect()
    db.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES ('a', 1, 1::BIGINT, 7, true, [1, 2], 0.5::DOUBLE, NULL::VARCHAR),"
        " ('b', NULL, NULL, 8, NULL, [], NULL, 'x'), ('한글', 3, 3, 9, false, NULL, 2.0, 'y'))"
        " v(name, count, big, whole, flag, list, score, note)"
    )
    query = "SELECT * FROM t ORDER BY name"
    expected = db.execute(query).df()
    found = read_frame(db, query)
    # Integers and booleans with NULLs are pandas' nullable types, as .df() makes them; without NULLs numpy's.
    assert list(found.dtypes) == list(expected.dtypes)
    assert [str(found[c].dtype) for c in ("count", "big", "whole", "flag")] == ["Int32", "Int64", "int32", "boolean"]
    assert found.drop(columns=["list"]).equals(expected.drop(columns=["list"]))
    def lists(column: pd.Series) -> list:
        return [None if not hasattr(value, "__len__") else list(value) for value in column]

    assert lists(found["list"]) == lists(expected["list"]) == [[1, 2], [], None]


def test_a_writer_creates_every_table_and_brings_back_one_that_was_dropped(tmp_path) -> None:
    from engramrag.catalog.connection import catalog_writer
    from engramrag.catalog.schema import TABLE_NAMES
    from engramrag.store import Home

    home = Home.at(tmp_path / "home")
    with catalog_writer(home, 4) as catalog:
        created = {name for (name,) in catalog.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        catalog.execute("DROP TABLE resolution_keys")
    assert created == TABLE_NAMES and len(TABLE_NAMES) > 30
    with catalog_writer(home, 4) as catalog:  # a current catalog missing a table is not skipped
        assert catalog.execute("SELECT count(*) FROM resolution_keys").fetchall() == [(0,)]


def test_catalogs_attached_in_one_process_see_only_their_own_tables_and_let_go_of_their_files(tmp_path) -> None:
    """Writers and readers attach the catalog file to the process's one DuckDB: each sees its own home's tables,
    a failed block leaves nothing behind, and after the block the file is free for another process."""
    import subprocess
    import sys

    from engramrag.catalog.connection import catalog_reader, catalog_writer, has_column, has_table
    from engramrag.store import Home

    first, second = Home.at(tmp_path / "first"), Home.at(tmp_path / "second")
    with catalog_writer(first, 4) as catalog:
        catalog.execute("CREATE TABLE scratch (x INTEGER)")
        catalog.execute("INSERT INTO scratch VALUES (1), (2)")
    with catalog_writer(second, 4) as catalog, pytest.raises(RuntimeError):
        assert not has_table(catalog, "scratch") and has_table(catalog, "documents")
        catalog.execute("BEGIN")
        catalog.execute("CREATE TABLE scratch (y INTEGER)")
        raise RuntimeError("the step failed")
    with catalog_reader(second) as catalog:
        assert not has_table(catalog, "scratch")  # the failed block's transaction was rolled back
    with catalog_reader(first) as catalog, catalog_reader(first) as again:  # two readers at once
        assert has_column(catalog, "scratch", "x") and not has_column(catalog, "scratch", "y")
        assert again.execute("SELECT sum(x) FROM scratch").fetchall() == [(3,)]
    # Nothing holds the file once the blocks end: another process opens it for writing and finds the rows.
    script = f"import duckdb; print(duckdb.connect({str(first.catalog_path)!r}).sql('SELECT sum(x) FROM scratch')"
    found = subprocess.run([sys.executable, "-c", script + ".fetchall())"], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[(3,)]"
    assert not list(first.root.glob("*.wal"))  # detaching checkpointed the writes into the file
