"""The key table kept in the catalog between runs, so that an edit computes only the rows of the keys it touched.

A key's row (``resolve.keytable.KeyRow``) is a function of its own live mention rows and of the documents they are
in, so each run first asks the catalog for a digest of those inputs per key (one aggregate query; nothing leaves
DuckDB but the digests) and computes rows only for keys whose digest differs from the stored one: their mention rows
are read by label, every other row comes back from ``resolution_keys``. The parts of the table that depend on other
keys (the notes' file names, which declare an alias only when one note has that name; the generic aliases; the
vectors) are computed at every run by ``keytable.KeyAssembly``, whole or, in a resident process, patched from the
table it assembled from the rows it stored, so the table equals one built from every mention row
(``tests/test_stored_keys.py`` compares them).

The digest covers, per mention row: its document, entity key, label, kind, core kind, aliases, count and first
line, the document's path and text hash, and for a note's title row the note's front matter. Rows computed with
other code (the meta row ``resolution_keys``) are all computed again.

A resident process (``engram watch``) keeps the rows it wrote last in memory, with the token of that write: the
meta row carries the token, written in the same transaction as the rows, so when the catalog still names it (and
holds as many rows) the rows are the ones in memory and are not read back (6.6 s at 100,000 notes); any other write,
or a write that was rolled back, leaves another token and the rows are read from the table. With its rows it keeps
the documents' digests their inputs were taken at, and computes again only the inputs of the keys of the documents
that moved since (``touched_key_inputs``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import duckdb
import numpy as np
import pandas as pd

from engramrag.catalog.connection import insert_frame, read_frame, registered
from engramrag.catalog.digests import note_digest
from engramrag.catalog.live_labels import labels_by_first_mention
from engramrag.extract.builder import DOCUMENT_KEY
from engramrag.extract.textutil import normalise_label
from engramrag.resolve.inputs import core_kind_column, mention_columns
from engramrag.resolve.keytable import (
    KeyAssembly,
    KeyRow,
    KeyTable,
    file_name_aliases,
    key_rows,
    mention_lists,
)
from engramrag.resolve.mention_rows import MentionRow
from engramrag.run_memo import RunMemo, Same

META_KEY = "resolution_keys"
T = TypeVar("T")
KEY_ROW_COLUMNS = ("entity_key", "inputs", "label", "kind", "check_kind", "declared", "written", "documents")
_LABELS_VIEW = "resolution_label_keys"  # (label, key): the view the queries join mentions by (_labels_view)
_LIVE = f"entities e JOIN documents d USING (doc_id) JOIN {_LABELS_VIEW} k ON k.label = e.label WHERE NOT d.gone"


@dataclass(frozen=True)
class KeyTableUpdate:
    """This run's key table and what changed in the stored rows."""

    table: KeyTable
    inputs: list[str]  # per key of the table, the digest of its mention rows and documents
    fresh: list[KeyRow]  # rows computed this run (new keys, keys whose inputs changed)
    removed: list[str]  # stored keys whose row goes: gone, or computed again
    whole: str | None  # why every row was computed, or None when only changed keys' were
    rows: list[KeyRow] = field(default_factory=list)  # every key's row, in the table's key order
    kept_in_memory: bool = False  # the stored rows were this process's own from its last write, not read back
    documents: dict[str, str] = field(default_factory=dict)  # ``document_digests`` when ``inputs`` were taken
    inputs_computed: int | None = None  # keys whose inputs were computed again (None: every key's)
    mentions: pd.DataFrame | None = None  # the live mention rows read to compute ``fresh`` (every row of their keys)
    assembly: KeyAssembly | None = None  # what ``table`` was assembled from: the next run's table is patched from it
    digests: dict[str, str] = field(default_factory=dict)  # ``inputs`` by key
    by_key: dict[str, KeyRow] = field(default_factory=dict)  # ``rows`` by key


def live_label_keys(catalog: duckdb.DuckDBPyConnection, catalog_path: Path) -> pd.DataFrame:
    """``label`` and its stable ``key``, for every label of the live mentions whose key is not empty, in the order
    labels are first mentioned (by document, then entity key): the order the label vectors are chosen in. A frame
    the caller reads, never changes: a resident process hands the same one out while the labels are the same."""
    labels = labels_by_first_mention(catalog, catalog_path)
    with _LABEL_KEYS.run() as made:  # the very labels of the last run (``live_labels`` keeps them): its frame
        return made(Same(labels), lambda: _label_keys(labels))


def _label_keys(labels: tuple[str, ...]) -> pd.DataFrame:
    frame = pd.DataFrame({"label": labels, "key": [normalise_label(label) for label in labels]}, dtype=object)
    return frame[frame["key"] != ""].reset_index(drop=True)


