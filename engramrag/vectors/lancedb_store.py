"""Vectors of chunks, entity labels and triples in LanceDB, with a BM25 index over chunks.

Chunk and triple rows are replaced per document: ``replace_documents`` deletes the given documents' rows and adds
their new ones (a deleted document, given with no rows, is only deleted). These are two LanceDB commits: a reader
sees a document's old rows, its new rows, or, between the two commits, none of them, never a mix; a run killed in
between leaves the document without rows until the next run re-embeds it (the catalog records a document as
embedded only after its rows are written). Bucket runs call it once per table with their changed and deleted
documents.
Entity labels are one row per distinct label text (``add_labels``, ``drop_labels``): the embedding step keeps
them equal to the labels of the embedded documents.

Rows written after the full-text index was built are still searched (LanceDB scans unindexed data),
only more slowly; :meth:`VectorStore.optimize` folds them into the indexes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, HnswSq

from engramrag.embed.base import Embedder
from engramrag.store import Home
from engramrag.vectors import label_cache
from engramrag.vectors.fts_text import fts_text
from engramrag.vectors.label_cache import CachedLabels
from engramrag.vectors.tables import DOCUMENT_TABLES, EMBEDDER_KEY, LABELS, TABLES, result_columns, row_id, schema
from engramrag.vectors.upkeep import tidy, tidy_reason

FTS_COLUMN = "search_text"
# See fts_text.py for why: LanceDB's simple tokenizer over pre-bigrammed CJK runs.
FTS_CONFIG = FTS(
    base_tokenizer="simple",
    language="English",
    stem=True,
    remove_stop_words=True,
    lower_case=True,
    ascii_folding=True,
    with_position=False,
)


# Below this many rows a flat scan is fast enough and exact. IVF_HNSW_SQ rather than IVF_PQ: on the
# 17,204 MuSiQue replay triples it answered in ~7 ms with 90-95% of the exact top 20 (IVF_PQ: ~8 ms,
# 50-80%), against 25-70 ms for the flat scan.
ANN_MIN_ROWS = 10_000
ANN_ROWS_PER_PARTITION = 100_000
# The HNSW graph's search width when it is built (LanceDB's default is 300) and when it is searched. On the
# 330,021 triples of the 10,000-note home (`python -m eval.vector_index_choice --query-ef 0 80`, 100 queries, two
# builds each): built with 300, 107-119 s and 88-92% of the exact top 20; built with 100 and searched with 80,
# 44-48 s and 91%, at the same latency; built with 50, 34 s and 85-86%.
ANN_EF_CONSTRUCTION = 100
ANN_QUERY_EF = 80


def ann_config(rows: int) -> HnswSq:
    return HnswSq(
        distance_type="cosine", num_partitions=max(1, rows // ANN_ROWS_PER_PARTITION),
        ef_construction=ANN_EF_CONSTRUCTION,
    )  # fmt: skip


class VectorStoreMismatch(RuntimeError):
    """The tables were written by another embedder (or with another dimension) than the one in use."""


@dataclass(frozen=True)
class ReplaceResult:
    table: str
    documents: int
    inserted: int
    updated: int
    deleted: int


class VectorStore:
    """The three tables of one home. All vectors in them come from one embedder, recorded in their schema."""

    def __init__(self, path: str | os.PathLike[str], dimension: int, embedder: str) -> None:
        self.path = Path(path)
        self.dimension = dimension
        self.embedder = embedder
        self._db = lancedb.connect(str(self.path))
        self._tables: dict[str, Any] = {}
        self._fts_ready = False

    @classmethod
    def for_home(cls, home: Home, embedder: Embedder) -> VectorStore:
        return cls(home.lancedb_path, embedder.dimension, embedder.name)

    def table(self, name: str) -> Any:
        """The LanceDB table, created empty on first use; refuses one written by another embedder."""
        if name not in TABLES:
            raise ValueError(f"unknown vector table {name!r}; tables: {', '.join(TABLES)}")
        if name not in self._tables:
            if name in self._existing():
                table = self._db.open_table(name)
                if name == LABELS and "doc_id" in table.schema.names:
                    # One row per mention (before issue 16): derived data, so dropped; the embedding step
                    # embeds the labels again, once each.
                    self._db.drop_table(name)
                    table = None
            else:
                table = None
            if table is None:
                table = self._db.create_table(name, schema=schema(name, self.dimension, self.embedder), exist_ok=True)
            self._check(name, table)
            self._tables[name] = table
        return self._tables[name]

    def replace_documents(self, table: str, doc_ids: Iterable[str], rows: Sequence[Mapping[str, Any]]) -> ReplaceResult:
        """Make ``rows`` the whole content of ``table`` for the documents ``doc_ids``.

        Each row has ``doc_id``, ``bucket``, ``text``, ``vector`` and the table's own columns; ``row_id``
        is computed when absent. A document in ``doc_ids`` without rows loses all its rows.
        """
        if table not in DOCUMENT_TABLES:
            raise ValueError(f"{table!r} is not a table of document rows ({', '.join(DOCUMENT_TABLES)})")
        ids = list(dict.fromkeys(doc_ids))
        stray = sorted({str(row["doc_id"]) for row in rows} - set(ids))
        if stray:
            raise ValueError(f"rows of documents not listed in doc_ids: {stray[:5]}")
        if not ids:
            return ReplaceResult(table, 0, 0, 0, 0)
        target = self.table(table)
        where = _in_list("doc_id", ids)
        if not rows:
            before = target.count_rows(where)
            target.delete(where)
            return ReplaceResult(table, len(ids), 0, 0, before)
        data = self._arrow_rows(table, rows)
        # The documents' rows deleted, then the new ones added: a merge_insert on row_id that also deleted the
        # documents' other rows joined the whole table, vectors included (0.15-0.35 s a table at 10,000 notes,
        # growing with the table; this 0.03-0.1 s).
        stored = target.search().where(where).select(["row_id"]).limit(None).to_arrow()
        before = set(stored.column("row_id").to_pylist())
        target.delete(where)
        target.add(data)
        kept = len(before & set(data.column("row_id").to_pylist()))
        return ReplaceResult(table, len(ids), data.num_rows - kept, kept, len(before) - kept)

    def search_vector(
        self, table: str, vector: Sequence[float] | np.ndarray, k: int = 10, where: str | None = None
    ) -> list[dict[str, Any]]:
        """The ``k`` rows nearest to ``vector`` by cosine; each with ``score`` = cosine similarity."""
        query_vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query_vector.shape[0] != self.dimension:
            raise ValueError(f"query vector has {query_vector.shape[0]} dimensions, the store {self.dimension}")
        query = (
            self.table(table).search(query_vector, vector_column_name="vector").distance_type("cosine").limit(k)
            .ef(ANN_QUERY_EF)
        )  # fmt: skip
        if where:
            query = query.where(where, prefilter=True)
        # Selecting _distance explicitly: leaving it out logs a deprecation warning per query (lancedb 0.40).
        hits = query.select([*result_columns(table), "_distance"]).to_list()
        for hit in hits:
            hit["score"] = 1.0 - float(hit.pop("_distance"))
        return hits

    def create_fts_index(self) -> None:
        """(Re)build LanceDB's native BM25 index over the chunks."""
        self.table("chunks").create_index(FTS_COLUMN, config=FTS_CONFIG, replace=True)
        self._fts_ready = True

    def has_fts_index(self) -> bool:
        return any(
            index.index_type == "FTS" and list(index.columns) == [FTS_COLUMN]
            for index in self.table("chunks").list_indices()
        )

    def search_text(self, query: str, k: int = 10, where: str | None = None) -> list[dict[str, Any]]:
        """BM25 over chunk text (English and Korean); each hit with ``score``, the BM25 score."""
        terms = fts_text(query)
        if not terms:
            return []
        # Without an index, a search naming its column silently scans with LanceDB's default tokenizer
        # (no stemming, no stop words): refuse instead of returning differently scored results.
        self._fts_ready = self._fts_ready or self.has_fts_index()
        if not self._fts_ready and self.count("chunks") == 0:
            return []
        if not self._fts_ready:
            raise RuntimeError(f"{self.path}: the chunks have no full-text index yet; build it with create_fts_index()")
        search = self.table("chunks").search(terms, query_type="fts", fts_columns=FTS_COLUMN).limit(k)
        if where:
            search = search.where(where, prefilter=True)
        hits = search.select([*result_columns("chunks"), "_score"]).to_list()
        for hit in hits:
            hit["score"] = float(hit.pop("_score"))
        return hits

    def refresh_indexes(self, force: bool = False) -> dict[str, str]:
        """After bucket runs: build the BM25 index the first time, give tables of at least ``ANN_MIN_ROWS`` rows
        an approximate vector index, and tidy the tables that need it (``upkeep.tidy_reason``: compact the edits'
        small fragments, fold new rows into the indexes without rewriting indexed data). ``force`` (the
        consistency pass): LanceDB's full ``optimize`` of every table. Returns, per optimised table, why.

        Optimising after every edit cost minutes at 10,000 notes (merging the delta into the HNSW and BM25
        indexes), while rows not yet in an index are still found, by a scan of just those rows."""
        optimised = {}
        for name in TABLES:
            table = self.table(name)
            if force:
                table.optimize()
                optimised[name] = "requested"
            elif reason := tidy_reason(table):
                tidy(table)
                optimised[name] = reason
        if self.count("chunks") and not self.has_fts_index():
            self.create_fts_index()
        for name in ("chunks", "triples"):
            table = self.table(name)
            rows = table.count_rows()
            if rows >= ANN_MIN_ROWS and not any(list(index.columns) == ["vector"] for index in table.list_indices()):
                table.create_index("vector", config=ann_config(rows))
        return optimised

    def label_matrix(self) -> tuple[list[str], np.ndarray]:
        """The stored labels and their vectors as the rows of one float32 matrix (read-only), in the table's order.
        Read once per version of the table (``label_cache``: this process's own writes keep it current)."""
        version = self.label_version()
        found = label_cache.cached(self.path, version)
        if found is None:
            table = self.table(LABELS).to_arrow().select(["text", "vector"])
            found = CachedLabels.of(version, table.column("text").to_pylist(), self._vectors_of(table))
            label_cache.remember(self.path, found)
        return list(found.texts), found.matrix

    def label_version(self) -> label_cache.Version:
        """The labels table's version number and time (what a cached matrix is true of)."""
        labels = self.table(LABELS)
        version = labels.version
        return version, next((str(v["timestamp"]) for v in labels.list_versions() if v["version"] == version), "")

    def _vectors_of(self, table: pa.Table) -> np.ndarray:
        """A table's vector column as float32 rows, as a read gives them (a float16 column widened)."""
        if not table.num_rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        values = table.column("vector").combine_chunks().flatten().to_numpy()
        return values.reshape(-1, self.dimension).astype(np.float32, copy=False)

    def stored_labels(self) -> set[str]:
        known = self._known_labels()
        if known is not None:
            return set(known.texts)
        return set(self.table(LABELS).to_arrow().column("text").to_pylist())

    def add_labels(self, labels: Sequence[str], vectors: Sequence[Sequence[float]] | np.ndarray) -> int:
        """Store these labels' vectors; a label already stored keeps its row. Returns how many were added."""
        if not len(labels):
            return 0
        rows = [{"text": label, "vector": vector} for label, vector in zip(labels, vectors, strict=True)]
        data = self._arrow_rows(LABELS, rows)
        before = self._known_labels()
        if before is None:
            result = self.table(LABELS).merge_insert("row_id").when_not_matched_insert_all().execute(data)
            return int(result.num_inserted_rows)
        # The stored texts known: only the new rows are added (a merge_insert joined the whole table to find them).
        known = set(before.texts)
        new = [row for row, text in enumerate(data.column("text").to_pylist()) if text not in known]
        inserted = len(new)
        if new:
            self.table(LABELS).add(data.take(new))
            after = self._written_version(before, inserted)
            texts = data.column("text").take(new).to_pylist()
            label_cache.remember(self.path, before.appended(after, texts, self._vectors_of(data.take(new)))
                                 if after is not None else None)  # fmt: skip
        return inserted

    def drop_labels(self, labels: Iterable[str]) -> int:
        """Remove the rows of labels no embedded document mentions any more."""
        labels = set(labels)
        ids = sorted(row_id(LABELS, {"text": label}) for label in labels)
        if not ids:
            return 0
        table = self.table(LABELS)
        before_cache = self._known_labels()
        before = table.count_rows()
        table.delete(_in_list("row_id", ids))
        dropped = before - table.count_rows()
        if before_cache is not None:
            after = self._written_version(before_cache, dropped)
            fits = after is not None and len(labels & set(before_cache.texts)) == dropped
            label_cache.remember(self.path, before_cache.without(after, labels) if fits else None)
        return dropped

    def _known_labels(self) -> CachedLabels | None:
        """The label matrix this process holds of the table as it is now, if any: a write then updates it."""
        return label_cache.cached(self.path, self.label_version())

    def _written_version(self, before: CachedLabels, changed: int) -> label_cache.Version | None:
        """The table's version after this process's write on ``before``'s, which ``changed`` that many rows in one
        commit: None when it is not the next one (another writer's commit came between), or when a write that
        changed nothing left another version than ``before``'s."""
        after = self.label_version()
        expected = before.version[0] + 1 if changed else before.version[0]
        return after if after[0] == expected and (changed or after == before.version) else None

    def count(self, table: str, where: str | None = None) -> int:
        return self.table(table).count_rows(where)

    def optimize(self) -> None:
        """Compact the tables and bring their indexes up to date (after many bucket runs)."""
        for name in TABLES:
            self.table(name).optimize()

    def reset(self) -> None:
        """Drop all three tables, e.g. before re-embedding everything with another embedder."""
        existing = self._existing()
        for name in TABLES:
            if name in existing:
                self._db.drop_table(name)
        self._tables.clear()
        self._fts_ready = False

    def _existing(self) -> set[str]:
        # list_tables() rather than table_names(), which pages at 10 names by default.
        return set(self._db.list_tables().tables)

    def _check(self, name: str, table: Any) -> None:
        recorded = (table.schema.metadata or {}).get(EMBEDDER_KEY, b"").decode("utf-8")
        dimension = table.schema.field("vector").type.list_size
        if recorded != self.embedder or dimension != self.dimension:
            raise VectorStoreMismatch(
                f"{self.path}: table {name!r} holds {dimension}-dimensional vectors of embedder {recorded!r}, "
                f"but this run embeds with {self.embedder!r} ({self.dimension} dimensions). Re-embed everything "
                "(VectorStore.reset() and a full build) or go back to the embedder the table was built with."
            )

    def _arrow_rows(self, table: str, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
        # The table's own schema: one created before VECTOR_TYPES keeps its float32 vectors until rebuilt.
        target = self.table(table).schema
        vectors = np.asarray([row["vector"] for row in rows], dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
            raise ValueError(f"{table}: vectors must have {self.dimension} dimensions, got shape {vectors.shape}")
        ids = [row.get("row_id") or row_id(table, row) for row in rows]
        if len(set(ids)) != len(ids):
            duplicate = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"{table}: two rows share row_id {duplicate!r} (same document, key and text)")
        columns: dict[str, Any] = {}
        for field in target:
            if field.name == "vector":
                stored = field.type.value_type
                values = pa.array(vectors.reshape(-1).astype(stored.to_pandas_dtype(), copy=False), stored)
                columns["vector"] = pa.FixedSizeListArray.from_arrays(values, self.dimension)
            elif field.name == "row_id":
                columns["row_id"] = pa.array(ids, pa.string())
            elif field.name == FTS_COLUMN:
                columns[FTS_COLUMN] = pa.array([fts_text(str(row["text"])) for row in rows], pa.string())
            else:
                columns[field.name] = pa.array([row.get(field.name) for row in rows], field.type)
        return pa.Table.from_pydict(columns, schema=target)


def _in_list(column: str, values: Sequence[str]) -> str:
    quoted = ", ".join("'" + str(value).replace("'", "''") + "'" for value in values)
    return f"{column} IN ({quoted})"
