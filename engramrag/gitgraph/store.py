"""The decision graph's store: ``<home>/gitgraph.duckdb``, one writer at a time.

It has its own lock file (``.gitgraph.lock``), not the home's ``.stores.lock``: ingesting a repository must not
wait for a vault build, nor block the dashboard's catalog readers. Writers hold it exclusively, readers share
it, so a reader never opens the file in the middle of a write (DuckDB does not allow that across processes).

Every table carries ``repo_id`` (a hash of the repository's absolute path) so several repositories share a
home, except ``people``: a person is the same person in every repository. Columns beyond the shared spec:
``commits.seq`` (position in parents-first order), ``decisions.changed`` (the record's text differs from the
parent version's), ``decisions.conflicts_with``, the ``blob`` ids (``decisions``, ``instruction_versions``,
``file_changes``), ``instruction_versions.scope`` (the folder it governs), ``decision_links.source_id`` (the
record that wrote the link), ``decision_refs`` (every supersession reference as written, resolved or not),
``head_files`` (the tree at the ingested HEAD) and ``ingest_log.mode``/``note``.

``decision_current`` is each decision as it reads at the ingested HEAD: the latest version whose file blob is
the one at HEAD. A record deleted since, or a file renamed away, is history, not current.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from engramrag.store import Home, file_lock
from engramrag.vault.ids import short_hash

SCHEMA_VERSION = 1
FILE_NAME = "gitgraph.duckdb"
LOCK_NAME = ".gitgraph.lock"

COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "repos": (("repo_id", "VARCHAR"), ("path", "VARCHAR"), ("head", "VARCHAR"), ("ingested_at", "TIMESTAMPTZ"),
              ("commits", "BIGINT")),
    "commits": (("repo_id", "VARCHAR"), ("sha", "VARCHAR"), ("seq", "BIGINT"), ("parents", "VARCHAR[]"),
                ("author_key", "VARCHAR"), ("committer_key", "VARCHAR"), ("authored_at", "TIMESTAMPTZ"),
                ("committed_at", "TIMESTAMPTZ"), ("subject", "VARCHAR"), ("body", "VARCHAR"),
                ("is_merge", "BOOLEAN")),
    "people": (("person_key", "VARCHAR PRIMARY KEY"), ("name", "VARCHAR"), ("email", "VARCHAR"),
               ("is_agent", "BOOLEAN"), ("agent_kind", "VARCHAR")),
    "commit_people": (("repo_id", "VARCHAR"), ("sha", "VARCHAR"), ("person_key", "VARCHAR"), ("role", "VARCHAR")),
    "file_changes": (("repo_id", "VARCHAR"), ("sha", "VARCHAR"), ("path", "VARCHAR"), ("old_path", "VARCHAR"),
                     ("change", "VARCHAR"), ("added", "INTEGER"), ("deleted", "INTEGER"), ("blob", "VARCHAR")),
    "decisions": (("repo_id", "VARCHAR"), ("decision_id", "VARCHAR"), ("sha", "VARCHAR"), ("path", "VARCHAR"),
                  ("title", "VARCHAR"), ("decided_on", "DATE"), ("status", "VARCHAR"), ("line_start", "INTEGER"),
                  ("line_end", "INTEGER"), ("text", "VARCHAR"), ("format", "VARCHAR"),
                  ("same_day_conflict", "BOOLEAN"), ("conflicts_with", "VARCHAR[]"), ("changed", "BOOLEAN"),
                  ("blob", "VARCHAR")),
    "decision_refs": (("repo_id", "VARCHAR"), ("decision_id", "VARCHAR"), ("sha", "VARCHAR"), ("line", "INTEGER"),
                      ("kind", "VARCHAR"), ("reference", "VARCHAR"), ("to_id", "VARCHAR")),
    "decision_links": (("repo_id", "VARCHAR"), ("from_id", "VARCHAR"), ("to_id", "VARCHAR"), ("kind", "VARCHAR"),
                       ("source_sha", "VARCHAR"), ("line", "INTEGER"), ("source_id", "VARCHAR")),
    "rationale": (("repo_id", "VARCHAR"), ("decision_id", "VARCHAR"), ("path", "VARCHAR"), ("reason", "VARCHAR"),
                  ("sha", "VARCHAR")),
    "decision_blame": (("repo_id", "VARCHAR"), ("decision_id", "VARCHAR"), ("line", "INTEGER"), ("sha", "VARCHAR")),
    "instruction_versions": (("repo_id", "VARCHAR"), ("path", "VARCHAR"), ("sha", "VARCHAR"),
                             ("committed_at", "TIMESTAMPTZ"), ("section", "VARCHAR"), ("line_start", "INTEGER"),
                             ("line_end", "INTEGER"), ("text", "VARCHAR"), ("scope", "VARCHAR"), ("blob", "VARCHAR")),
    "head_files": (("repo_id", "VARCHAR"), ("path", "VARCHAR"), ("blob", "VARCHAR")),
    "ingest_log": (("repo_id", "VARCHAR"), ("run_at", "TIMESTAMPTZ"), ("from_sha", "VARCHAR"), ("to_sha", "VARCHAR"),
                   ("commits_added", "INTEGER"), ("seconds", "DOUBLE"), ("mode", "VARCHAR"), ("note", "VARCHAR")),
}  # fmt: skip
REPO_TABLES = tuple(name for name in COLUMNS if name != "people")

CURRENT_VIEW = """
CREATE OR REPLACE VIEW decision_current AS
SELECT * EXCLUDE (version_rank) FROM (
    SELECT d.*, row_number() OVER (PARTITION BY d.repo_id, d.decision_id ORDER BY c.seq DESC) AS version_rank
    FROM decisions d
    JOIN head_files h ON h.repo_id = d.repo_id AND h.path = d.path AND h.blob = d.blob
    JOIN commits c ON c.repo_id = d.repo_id AND c.sha = d.sha
) WHERE version_rank = 1
"""

ARROW_TYPES = {
    "VARCHAR": pa.string(), "BIGINT": pa.int64(), "INTEGER": pa.int32(), "BOOLEAN": pa.bool_(),
    "DOUBLE": pa.float64(), "DATE": pa.date32(), "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
    "VARCHAR[]": pa.list_(pa.string()),
}  # fmt: skip


def gitgraph_path(home: Home) -> Path:
    return home.root / FILE_NAME


def repo_id(repo_path: str | os.PathLike[str]) -> str:
    """A repository's id in the store: a hash of its absolute path (a clone elsewhere is another repository)."""
    return short_hash("repo", str(Path(repo_path).expanduser().resolve()))