_LABEL_KEYS: RunMemo[Same, pd.DataFrame] = RunMemo()


def key_inputs(catalog: duckdb.DuckDBPyConnection, labels: pd.DataFrame) -> dict[str, str]:
    """Per stable key, a digest of its live mention rows and of the documents they are in (two 64-bit hash sums:
    independent of row order, computed inside DuckDB). ``labels``: the (label, key) rows whose keys are wanted."""
    row = f"""concat_ws(chr(30), e.doc_id, e.entity_key, e.label, e.kind, coalesce({core_kind_column(catalog)}, chr(0)),
        coalesce(e.aliases::VARCHAR, chr(0)), e.mentions::VARCHAR, coalesce(e.first_line::VARCHAR, chr(0)), d.path,
        d.body_hash, CASE WHEN e.entity_key = '{DOCUMENT_KEY}' THEN coalesce(d.front_matter::VARCHAR, chr(0)) END)"""
    with _labels_view(catalog, labels):
        found = catalog.execute(
            f"SELECT k.key, count(*), sum(hash({row})), sum(hash({row}, 1)) FROM {_LIVE} GROUP BY k.key"
        ).fetchall()
    return {key: f"{count}:{first}:{second}" for key, count, first, second in found}


def document_digests(catalog: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Per document (gone ones too), a digest of what the keys' inputs read of it: its path, text hash, front
    matter and whether it is gone, and its extraction, which is what rewrites its mention rows."""
    digest = note_digest("path", "body_hash", "coalesce(front_matter::VARCHAR, chr(0))", "gone")
    return dict(catalog.execute(f"SELECT doc_id, {digest} FROM documents").fetchall())


def touched_key_inputs(
    catalog: duckdb.DuckDBPyConnection, labels: pd.DataFrame, documents_before: Mapping[str, str],
    documents_now: Mapping[str, str],
) -> tuple[set[str], dict[str, str]]:  # fmt: skip
    """The keys whose ``key_inputs`` can have changed since the documents had the digests ``documents_before``, and
    those inputs now (a touched key absent from them has no live mention left): the keys of the documents whose digest
    moved, those their mention rows name now and those the stored rows list them under (the keys they named before).
    Every other key's inputs are the ones taken then. Every key's inputs took 2.7 s of an edit at 100,000 notes."""
    moved = sorted(doc for doc in documents_before.keys() | documents_now.keys()
                   if documents_before.get(doc) != documents_now.get(doc))  # fmt: skip
    if not moved:
        return set(), {}
    with registered(catalog, "moved_documents", pd.DataFrame({"doc_id": moved}, dtype=object)):
        named_before = catalog.execute(
            "SELECT entity_key FROM resolution_keys "
            "WHERE list_has_any(documents, (SELECT list(doc_id) FROM moved_documents))"
        ).fetchall()
        labels_now = catalog.execute(
            "SELECT DISTINCT label FROM entities WHERE doc_id IN (SELECT doc_id FROM moved_documents)"
        ).fetchall()
    touched = {key for (key,) in named_before} | {normalise_label(label) for (label,) in labels_now}
    return touched, key_inputs(catalog, labels[labels["key"].isin(touched)])


def update_key_table(
    catalog: duckdb.DuckDBPyConnection,
    labels: pd.DataFrame,
    vectors: Mapping[str, np.ndarray] | None,
    max_posting: int,
    code: str,
    whole: str | None = None,
) -> KeyTableUpdate:
    """The key table of the live mentions (``labels`` from ``live_label_keys``), its rows computed only for keys
    whose inputs changed since the stored ones were (every key's when ``whole`` gives a reason, when nothing is
    stored, or when the stored rows were computed by other ``code``). ``mentions`` of the table is empty: the caller
    reads the lists of the keys it quotes (``key_mention_lists``), and making them for every key computed this run
    was a loop over all their mention rows (a key named in thousands of notes has thousands)."""
    recorded = next(iter(catalog.execute("SELECT value FROM meta WHERE key = ?", [META_KEY]).fetchall()), (None,))[0]
    stored_code = None if recorded is None else recorded.partition(" ")[0]
    if whole is None:
        whole = "nothing stored" if stored_code is None else "code changed" if stored_code != code else None
    in_memory = not whole and _written.value == recorded and _row_count(catalog) == len(_written.rows)
    documents = document_digests(catalog)
    touched: set[str] | None = None
    if in_memory:
        stored_digests, stored_rows = _written.digests, _written.rows
        if _written.documents is not None:
            touched, now = touched_key_inputs(catalog, labels, _written.documents, documents)
            inputs = _patched(stored_digests, touched, now)
        else:
            inputs = key_inputs(catalog, labels)
    else:
        inputs = key_inputs(catalog, labels)
        stored_digests, stored_rows = ({}, {}) if whole else _stored_rows(catalog)
    # Only a touched key's inputs can differ from the stored ones when the others' were taken from them.
    looked = inputs.keys() if touched is None else touched & inputs.keys()
    changed = sorted(key for key in looked if stored_digests.get(key) != inputs[key])
    mentions = mentions_of_keys(catalog, labels, changed)
    fresh, _lists, _titles = key_rows(mentions, _front_matter(catalog, mentions), with_lists=False)
    gone = (stored_rows.keys() - inputs.keys()) if touched is None else (touched & stored_rows.keys()) - inputs.keys()
    rows = _patched(stored_rows, gone, {row.key: row for row in fresh})
    ordered, ordered_inputs = _in_key_order(rows, inputs, fresh, changed, gone if in_memory else None)
    titled = tuple(_titled_notes(catalog, labels))
    with _FILE_NAMES.run() as made:  # the same notes' names: the same aliases (2 s at 100,000 notes)
        file_names = made(titled, lambda: file_name_aliases(titled))
    # The table this process assembled from the rows it stored is patched (most rows are those very objects).
    assembly = KeyAssembly.of(ordered, file_names, vectors, max_posting, _written.assembly if in_memory else None)
    table = assembly.table
    computed = {row.key for row in fresh}
    removed = sorted(gone | (computed & stored_rows.keys()))
    return KeyTableUpdate(table, ordered_inputs, fresh, removed, whole, ordered, in_memory, documents,
                          None if touched is None else len(touched), mentions, assembly, inputs, rows)  # fmt: skip


def _patched(kept: dict[str, T], gone: Iterable[str], fresh: Mapping[str, T]) -> dict[str, T]:
    """A copy of ``kept`` without the keys of ``gone`` and with ``fresh``'s."""
    patched = dict(kept)
    for key in gone:
        patched.pop(key, None)
    patched.update(fresh)
    return patched


def _in_key_order(
    rows: dict[str, KeyRow], inputs: dict[str, str], fresh: list[KeyRow], changed: list[str], gone: set[str] | None
) -> tuple[list[KeyRow], list[str]]:  # fmt: skip
    """The rows and their inputs in key order: the last written lists with the fresh rows and changed inputs put in
    their places when the keys are those of the last write (``gone`` given, empty, and no fresh key new), else
    sorted (sorting and listing 37,000 keys took 25 ms of each edit at 10,000 notes)."""
    position = _written.position
    if gone is None or gone or any(row.key not in position for row in fresh) or len(position) != len(rows):
        keys = sorted(rows)
        return [rows[key] for key in keys], [inputs[key] for key in keys]
    ordered, ordered_inputs = list(_written.ordered), list(_written.inputs)
    for row in fresh:
        ordered[position[row.key]] = row
    for key in changed:
        ordered_inputs[position[key]] = inputs[key]
    return ordered, ordered_inputs


def write_key_rows(catalog: duckdb.DuckDBPyConnection, update: KeyTableUpdate, code: str) -> None:
    """Inside the caller's transaction: the rows ``update`` computed replace the stored ones (all of them when it
    computed every row), and the meta row names ``code``."""
    if update.whole:
        catalog.execute("DELETE FROM resolution_keys")
    elif update.removed:
        with registered(catalog, "removed_keys", pd.DataFrame({"key": update.removed}, dtype=object)):
            catalog.execute("DELETE FROM resolution_keys WHERE entity_key IN (SELECT key FROM removed_keys)")
    frame = pd.DataFrame(
        [
            (row.key, update.digests[row.key], row.label, row.kind, row.check_kind, sorted(row.declared),
             sorted(row.written), sorted(row.documents))
            for row in update.fresh
        ],
        columns=list(KEY_ROW_COLUMNS),
    )  # fmt: skip
    insert_frame(catalog, "resolution_keys", frame)
    value = f"{code} {uuid.uuid4().hex}"
    catalog.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [META_KEY, value])
    # Trusted by the next run only if it finds ``value`` in the catalog: that is, once this transaction committed.
    _written.value = value
    _written.digests = update.digests
    _written.rows = update.by_key
    if len(_written.position) != len(update.rows) or [row.key for row in update.rows] != list(_written.position):
        _written.position = {row.key: number for number, row in enumerate(update.rows)}
    _written.ordered, _written.inputs = update.rows, update.inputs
    _written.documents = update.documents
    _written.assembly = update.assembly


