"""Stage three: embed the chunks, entity labels and triples of the documents of some buckets into LanceDB.

A document is (re-)embedded when its extraction or the embedder changed since it was last embedded
(``embedded_documents`` in the catalog records both); the rows of a document that is gone are removed. Entity
labels are embedded once per distinct text: after the documents, the labels table is brought in line with the
labels the embedded documents mention (new ones embedded, unused ones dropped).
A document whose last extraction failed keeps the vectors of its last good extraction, as it keeps its
graphs. LanceDB is written first and the catalog record second, so a run killed in between re-embeds
those documents next time and replaces the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb
import pandas as pd

from engramrag.catalog.connection import catalog_writer, registered
from engramrag.catalog.live_labels import live_labels
from engramrag.embed.base import Embedder
from engramrag.progress import Progress
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vectors.lancedb_store import VectorStore
from engramrag.vectors.tables import DOCUMENT_TABLES, LABELS, TABLES

# Statements whose wording says nothing about the world beyond the document's own layout, and links between notes
# (the retrieval graph keeps them as edges; as vectors they were 63% of the triples at 10,000 notes).
UNINFORMATIVE_PREDICATES = ("has_section", "has_tag", "has_task", "has_alias", "links_to")
LABEL_BATCH = 2_000  # labels embedded and written per step of the labels' progress


@dataclass
class EmbeddingSummary:
    embedded: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    texts: int = 0
    labels_added: int = 0
    labels_dropped: int = 0


def embed_documents(
    home: Home, config: VaultConfig, buckets: Sequence[int], embedder: Embedder, full: bool = False
) -> EmbeddingSummary:
    """Bring the vectors of ``buckets`` in line with their current extractions. ``full`` re-embeds everything."""
    summary = EmbeddingSummary()
    store = VectorStore.for_home(home, embedder)
    plans = []
    with catalog_writer(home, config.bucket_count) as catalog:
        for bucket in buckets:
            plans.append((bucket, *_plan_bucket(catalog, bucket, embedder.name, full)))
    progress = Progress("embed documents", sum(len(todo) for _, todo, _ in plans), every=50)
    for bucket, todo, gone in plans:
        if not todo and not gone:
            continue
        with catalog_writer(home, config.bucket_count) as catalog:
            rows = _rows(catalog, todo)
            labels = _label_counts(catalog, todo)
        texts = [row["text"] for table in DOCUMENT_TABLES for row in rows[table]]
        vectors = embedder.embed(_embedding_texts(rows)) if texts else []
        offset = 0
        for table in DOCUMENT_TABLES:
            for row in rows[table]:
                row["vector"] = vectors[offset]
                offset += 1
            store.replace_documents(table, [*todo, *gone], rows[table])
            summary.rows[table] += len(rows[table])
        summary.rows[LABELS] += sum(labels.values())
        with catalog_writer(home, config.bucket_count) as catalog:
            _record(catalog, bucket, todo, gone, rows, labels, embedder.name)
        summary.embedded += list(todo)
        summary.removed += gone
        summary.texts += len(texts)
        progress.advance(len(todo))
    if summary.embedded or summary.removed or not store.count(LABELS):
        _sync_labels(home, config, store, embedder, summary)
    return summary


def _sync_labels(
    home: Home, config: VaultConfig, store: VectorStore, embedder: Embedder, summary: EmbeddingSummary
) -> None:
    """Make the labels table hold exactly the labels of the embedded documents, each embedded once."""
    with catalog_writer(home, config.bucket_count) as catalog:
        if _embedded_are_live(catalog):  # as after every embedding that did not fail: the build's one read of them
            live = set(live_labels(catalog, home.catalog_path))
        else:
            live = {label for (label,) in catalog.execute(
                "SELECT DISTINCT e.label FROM entities e JOIN embedded_documents USING (doc_id)"
            ).fetchall()}  # fmt: skip
    stored = store.stored_labels()
    missing = sorted(live - stored)
    progress = Progress("embed entity labels", len(missing), every=LABEL_BATCH)
    for start in range(0, len(missing), LABEL_BATCH):
        batch = missing[start : start + LABEL_BATCH]
        summary.labels_added += store.add_labels(batch, embedder.embed(batch))
        summary.texts += len(batch)
        progress.advance(len(batch))
    summary.labels_dropped = store.drop_labels(stored - live)


def _embedded_are_live(catalog: duckdb.DuckDBPyConnection) -> bool:
    """Whether the embedded documents are the live ones, each at its current extraction (then the labels they
    mention are the live notes' labels)."""
    return bool(catalog.execute(
        """
        SELECT count(*) = (SELECT count(*) FROM embedded_documents)
               AND count(*) = (SELECT count(*) FROM documents WHERE NOT gone)
        FROM documents d JOIN embedded_documents e USING (doc_id)
        WHERE NOT d.gone AND e.extraction = d.extracted_hash || '|' || d.extractor
        """
    ).fetchone()[0])  # fmt: skip


def _plan_bucket(
    catalog: duckdb.DuckDBPyConnection, bucket: int, embedder: str, full: bool
) -> tuple[dict[str, str], list[str]]:
    """(documents to embed -> their extraction id, documents whose rows must go)."""
    live = catalog.execute(
        """
        SELECT d.doc_id, d.extracted_hash || '|' || d.extractor AS extraction, e.extraction AS embedded, e.embedder
        FROM documents d LEFT JOIN embedded_documents e USING (doc_id)
        WHERE d.bucket = ? AND NOT d.gone AND d.extracted_hash IS NOT NULL
        """,
        [bucket],
    ).fetchall()
    todo = {
        doc_id: extraction
        for doc_id, extraction, embedded, used in live
        if full or embedded != extraction or used != embedder
    }
    gone = [
        doc_id
        for (doc_id,) in catalog.execute(
            """
            SELECT e.doc_id FROM embedded_documents e LEFT JOIN documents d USING (doc_id)
            WHERE e.bucket = ? AND (d.doc_id IS NULL OR d.gone OR d.extracted_hash IS NULL)
            """,
            [bucket],
        ).fetchall()
    ]
    return todo, gone


def _rows(catalog: duckdb.DuckDBPyConnection, todo: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    if not todo:
        return {table: [] for table in DOCUMENT_TABLES}
    with registered(catalog, "todo_docs", pd.DataFrame({"doc_id": list(todo)})):
        chunks = catalog.execute(
            """
            SELECT c.doc_id, d.bucket, c.chunk_index, c.text, c.line_start, c.line_end, d.title, c.heading_path
            FROM chunks c JOIN documents d USING (doc_id) JOIN todo_docs USING (doc_id)
            ORDER BY c.doc_id, c.chunk_index
            """
        ).df()
        triples = catalog.execute(
            f"""
            SELECT s.doc_id, d.bucket, s.statement_id, subj.label AS subject,
                   coalesce(s.label, s.predicate) AS predicate, coalesce(obj.label, s.object) AS object
            FROM statements s JOIN documents d USING (doc_id) JOIN todo_docs USING (doc_id)
            JOIN entities subj ON subj.doc_id = s.doc_id AND subj.entity_key = s.subject
            LEFT JOIN entities obj ON s.object_is_entity AND obj.doc_id = s.doc_id AND obj.entity_key = s.object
            WHERE s.role = 'assertion' AND s.predicate NOT IN {UNINFORMATIVE_PREDICATES!r}
            ORDER BY s.doc_id, s.statement_id
            """
        ).df()
    triples["text"] = triples["subject"] + " " + triples["predicate"] + " " + triples["object"]
    chunk_rows = chunks.drop(columns=["title", "heading_path"]).to_dict("records")
    for row, title, heading in zip(chunk_rows, chunks["title"], chunks["heading_path"], strict=True):
        row["context"] = " / ".join(part for part in (title, heading) if part)
    return {"chunks": chunk_rows, "triples": triples.to_dict("records")}


def _label_counts(catalog: duckdb.DuckDBPyConnection, todo: dict[str, str]) -> dict[str, int]:
    """How many entity labels each document mentions (recorded in ``embedded_documents``)."""
    if not todo:
        return {}
    return dict(
        catalog.execute(
            "SELECT doc_id, count(*) FROM entities WHERE list_contains(?, doc_id) GROUP BY doc_id", [list(todo)]
        ).fetchall()
    )


def _embedding_texts(rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    """What each row's vector is computed from: chunks carry their document title and heading path."""
    texts: list[str] = []
    for table in DOCUMENT_TABLES:
        for row in rows[table]:
            context = row.pop("context", "") if table == "chunks" else ""
            texts.append(f"{context}\n{row['text']}" if context and context not in row["text"] else row["text"])
    return texts


def _record(
    catalog: duckdb.DuckDBPyConnection,
    bucket: int,
    todo: dict[str, str],
    gone: list[str],
    rows: dict[str, list[dict[str, Any]]],
    labels: dict[str, int],
    embedder: str,
) -> None:
    counts = {doc_id: {**dict.fromkeys(TABLES, 0), LABELS: labels.get(doc_id, 0)} for doc_id in todo}
    for table in DOCUMENT_TABLES:
        for row in rows[table]:
            counts[row["doc_id"]][table] += 1
    now = datetime.now(UTC).replace(tzinfo=None)
    catalog.execute("BEGIN")
    ids = [*todo, *gone]
    catalog.execute("DELETE FROM embedded_documents WHERE list_contains(?, doc_id)", [ids])
    if todo:
        catalog.executemany(
            "INSERT INTO embedded_documents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [doc_id, bucket, extraction, embedder, *(counts[doc_id][t] for t in TABLES), now]
                for doc_id, extraction in todo.items()
            ],
        )
    catalog.execute("COMMIT")
