"""The mention rows the index is built from (``entities`` of the embedded notes, ordered by document and entity key,
with dictionary-encoded strings), kept by a resident builder (``engram watch``) and spliced by note.

A note's rows are a function of its extraction (the digest ``edge_statements.SOURCE_DIGEST``: its extracted text
hash, extractor and extraction time), so a build reads again only the rows of notes whose digest changed, drops those
of notes no longer listed, and keeps the rest as this process last read them. At 100,000 notes the rows are 5.5
million: reading them sorted took 5.7 s of every index build and encoding their strings 2.2 s. A first read in a
process, another catalog file, the consistency pass, or a change to many notes reads every row.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from engramrag.catalog.connection import read_arrow, registered
from engramrag.run_memo import LastKept

COLUMNS = "doc_id, entity_key, label, kind, mentions"
ENCODED = ("doc_id", "entity_key", "label", "kind")
# Above this share of the listed notes changed, every row is read (one sorted read is then as quick as a splice).
WHOLE_READ_SHARE = 0.05


@dataclass(frozen=True)
class EntityRows:
    """The rows as a table (``ENCODED`` columns dictionary-encoded), and how many notes' rows were read this time."""

    table: pa.Table
    notes_read: int
    notes_kept: int

    def frame(self) -> pd.DataFrame:
        """The rows as pandas, the encoded columns as categories (one string per distinct value)."""
        return self.table.to_pandas()


@dataclass(frozen=True)
class _Kept:
    catalog: str
    table: pa.Table
    digests: dict[str, str]  # per listed note (with rows in the table or none), the digest it was read at
    docs: list[str]  # the notes of the table, in its (sorted) order
    starts: np.ndarray  # row of each note's first row, and the row count last


_kept: LastKept[_Kept] = LastKept()  # per catalog file, the last read


def entity_rows(
    catalog: duckdb.DuckDBPyConnection,
    catalog_path: Path,
    listed: str,
    digests: dict[str, str | None],
    whole: bool = False,
) -> EntityRows:
    """The rows of the notes of ``listed`` (a query of doc_id), spliced into this process's last read where the notes'
    ``digests`` allow (``edge_statements.note_digests(catalog, listed).listed``; ``whole``: every row read)."""
    kept = None if whole else _kept.pop(str(catalog_path))
    fresh = sorted(doc for doc, digest in digests.items() if digest is None or kept is None
                   or kept.digests.get(doc) != digest)  # fmt: skip
    if kept is None or len(fresh) + len(set(kept.digests) - set(digests)) > WHOLE_READ_SHARE * max(1, len(digests)):
        table = _encoded(_read(catalog, listed))
        notes_read, notes_kept = len(digests), 0
    else:
        table = _spliced(kept, _encoded(_read_notes(catalog, fresh)), set(digests), fresh)
        notes_read, notes_kept = len(fresh), len(digests) - len(fresh)
    docs, starts = _notes_of(table)
    # Every listed note's digest, those without rows too (a note that names nothing is not read again each build).
    _kept.put(str(catalog_path), _Kept(str(catalog_path), table,
                                       {doc: digest for doc, digest in digests.items() if digest is not None},
                                       docs, starts))  # fmt: skip
    return EntityRows(table, notes_read, notes_kept)


def _read(catalog: duckdb.DuckDBPyConnection, listed: str) -> pa.Table:
    return read_arrow(catalog, f"SELECT {COLUMNS} FROM entities WHERE doc_id IN ({listed}) ORDER BY doc_id, entity_key")


def _read_notes(catalog: duckdb.DuckDBPyConnection, doc_ids: list[str]) -> pa.Table:
    with registered(catalog, "kept_entities_fresh", pd.DataFrame({"doc_id": doc_ids}, dtype=object)):
        return _read(catalog, "SELECT doc_id FROM kept_entities_fresh")


def _encoded(table: pa.Table) -> pa.Table:
    for name in ENCODED:
        table = table.set_column(table.column_names.index(name), name, pc.dictionary_encode(table.column(name)))
    return table.unify_dictionaries().combine_chunks()


def _notes_of(table: pa.Table) -> tuple[list[str], np.ndarray]:
    """The notes of a table ordered by note, and the row each starts at (the row count last)."""
    column = table.column("doc_id").combine_chunks() if table.num_rows else None
    if column is None:
        return [], np.zeros(1, dtype=np.int64)
    codes = column.indices.to_numpy()
    starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
    docs = column.dictionary.take(pa.array(codes[starts])).to_pylist()
    return docs, np.append(starts, len(codes)).astype(np.int64)


def _spliced(kept: _Kept, fresh_rows: pa.Table, listed: set[str], fresh: list[str]) -> pa.Table:
    """The kept table without the rows of notes read again or no longer ``listed``, with ``fresh_rows`` (the rows of
    the ``fresh`` notes, ordered) in their places: ordered by note as one sorted read is."""
    fresh_docs, fresh_starts = _notes_of(fresh_rows)
    fresh_at = dict(zip(fresh_docs, zip(fresh_starts[:-1].tolist(), fresh_starts[1:].tolist(), strict=True),
                        strict=True))  # fmt: skip
    changed = set(fresh)
    events = sorted(
        [(number, 0, doc) for number, doc in enumerate(kept.docs) if doc in changed or doc not in listed]
        + [(bisect_left(kept.docs, doc), 1, doc) for doc in fresh_docs]
    )  # fmt: skip
    pieces, cursor = [], 0
    for number, kind, doc in events:
        if number > cursor:
            pieces.append(kept.table.slice(kept.starts[cursor], kept.starts[number] - kept.starts[cursor]))
            cursor = number
        if kind == 0:
            cursor = number + 1  # this note's kept rows go
        else:
            start, end = fresh_at[doc]
            pieces.append(fresh_rows.slice(start, end - start))
    if cursor < len(kept.docs):
        pieces.append(kept.table.slice(kept.starts[cursor], kept.starts[-1] - kept.starts[cursor]))
    schema = kept.table.schema
    table = pa.concat_tables([piece.cast(schema) for piece in pieces]) if pieces else kept.table.slice(0, 0)
    table = table.unify_dictionaries().combine_chunks()
    for name in ENCODED:
        table = table.set_column(table.column_names.index(name), name, _compacted(table.column(name)))
    return table


def _compacted(chunked: pa.ChunkedArray) -> pa.Array:
    """A dictionary column holding only the values its rows use (a spliced table keeps the values of the rows it
    dropped), in their order in the dictionary."""
    column = chunked.combine_chunks()
    if not isinstance(column, pa.DictionaryArray) or column.null_count:
        return column
    codes = column.indices.to_numpy()
    used = np.bincount(codes, minlength=len(column.dictionary)) > 0
    if used.all():
        return column
    renumbered = np.cumsum(used) - 1
    return pa.DictionaryArray.from_arrays(
        pa.array(renumbered[codes].astype(codes.dtype)), column.dictionary.filter(pa.array(used))
    )