@dataclass
class _Written:
    """The rows this process wrote last (per key its inputs and its row, and both in key order), the meta value written
    with them, the documents' digests their inputs were taken at and the table assembled from the rows."""

    value: str | None = None
    digests: dict[str, str] = field(default_factory=dict)  # per key, its inputs
    rows: dict[str, KeyRow] = field(default_factory=dict)  # per key, its row
    ordered: list[KeyRow] = field(default_factory=list)  # the rows in key order
    inputs: list[str] = field(default_factory=list)  # their inputs, in that order
    position: dict[str, int] = field(default_factory=dict)  # per key, its place in that order
    documents: dict[str, str] | None = None
    assembly: KeyAssembly | None = None  # the table assembled from ``rows``


_written = _Written()
_FILE_NAMES: RunMemo[tuple[tuple[str, str], ...], dict[str, set[str]]] = RunMemo()


def mentions_of_keys(catalog: duckdb.DuckDBPyConnection, labels: pd.DataFrame, keys: list[str] | None) -> pd.DataFrame:
    """The live mention rows (as ``resolve.inputs.live_mentions`` has them) of ``keys`` (of every key when None)."""
    chosen = labels if keys is None else labels[labels["key"].isin(set(keys))]
    with _labels_view(catalog, chosen):
        return read_frame(
            catalog, f"SELECT {mention_columns(catalog)} FROM {_LIVE} ORDER BY e.doc_id, e.entity_key"
        ).astype(object)


