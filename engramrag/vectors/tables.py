"""The three LanceDB tables: their Arrow schemas and the stable row ids."""

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
    "entity_labels": [
        pa.field("entity_key", pa.string(), nullable=False),
        pa.field("label", pa.string(), nullable=False),
        pa.field("kind", pa.string()),
    ],
    "triples": [
        pa.field("statement_id", pa.string(), nullable=False),
        pa.field("subject", pa.string(), nullable=False),
        pa.field("predicate", pa.string(), nullable=False),
        pa.field("object", pa.string(), nullable=False),
    ],
}

# The column that, with doc_id, identifies a row within its document.
NATURAL_KEY = {"chunks": "chunk_index", "entity_labels": "entity_key", "triples": "statement_id"}

TABLES: tuple[str, ...] = tuple(EXTRA)


def schema(table: str, dimension: int, embedder: str) -> pa.Schema:
    fields = [*COMMON, *EXTRA[table], pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False)]
    return pa.schema(fields, metadata={EMBEDDER_KEY: embedder.encode("utf-8")})


def row_id(table: str, row: Mapping[str, Any]) -> str:
    """A content hash: the same row of the same document, with the same text, keeps its id."""
    return short_hash(table, str(row["doc_id"]), str(row[NATURAL_KEY[table]]), str(row["text"]), length=24)


def result_columns(table: str) -> list[str]:
    """What a search returns of a row: everything but the vector and the derived search text."""
    return [f.name for f in (*COMMON, *EXTRA[table]) if f.name != "search_text"]
