"""The statements behind the graph's entity–entity edges: joined to their nodes, kept beside each index, and joined
again at the next build only for the notes whose extraction changed.

Every statement whose subject and object are entities of a listed note is a row here, with the stable keys
(normalised labels) of its two ends. A row's nodes follow from those keys, the resolution overlay's clusters and
the node numbering, none of which the row stores for good: every build numbers every row again from the keys
(one lookup per distinct key), so a new cluster or a new entity elsewhere renumbers the kept rows without joining
them again. What a build joins is the statements of new and changed notes (the catalog's ``extracted_hash``,
``extractor`` and ``extracted_at`` of each note, recorded beside the rows); the rows of unchanged notes are read
back. At 10,000 notes the statements are about a million rows and at 100,000 ten million: reading them from the
catalog, joining them to their nodes and sorting them were a third of an index build.

Rows are kept in the order search prefers them in (``PREFERENCE_ORDER``, a total order), which is the
order it reads them back in. A row whose two ends fall into one node (two labels the overlay merged) is kept in the
file, since a later verdict may split them, and left out of what search reads.

The file can only save work: another format, a missing or unreadable file, or ``derive_all`` (the consistency
pass), and every note's statements are joined again, giving the same rows.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from engramrag.arrow_files import UNREADABLE, read_table, write_table
from engramrag.catalog.digests import note_digest
from engramrag.extract.textutil import normalise_label
from engramrag.run_memo import FilesKept

ROWS_FILE = "edge_statements.arrow"
SOURCES_FILE = "edge_statement_sources.arrow"  # doc_id, digest: the extraction each note's rows were joined from

# Asserted statements first (``machine`` false), then by statement id, then by document (one sentence in two notes
# has one id); strings by their bytes.
PREFERENCE_ORDER = [("machine", "ascending"), ("statement_id", "ascending"), ("doc_id", "ascending")]
# The catalog's statement columns a row keeps, and the stable keys of its two ends.
STATEMENT_COLUMNS = ["doc_id", "statement_id", "subject", "predicate", "label", "object", "role", "line_start",
                     "line_end"]  # fmt: skip
KEY_COLUMNS = ["subject_key", "object_key"]
NODE_COLUMNS = ["src", "dst", "doc_node"]
# Up to this many newly joined rows are placed among the kept ones by binary search, more are sorted in with them.
PLACED_BY_SEARCH = 5_000
# Up to this many runs of consecutive rows, merged rows are taken as slices of the kept table (one copy).
RUNS_BY_SLICES = 20_000
# Columns with few distinct values, stored dictionary-encoded (a tenth of the bytes, and cheap to renumber).
ENCODED = ("doc_id", "subject", "predicate", "label", "object", "role", "subject_key", "object_key")
# What a note's rows are joined from: a note extracted again (a new text, another extractor, a --full build) has
# new statements and mentions.
SOURCE_DIGEST = note_digest(table="d")


@dataclass(frozen=True)
class KeptStatements:
    """The rows of the previous index and the extraction digest of each note they were joined from."""

    rows: pa.Table
    sources: dict[str, str]
    # What the rows' nodes (``NODE_COLUMNS``) were numbered by, when this process numbered them (``numbered``): a
    # build numbering by the same keeps them. None for rows read from the file: numbered again.
    numbering: Hashable | None = None

    @classmethod
    def load(cls, folder: Path | None) -> KeptStatements | None:
        """The rows kept beside the index in ``folder``, or None (no index, one without them, or a file that cannot
        be read: every note is joined again)."""
        if folder is None or not (folder / ROWS_FILE).exists() or not (folder / SOURCES_FILE).exists():
            return None
        resident = _resident.get(str(folder.parent), (folder / ROWS_FILE, folder / SOURCES_FILE))
        if resident is not None:
            return resident
        try:
            rows = read_rows(folder / ROWS_FILE)
            sources = read_rows(folder / SOURCES_FILE)
            digests = dict(zip(sources.column("doc_id").to_pylist(), sources.column("digest").to_pylist(),
                               strict=True))  # fmt: skip
        except UNREADABLE:
            return None
        return cls(rows, digests)

    def unchanged(self, digests: dict[str, str]) -> set[str]:
        """The notes (of ``digests``: each listed note's extraction now) whose rows can be kept."""
        return {doc_id for doc_id, digest in digests.items() if self.sources.get(doc_id) == digest}

    def of(self, documents: set[str]) -> KeptRows:
        """The kept rows of ``documents``, in their stored (preference) order."""
        if not documents or not self.rows.num_rows:
            return KeptRows(self.rows, np.zeros(0, dtype=np.int64), self.numbering)
        return KeptRows(self.rows, np.flatnonzero(per_value(self.rows.column("doc_id"), documents.__contains__, bool)),
                        self.numbering)  # fmt: skip


@dataclass(frozen=True)
class KeptRows:
    """Rows of a stored table (``table``) taken at ``positions`` (ascending): taken once, when merged."""

    table: pa.Table
    positions: np.ndarray
    numbering: Hashable | None = None  # as ``KeptStatements.numbering``

    @classmethod
    def whole(cls, table: pa.Table) -> KeptRows:
        return cls(table, np.arange(table.num_rows, dtype=np.int64))


@dataclass(frozen=True)
class NoteDigests:
    """Each listed note's extraction digest (None: a note the catalog's documents do not hold) and the listed notes
    that are live (not gone): the statement rows and the mention rows are both kept by these digests."""

    listed: dict[str, str | None]
    live: frozenset[str]

    def of_live(self) -> dict[str, str]:
        return {doc: digest for doc, digest in self.listed.items() if doc in self.live}


def note_digests(catalog: duckdb.DuckDBPyConnection, listed: str) -> NoteDigests:
    """The digests of the notes of ``listed`` (a query of doc_id), in one read."""
    rows = catalog.execute(
        f"SELECT l.doc_id, {SOURCE_DIGEST}, coalesce(NOT d.gone, false) "
        f"FROM (SELECT DISTINCT doc_id FROM ({listed})) l LEFT JOIN documents d ON d.doc_id = l.doc_id"
    ).fetchall()  # fmt: skip
    return NoteDigests({doc: digest for doc, digest, _ in rows}, frozenset(doc for doc, _, live in rows if live))


def joined_rows(statements: pa.Table, mentions: pd.DataFrame, documents: set[str]) -> pa.Table:
    """The rows of ``statements`` (the catalog's, of new and changed notes) between two entities of a listed note
    (``documents``), with the stable keys of their ends, in preference order. ``mentions``: one row per (document,
    entity) with its ``doc_id``, ``entity_key`` and ``label`` (``index_graph._mentions``); a mention's last row
    names it, as the node numbering does."""
    wanted = mentions[mentions["doc_id"].isin(documents)]
    ends = wanted[["doc_id", "entity_key", "label"]].drop_duplicates(["doc_id", "entity_key"], keep="last")
    labels = ends["label"].astype(object).tolist()
    stable_of = {label: normalise_label(label) for label in set(labels)}
    stable = pa.array([stable_of[label] for label in labels], pa.string())
    # Each end found by its (document, entity) as one string in a hash lookup (Arrow's and DuckDB's three-way joins
    # took 6 and 15 s for a million statements at 10,000 notes; this takes under one).
    end_names = _pair_names(pa.array(ends["doc_id"].astype(object).tolist(), pa.string()),
                            pa.array(ends["entity_key"].astype(object).tolist(), pa.string()))  # fmt: skip
    given = statements.select(STATEMENT_COLUMNS).cast(pa.schema(
        [(name, pa.int32() if name.startswith("line_") else pa.string()) for name in STATEMENT_COLUMNS]
    ))  # fmt: skip
    keys = {}
    for end, name in (("subject", "subject_key"), ("object", "object_key")):
        found = pc.index_in(_pair_names(given.column("doc_id"), given.column(end)), value_set=end_names)
        keys[name] = stable.take(found)
    named = pc.and_(pc.is_valid(keys["subject_key"]), pc.is_valid(keys["object_key"]))
    between = pc.and_(named, pc.and_(pc.not_equal(keys["subject_key"], ""), pc.not_equal(keys["object_key"], "")))
    between = pc.fill_null(pc.and_(between, pc.not_equal(keys["subject_key"], keys["object_key"])), False)
    joined = pa.table({**{name: given.column(name) for name in STATEMENT_COLUMNS}, **keys}).filter(between)
    joined = _encoded(joined)
    return joined.take(_preference_order(joined))


def merged_rows(kept: KeptRows, joined: pa.Table) -> pa.Table:
    """The kept rows and the newly joined ones (of other notes), each in preference order, as one table in that
    order, with ``joined``'s columns (the kept rows' nodes too when ``joined`` is numbered), in one chunk with one
    dictionary per column. A few joined rows are placed by binary search among the kept ones; many are sorted in
    with them."""
    stored, positions, size = kept.table.select(joined.column_names), kept.positions, kept.table.num_rows
    if not joined.num_rows:
        return _single(stored) if len(positions) == size else _taken(stored, positions)
    if not len(positions):
        return _single(joined)
    fresh = size + np.arange(joined.num_rows, dtype=np.int64)  # rows 0..size-1 stored, then the joined
    if joined.num_rows > PLACED_BY_SEARCH:
        both = pa.concat_tables([stored, joined]).unify_dictionaries()
        chosen = both.take(np.concatenate([positions, fresh]))
        return _single(chosen.take(_preference_order(chosen)))
    stored_key, joined_key = _row_keys(stored), _row_keys(joined)
    places = np.array([bisect.bisect_left(positions, joined_key(row), key=stored_key)
                       for row in range(joined.num_rows)], dtype=np.int64)  # fmt: skip
    placed = np.zeros(len(positions) + joined.num_rows, dtype=bool)
    placed[places + np.arange(joined.num_rows)] = True  # the joined rows are in order: each lands after the last
    order = np.empty(len(placed), dtype=np.int64)
    order[placed], order[~placed] = fresh, positions
    return _taken(pa.concat_tables([stored, joined]).unify_dictionaries(), order)


def _taken(table: pa.Table, order: np.ndarray) -> pa.Table:
    """``table.take(order)`` (one chunk), by slices when ``order`` is a few runs of consecutive rows: a kept table
    with one note's rows replaced is a few hundred runs, and Arrow's take over a table of two chunks concatenates them
    before it takes (ten million rows at 100,000 notes: 0.6-3.9 s alone against 0.3-0.5 s for the slices; the one
    copy left still took 2.6 s of a profiled resident edit)."""
    if not len(order):
        return table.slice(0, 0).combine_chunks()
    breaks = np.flatnonzero(np.diff(order) != 1) + 1
    if len(breaks) > RUNS_BY_SLICES:
        return table.take(order).combine_chunks()
    starts, ends = np.concatenate(([0], breaks)).tolist(), np.append(breaks, len(order)).tolist()
    return pa.concat_tables([table.slice(int(order[start]), end - start)
                             for start, end in zip(starts, ends, strict=True)]).combine_chunks()  # fmt: skip


def numbered(rows: pa.Table, node_of_key: Callable[[str], int], node_of_document: Callable[[str], int]) -> pa.Table:
    """``rows`` with their ends' nodes (``src``, ``dst``: ``node_of_key`` of each stable key) and the passage node
    of their note (``doc_node``: ``node_of_document``, -1 for none) in front."""
    src = per_value(rows.column("subject_key"), node_of_key, np.int64)
    dst = per_value(rows.column("object_key"), node_of_key, np.int64)
    # A dictionary may still hold values of rows filtered out: each is looked up, only the rows' must be found.
    doc_node = per_value(rows.column("doc_id"), node_of_document, np.int64)
    if (src < 0).any() or (dst < 0).any() or (doc_node < 0).any():
        raise RuntimeError("a statement's entity or note has no node in this index: the kept rows are stale")
    numbers = {"src": src, "dst": dst, "doc_node": doc_node}
    rest = rows.drop_columns([name for name in NODE_COLUMNS if name in rows.column_names])
    return pa.table({**{name: pa.array(values, pa.int32()) for name, values in numbers.items()},
                     **{name: rest.column(name) for name in rest.column_names}})  # fmt: skip


def save(folder: Path, rows: pa.Table, sources: dict[str, str], numbering: Hashable | None = None) -> None:
    """Write the rows (numbered by ``numbering``, every row including those within one node) and the notes'
    digests."""
    write_table(rows, folder / ROWS_FILE)
    ordered = sorted(sources.items())
    table = pa.table({"doc_id": pa.array([d for d, _ in ordered], pa.string()),
                      "digest": pa.array([g for _, g in ordered], pa.string())})  # fmt: skip
    write_table(table, folder / SOURCES_FILE)
    _resident.put(str(folder.parent), (folder / ROWS_FILE, folder / SOURCES_FILE),
                  KeptStatements(rows, dict(sources), numbering))  # fmt: skip


# Per folder of indexes (a home's), the rows this process wrote last: the next build of a resident process (``engram
# watch``) keeps them from memory while the files are those (reading 10 M rows back took 1.9 s at 100,000 notes).
_resident: FilesKept[KeptStatements] = FilesKept()


def read_for_search(folder: Path) -> pa.Table:
    """The rows search reads (those between two different nodes), memory-mapped, in preference order."""
    rows = read_rows(folder / ROWS_FILE)
    between = pc.not_equal(rows.column("src"), rows.column("dst"))
    return rows if pc.all(between).as_py() in (True, None) else rows.filter(between)


def _preference_order(rows: pa.Table) -> pa.Array:
    """The rows' positions in ``PREFERENCE_ORDER`` (``rows`` dictionary-encoded, as ``_encoded`` leaves them)."""
    keys = pa.table({"machine": per_value(rows.column("role"), "assertion".__ne__, bool),
                     "statement_id": rows.column("statement_id"),
                     "doc_id": pc.cast(rows.column("doc_id"), pa.string())})  # fmt: skip
    return pc.sort_indices(keys, sort_keys=PREFERENCE_ORDER)


def _row_keys(rows: pa.Table) -> Callable[[int], tuple[bool, str, str]]:
    """A row's key in ``PREFERENCE_ORDER``, by its position (read one value at a time: for a binary search)."""
    machine = per_value(rows.column("role"), "assertion".__ne__, bool)
    statement_id, documents = (_one_chunk(rows.column(name)) for name in ("statement_id", "doc_id"))
    names, codes = documents.dictionary.to_pylist(), documents.indices.to_numpy(zero_copy_only=False)
    return lambda row: (bool(machine[row]), statement_id[row].as_py(), names[codes[row]])


def _single(table: pa.Table) -> pa.Table:
    """``table`` in one chunk with one dictionary per column (no copy of a column already in one chunk)."""
    return table.unify_dictionaries().combine_chunks()


def _one_chunk(column: pa.ChunkedArray) -> pa.Array:
    """The column as one array (combining one chunk copied ten million statement ids: 0.8 s at 100,000 notes)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _pair_names(first: pa.Array | pa.ChunkedArray, second: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``first`` and ``second`` joined by a separator no document id or entity key holds."""
    return pc.binary_join_element_wise(first, second, "\x1f")


def per_value(column: pa.ChunkedArray | pa.Array, function: Callable, dtype: type) -> np.ndarray:
    """``function`` of each row's value of a dictionary-encoded column, computed once per distinct value."""
    array = _one_chunk(column) if isinstance(column, pa.ChunkedArray) else column
    values = np.array([function(value) for value in array.dictionary.to_pylist()], dtype=dtype)
    return values[array.indices.to_numpy(zero_copy_only=False)] if len(values) else np.zeros(len(array), dtype)


def _encoded(table: pa.Table) -> pa.Table:
    for name in ENCODED:
        if name in table.column_names and not pa.types.is_dictionary(table.schema.field(name).type):
            table = table.set_column(table.column_names.index(name), name,
                                     pc.dictionary_encode(table.column(name)))  # fmt: skip
    return table.combine_chunks()


def read_rows(path: Path) -> pa.Table:
    """A file this module wrote, as one table (dictionary columns as written)."""
    return read_table(path).combine_chunks()
