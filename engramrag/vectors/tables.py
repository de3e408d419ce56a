"""The three LanceDB tables: their Arrow schemas and the stable row ids.

``chunks`` and ``triples`` hold rows of documents (replaced per document). ``entity_labels`` holds one row per
distinct label text of the vault: a label's vector depends on its text alone, and the same label is mentioned by
many notes (55,450 mentions of 7,782 labels in a 1,000-note vault: one row per mention was half of LanceDB)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from engramrag.vault.ids import short_hash

EMBEDDER_KEY = b"engram.embedder"

COMMON = [
    pa.field("doc_id", pa.string(), nullable=False),
    pa.field("bucket", pa.int32(), nullable=False),
    pa.field("row_id", pa.string(), nullable=False),
    pa.field("text", pa.string(), nullable=False),
]

# Table-specific columns. ``search_text`` is what the full-text index sees (see fts_text.py).
EXTRA: dict[str, list[pa.Field]] = {
    "chunks": [
        pa.field("chunk_index", pa.int32(), nullable=False),
        pa.field("line_start", pa.int32()),
        pa.field("line_end", pa.int32()),
        pa.field("search_text", pa.string()),
    ],
    "entity_labels": [],
    "triples": [
        pa.field("statement_id", pa.string(), nullable=False),
        pa.field("subject", pa.string(), nullable=False),
        pa.field("predicate", pa.string(), nullable=False),
        pa.field("object", pa.string(), nullable=False),
    ],
}

# The column that, with doc_id, identifies a row within its document.
NATURAL_KEY = {"chunks": "chunk_index", "triples": "statement_id"}

TABLES: tuple[str, ...] = tuple(EXTRA)
DOCUMENT_TABLES: tuple[str, ...] = tuple(NATURAL_KEY)
LABELS = "entity_labels"
LABEL_COLUMNS = [pa.field("row_id", pa.string(), nullable=False), pa.field("text", pa.string(), nullable=False)]


# Vectors of document rows are stored as float16: they only answer approximate nearest-neighbour searches (cosine
# errors of about 1e-3 against an HNSW index that finds ~90% of the exact top 20), and they were most of LanceDB
# (330,020 triples x 512 float32 = 676 MB of the 10,000-note home's 1.18 GiB). Label vectors stay float32: the
# retrieval index and entity resolution read them back for exact nearest-label lists and similarity thresholds.
VECTOR_TYPES: dict[str, pa.DataType] = {"chunks": pa.float16(), "triples": pa.float16(), LABELS: pa.float32()}


def _columns(table: str) -> list[pa.Field]:
    return LABEL_COLUMNS if table == LABELS else [*COMMON, *EXTRA[table]]


def schema(table: str, dimension: int, embedder: str) -> pa.Schema:
    fields = [*_columns(table), pa.field("vector", pa.list_(VECTOR_TYPES[table], dimension), nullable=False)]
    return pa.schema(fields, metadata={EMBEDDER_KEY: embedder.encode("utf-8")})


def row_id(table: str, row: Mapping[str, Any]) -> str:
    """A content hash: the same row of the same document, with the same text, keeps its id (a label: its text)."""
    if table == LABELS:
        return short_hash(table, str(row["text"]), length=24)
    return short_hash(table, str(row["doc_id"]), str(row[NATURAL_KEY[table]]), str(row["text"]), length=24)


def result_columns(table: str) -> list[str]:
    """What a search returns of a row: everything but the vector and the derived search text."""
    return [f.name for f in _columns(table) if f.name != "search_text"]
