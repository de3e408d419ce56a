"""Stage two: extract the documents of some buckets whose text changed since their last extraction, replace
their named graphs, and remove the graphs and rows of documents that are gone.

Order matters for a killed run: a document's quads are replaced first (one Oxigraph transaction), then its
catalog rows in one DuckDB transaction per bucket. A run killed in between leaves the document marked as
not yet extracted, so the next run extracts it again and replaces the same graphs; nothing is half-written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import duckdb
import pandas as pd

from engramrag.catalog.connection import catalog_writer
from engramrag.catalog.schema import NEEDS_EXTRACTION
from engramrag.extract.base import Extraction, Extractor
from engramrag.extract.registry import extractor_id
from engramrag.ontology.graphs import DocumentGraphs, build_document_graphs, statement_id
from engramrag.ontology.quadstore import QuadStore
from engramrag.progress import Progress
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.document import Document
from engramrag.vault.markdown import parse_document

DERIVED_TABLES = ("chunks", "entities", "statements", "decisions")


@dataclass
class ExtractionSummary:
    extracted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    quads_written: int = 0
    quads_removed: int = 0
    latencies_ms: list[float] = field(default_factory=list)

    def merge(self, other: ExtractionSummary) -> None:
        self.extracted += other.extracted
        self.failed.update(other.failed)
        self.deleted += other.deleted
        self.quads_written += other.quads_written
        self.quads_removed += other.quads_removed
        self.latencies_ms += other.latencies_ms


def pending_counts(home: Home, config: VaultConfig, buckets: list[int], extractor: Extractor) -> int:
    with catalog_writer(home, config.bucket_count) as catalog:
        return catalog.execute(
            f"SELECT count(*) FROM documents WHERE list_contains(?, bucket) AND (gone OR {NEEDS_EXTRACTION})",
            [buckets, extractor_id(extractor)],
        ).fetchone()[0]


def extract_documents(
    home: Home, config: VaultConfig, buckets: list[int], extractor: Extractor, run_id: str | None
) -> ExtractionSummary:
    summary = ExtractionSummary()
    progress = Progress("extract documents", pending_counts(home, config, buckets, extractor), every=10)
    for bucket in buckets:
        with catalog_writer(home, config.bucket_count) as catalog, QuadStore.opened(home.quads_path) as quads:
            summary.merge(_extract_bucket(catalog, quads, config, bucket, extractor, run_id, progress))
    return summary


def _extract_bucket(
    catalog: duckdb.DuckDBPyConnection,
    quads: QuadStore,
    config: VaultConfig,
    bucket: int,
    extractor: Extractor,
    run_id: str | None,
    progress: Progress,
) -> ExtractionSummary:
    summary = ExtractionSummary()
    current = extractor_id(extractor)
    now = datetime.now(UTC)
    gone = catalog.execute("SELECT doc_id, path FROM documents WHERE bucket = ? AND gone", [bucket]).fetchall()
    pending = catalog.execute(
        f"""SELECT doc_id, path, text, mtime_ns FROM documents WHERE bucket = ? AND NOT gone
        AND {NEEDS_EXTRACTION} ORDER BY path""",
        [bucket, current],
    ).fetchall()

    deletions = []
    for doc_id, path in gone:
        removed = quads.count_document(path)
        quads.replace_document(path, None)
        summary.deleted.append(path)
        summary.quads_removed += removed
        deletions.append({"run_id": run_id, "doc_id": doc_id, "path": path, "bucket": bucket,
                          "quads_removed": removed, "deleted_at": now})
        progress.advance()

    rows: dict[str, list[dict]] = {table: [] for table in DERIVED_TABLES}
    done: list[dict] = []
    runs: list[dict] = []
    written: list[tuple[str, DocumentGraphs]] = []
    for doc_id, path, text, _ in pending:
        started = time.perf_counter()
        try:
            document = parse_document(text.encode("utf-8"), path, config)
            extraction = extractor.extract(document)
            graphs = build_document_graphs(document, extraction)
        except Exception as error:  # one document's failure must not stop the bucket
            latency = (time.perf_counter() - started) * 1000
            summary.failed[path] = f"{type(error).__name__}: {error}"
            runs.append(_run_row(run_id, doc_id, path, bucket, "failed", extractor, latency, None, 0, now,
                                 summary.failed[path]))
            progress.advance()
            continue
        latency = (time.perf_counter() - started) * 1000
        written.append((path, graphs))
        summary.extracted.append(path)
        summary.quads_written += graphs.quad_count
        summary.latencies_ms.append(latency)
        _collect_rows(rows, document, extraction, current)
        done.append({"doc_id": doc_id, "body_hash": document.body_hash, "extractor": current, "extracted_at": now,
                     "quads": graphs.quad_count, "statements": len(extraction.statements),
                     "entities": len(extraction.entities)})
        runs.append(_run_row(run_id, doc_id, path, bucket, "ok", extractor, latency, extraction,
                             graphs.quad_count, now, None))
        progress.advance()

    quads.replace_documents(written)
    _write_bucket(catalog, gone, deletions, done, rows, runs)
    return summary


def _write_bucket(catalog, gone, deletions, done, rows, runs) -> None:
    touched_ids = [doc_id for doc_id, _ in gone] + [row["doc_id"] for row in done]
    catalog.execute("BEGIN TRANSACTION")
    try:
        if touched_ids:
            for table in DERIVED_TABLES:
                catalog.execute(f"DELETE FROM {table} WHERE list_contains(?, doc_id)", [touched_ids])
        if gone:
            catalog.execute("DELETE FROM documents WHERE list_contains(?, doc_id)", [[d for d, _ in gone]])
        for table, table_rows in rows.items():
            _append(catalog, table, table_rows)
        if done:
            catalog.register("extracted_now", pd.DataFrame(done))
            catalog.execute(
                """UPDATE documents SET extracted_hash = e.body_hash, extractor = e.extractor,
                extracted_at = e.extracted_at, quads = e.quads, statements = e.statements, entities = e.entities
                FROM extracted_now e WHERE documents.doc_id = e.doc_id"""
            )
            catalog.unregister("extracted_now")
        _append(catalog, "deletions", deletions)
        _append(catalog, "extraction_runs", runs)
        catalog.execute("COMMIT")
    except BaseException:
        catalog.execute("ROLLBACK")
        raise


def _append(catalog: duckdb.DuckDBPyConnection, table: str, rows: list[dict]) -> None:
    if not rows:
        return
    frame = pd.DataFrame(rows)
    catalog.register("incoming_rows", frame)
    catalog.execute(f"INSERT INTO {table} ({', '.join(frame.columns)}) SELECT * FROM incoming_rows")
    catalog.unregister("incoming_rows")


def _collect_rows(rows: dict[str, list[dict]], document: Document, extraction: Extraction, extractor: str) -> None:
    doc_id = document.doc_id
    for chunk in document.chunks:
        rows["chunks"].append({"doc_id": doc_id, "chunk_index": chunk.index, "text": chunk.text,
                               "char_start": chunk.span.start, "char_end": chunk.span.end,
                               "line_start": chunk.span.line_start, "line_end": chunk.span.line_end,
                               "heading_path": " > ".join(chunk.heading_path)})
    keys = set()
    for entity in extraction.entities:
        if entity.key in keys:
            continue
        keys.add(entity.key)
        rows["entities"].append({"doc_id": doc_id, "entity_key": entity.key, "label": entity.label,
                                 "kind": entity.kind, "aliases": list(entity.aliases),
                                 "mentions": len(entity.spans),
                                 "first_line": min((s.line_start for s in entity.spans), default=None)})
    seen = set()
    for statement in extraction.statements:
        sid = statement_id(statement)
        if sid in seen:
            continue
        seen.add(sid)
        span = statement.span
        rows["statements"].append({"doc_id": doc_id, "statement_id": sid, "subject": statement.subject,
                                   "predicate": statement.predicate, "label": statement.label,
                                   "object": statement.obj, "object_is_entity": statement.object_is_entity,
                                   "role": statement.role,
                                   "char_start": span.start if span else None,
                                   "char_end": span.end if span else None,
                                   "line_start": span.line_start if span else None,
                                   "line_end": span.line_end if span else None,
                                   "extractor": extractor})
    decided = set()
    for decision in extraction.decisions:
        if decision.entity_key in decided:
            continue
        decided.add(decision.entity_key)
        rows["decisions"].append({"doc_id": doc_id, "entity_key": decision.entity_key, "title": decision.title,
                                  "decided_on": decision.date, "status": decision.status,
                                  "line_start": decision.span.line_start, "line_end": decision.span.line_end,
                                  "supersedes": list(decision.supersedes),
                                  "superseded_by": list(decision.superseded_by)})


def _run_row(run_id, doc_id, path, bucket, status, extractor, latency, extraction, quad_count, now, error) -> dict:
    return {"run_id": run_id, "doc_id": doc_id, "path": path, "bucket": bucket, "status": status,
            "extractor": extractor.name, "extractor_version": extractor.version,
            "model": getattr(extractor, "model", None), "latency_ms": latency,
            "tokens_in": extraction.tokens_in if extraction else 0,
            "tokens_out": extraction.tokens_out if extraction else 0,
            "quads": quad_count, "error": error, "finished_at": now}