def key_mention_lists(
    catalog: duckdb.DuckDBPyConnection, labels: pd.DataFrame, keys: set[str] | None, read: pd.DataFrame | None = None
) -> dict[str, Sequence[MentionRow]]:
    """The mention lists (``KeyTable.mentions``) of ``keys``, of every key when None. ``read``: live mention rows
    already read (``KeyTableUpdate.mentions``: every row of each of their keys); the keys it holds are not read
    again."""
    if keys is None or read is None or not len(read):
        return mention_lists(mentions_of_keys(catalog, labels, None if keys is None else sorted(keys)))
    key_of_label = {label: normalise_label(label) for label in read["label"].unique().tolist()}
    held = keys & set(key_of_label.values())
    wanted = [label for label, key in key_of_label.items() if key in held]  # by label: a few, not a key per row
    lists = mention_lists(read[read["label"].isin(wanted).to_numpy()]) if held else {}
    rest = sorted(keys - held)
    return lists | mention_lists(mentions_of_keys(catalog, labels, rest)) if rest else lists


def _row_count(catalog: duckdb.DuckDBPyConnection) -> int:
    """The stored rows (a table emptied by hand keeps its meta row: then its rows are read, not remembered)."""
    return catalog.execute("SELECT count(*) FROM resolution_keys").fetchall()[0][0]


def _stored_rows(catalog: duckdb.DuckDBPyConnection) -> tuple[dict[str, str], dict[str, KeyRow]]:
    """The stored rows: per key its inputs, and per key its row."""
    found = catalog.execute(f"SELECT {', '.join(KEY_ROW_COLUMNS)} FROM resolution_keys").fetchall()
    digests = {key: inputs for key, inputs, *_ in found}
    rows = {key: KeyRow(key, label, kind, check_kind, frozenset(declared), frozenset(written), frozenset(documents))
            for key, _inputs, label, kind, check_kind, declared, written, documents in found}  # fmt: skip
    return digests, rows


def _front_matter(catalog: duckdb.DuckDBPyConnection, mentions: pd.DataFrame) -> pd.DataFrame:
    """doc_id and front_matter of the notes titled by the given mention rows."""
    titled = mentions.loc[mentions["entity_key"] == DOCUMENT_KEY, ["doc_id"]].drop_duplicates()
    if not len(titled):
        return pd.DataFrame({"doc_id": [], "front_matter": []}, dtype=object)
    with registered(catalog, "titled_documents", titled):
        return read_frame(
            catalog,
            "SELECT doc_id, front_matter FROM documents WHERE doc_id IN (SELECT doc_id FROM titled_documents)",
        )


def _titled_notes(catalog: duckdb.DuckDBPyConnection, labels: pd.DataFrame) -> list[tuple[str, str]]:
    """(path, title key) of every live note with a title row."""
    with _labels_view(catalog, labels):
        return catalog.execute(
            f"SELECT d.path, k.key FROM {_LIVE} AND e.entity_key = ? AND d.path <> '' ORDER BY d.path, k.key",
            [DOCUMENT_KEY],
        ).fetchall()


def _labels_view(catalog: duckdb.DuckDBPyConnection, labels: pd.DataFrame) -> AbstractContextManager[None]:
    """``labels``' (label, key) columns as the view ``_LIVE`` joins mentions by, inside the block."""
    return registered(catalog, _LABELS_VIEW, labels[["label", "key"]])