@contextmanager
def gitgraph_writer(home: Home, timeout_s: float = 600.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection under the exclusive lock, with the schema in place."""
    with _locked(home, fcntl.LOCK_EX, timeout_s):
        connection = duckdb.connect(str(gitgraph_path(home)))
        try:
            ensure_schema(connection)
            yield connection
        finally:
            connection.close()


@contextmanager
def gitgraph_reader(home: Home, timeout_s: float = 120.0) -> Iterator[duckdb.DuckDBPyConnection | None]:
    """A read-only connection under the shared lock, or None when nothing was ingested into this home yet."""
    with _locked(home, fcntl.LOCK_SH, timeout_s):
        if not gitgraph_path(home).exists():
            yield None
            return
        connection = duckdb.connect(str(gitgraph_path(home)), read_only=True)
        try:
            yield connection
        finally:
            connection.close()


def ensure_schema(connection: duckdb.DuckDBPyConnection) -> None:
    """Create what is missing; a store from a later schema version is refused rather than misread."""
    connection.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    found = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if found and int(found[0]) > SCHEMA_VERSION:
        raise RuntimeError(
            f"gitgraph.duckdb has schema version {found[0]}, newer than this engramrag's {SCHEMA_VERSION}; "
            "upgrade engramrag or ingest into another --home."
        )
    for table, columns in COLUMNS.items():
        body = ", ".join(f"{name} {kind}" for name, kind in columns)
        connection.execute(f"CREATE TABLE IF NOT EXISTS {table} ({body})")
    connection.execute(CURRENT_VIEW)
    if not found:
        connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])


def insert_rows(
    connection: duckdb.DuckDBPyConnection, table: str, rows: Sequence[dict[str, Any]], upsert: str | None = None
) -> int:
    """Append rows (dicts keyed by column name; missing columns are NULL) in one Arrow batch; with ``upsert``
    (the primary key), a row whose key exists replaces the stored one."""
    if not rows:
        return 0
    columns = COLUMNS[table]
    arrays = {
        name: pa.array([row.get(name) for row in rows], type=ARROW_TYPES[kind.split(" ")[0]]) for name, kind in columns
    }
    batch = pa.table(arrays)  # noqa: F841 - read by DuckDB through its replacement scan
    conflict = ""
    if upsert:
        updates = ", ".join(f"{name} = excluded.{name}" for name, _ in columns if name != upsert)
        conflict = f" ON CONFLICT ({upsert}) DO UPDATE SET {updates}"
    connection.execute(f"INSERT INTO {table} BY NAME SELECT * FROM batch{conflict}")
    return len(rows)


def delete_repository(connection: duckdb.DuckDBPyConnection, repo: str) -> None:
    for table in REPO_TABLES:
        connection.execute(f"DELETE FROM {table} WHERE repo_id = ?", [repo])


def path_history(connection: duckdb.DuckDBPyConnection, repo: str, path: str) -> list[str]:
    """The path and every earlier name of the file, newest first, following recorded renames back (a file
    renamed twice has both older names), so an answer about a file also finds what was said about it before."""
    renames = connection.execute(
        "SELECT f.path, f.old_path FROM file_changes f JOIN commits c ON c.repo_id = f.repo_id AND c.sha = f.sha "
        "WHERE f.repo_id = ? AND f.change = 'R' ORDER BY c.seq DESC",
        [repo],
    ).fetchall()
    names, current = [path], path
    for new, old in renames:
        if new == current and old not in names:
            names.append(old)
            current = old
    return names


def _locked(home: Home, mode: int, timeout_s: float) -> AbstractContextManager[None]:
    return file_lock(
        home.root / LOCK_NAME, mode, timeout_s,
        f"{gitgraph_path(home)} is busy with a running ingest for over {timeout_s:.0f}s; wait for it to finish "
        "and try again.",
    )
