"""Stage two: extract the documents of some buckets whose text changed since their last extraction, replace
their named graphs, and remove the graphs and rows of documents that are gone.

Order matters for a killed run: a document's quads are replaced first (one Oxigraph transaction), then its
catalog rows in one DuckDB transaction per bucket. A run killed in between leaves the document marked as
not yet extracted, so the next run extracts it again and replaces the same graphs; nothing is half-written.
What a model extractor already paid for is not lost with the run: its response cache keeps every answer the
moment it arrives, so the repeated extraction reads those answers instead of asking again.

Extraction itself happens outside the stores' lock (``document_pool``): an extractor that waits on a server
(``concurrency`` above 1) gets one thread pool for the pending documents of all the requested buckets, so a
small bucket does not leave the server idle while the next one is read; a CPU-bound extractor (rules) gets
worker processes, one per core. Writing stays on the calling thread, one bucket at a time in bucket order and
each bucket in path order, exactly as with one worker, while the pool goes on with later buckets.
Every model call a document made, failed ones included, becomes an ``llm_calls`` row in the same bucket
transaction as the document's other rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb
import pandas as pd

from engramrag.catalog.connection import catalog_writer, insert_frame, registered
from engramrag.catalog.schema import NEEDS_EXTRACTION
from engramrag.extract.base import Extraction, Extractor
from engramrag.extract.registry import extractor_id
from engramrag.lifecycle.document_pool import Attempt, DocumentPool, ExtractionConfig
from engramrag.ontology.graphs import EncodedGraphs, statement_id
from engramrag.ontology.quadstore import QuadStore
from engramrag.progress import Progress
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.dates import DocumentDate
from engramrag.vault.document import Document

DERIVED_TABLES = ("chunks", "entities", "statements", "decisions")


@dataclass
class ExtractionSummary:
    extracted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    quads_written: int = 0
    quads_removed: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    model_calls: int = 0  # llm_calls rows written: one per segment asked or answered from the cache
    model_requests: int = 0  # HTTP requests those calls took, retries included
    cache_hits: int = 0
    tokens_in: int = 0  # paid in this run (cache hits excluded)
    tokens_out: int = 0
    unlocated_quotes: int = 0  # model quotes not found verbatim in the text: their items were kept without a span

    def merge(self, other: ExtractionSummary) -> None:
        self.extracted += other.extracted
        self.failed.update(other.failed)
        self.deleted += other.deleted
        self.quads_written += other.quads_written
        self.quads_removed += other.quads_removed
        self.latencies_ms += other.latencies_ms
        self.model_calls += other.model_calls
        self.model_requests += other.model_requests
        self.cache_hits += other.cache_hits
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        self.unlocated_quotes += other.unlocated_quotes

    def count_calls(self, calls: Sequence[Any]) -> None:
        self.model_calls += len(calls)
        self.model_requests += sum(call.requests for call in calls)
        self.cache_hits += sum(1 for call in calls if call.cached)
        tokens_in, tokens_out = paid_tokens(calls)
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out


def pending_counts(home: Home, config: VaultConfig, buckets: list[int], extractor: Extractor) -> int:
    with catalog_writer(home, config.bucket_count) as catalog:
        return catalog.execute(
            f"SELECT count(*) FROM documents WHERE list_contains(?, bucket) AND (gone OR {NEEDS_EXTRACTION})",
            [buckets, extractor_id(extractor)],
        ).fetchone()[0]


def extract_documents(
    home: Home,
    config: VaultConfig,
    buckets: list[int],
    extractor: Extractor,
    run_id: str | None,
    extraction: ExtractionConfig | None = None,
) -> ExtractionSummary:
    summary = ExtractionSummary()
    current = extractor_id(extractor)
    pending = pending_counts(home, config, buckets, extractor)
    progress = Progress("extract documents", pending, every=10)
    with DocumentPool(extractor, config, pending, extraction) as pool:
        if pool.spans_buckets:
            for bucket, rows in _pending_rows(home, config, buckets, current).items():
                pool.submit(bucket, rows)
        for bucket in buckets:
            if not pool.spans_buckets:
                pool.submit(bucket, _pending_rows(home, config, [bucket], current)[bucket])
            attempts = pool.attempts(bucket)
            with catalog_writer(home, config.bucket_count) as catalog, QuadStore.opened(home.quads_path) as quads:
                summary.merge(_extract_bucket(catalog, quads, bucket, extractor, run_id, progress, attempts))
    return summary


def _pending_rows(home: Home, config: VaultConfig, buckets: list[int], current: str) -> dict[int, list[tuple]]:
    """The documents of each bucket that need extracting, in path order, read in one short catalog session."""
    pending: dict[int, list[tuple]] = {bucket: [] for bucket in buckets}
    with catalog_writer(home, config.bucket_count) as catalog:
        rows = catalog.execute(
            f"""SELECT bucket, doc_id, path, text, doc_date, date_source FROM documents
            WHERE list_contains(?, bucket) AND NOT gone
            AND {NEEDS_EXTRACTION} ORDER BY bucket, path""",
            [buckets, current],
        ).fetchall()
    for bucket, doc_id, path, text, doc_date, date_source in rows:
        pending[bucket].append((doc_id, path, text, DocumentDate(doc_date, date_source) if doc_date else None))
    return pending


def _extract_bucket(
    catalog: duckdb.DuckDBPyConnection,
    quads: QuadStore,
    bucket: int,
    extractor: Extractor,
    run_id: str | None,
    progress: Progress,
    attempts: Iterable[Attempt],
) -> ExtractionSummary:
    summary = ExtractionSummary()
    current = extractor_id(extractor)
    now = datetime.now(UTC)
    gone = catalog.execute("SELECT doc_id, path FROM documents WHERE bucket = ? AND gone", [bucket]).fetchall()
    # A document deleted while it was being extracted (a sync in between) must not get rows or graphs back.
    live_rows = catalog.execute("SELECT doc_id FROM documents WHERE bucket = ? AND NOT gone", [bucket]).fetchall()
    live = {doc_id for (doc_id,) in live_rows}

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
    calls: list[dict] = []
    written: list[tuple[str, EncodedGraphs]] = []
    for attempt in attempts:
        if attempt.doc_id not in live:
            progress.advance()
            continue
        graphs, error = attempt.graphs, attempt.error
        latency = attempt.seconds * 1000
        summary.count_calls(attempt.calls)
        calls += _call_rows(run_id, attempt.doc_id, bucket, attempt.calls)
        if error is not None:
            summary.failed[attempt.path] = f"{type(error).__name__}: {error}"
            runs.append(_run_row(run_id, attempt.doc_id, attempt.path, bucket, "failed", extractor, latency,
                                 paid_tokens(attempt.calls), 0, now, summary.failed[attempt.path], 0))
            progress.advance()
            continue
        document, extraction = attempt.document, attempt.extraction
        written.append((attempt.path, graphs))
        summary.extracted.append(attempt.path)
        summary.quads_written += graphs.quad_count
        summary.latencies_ms.append(latency)
        _collect_rows(rows, document, extraction, current)
        done.append({"doc_id": attempt.doc_id, "body_hash": document.body_hash, "extractor": current,
                     "extracted_at": now, "quads": graphs.quad_count, "statements": len(extraction.statements),
                     "entities": len(extraction.entities)})
        tokens = paid_tokens(attempt.calls) if attempt.calls else (extraction.tokens_in, extraction.tokens_out)
        summary.unlocated_quotes += extraction.unlocated_quotes
        runs.append(_run_row(run_id, attempt.doc_id, attempt.path, bucket, "ok", extractor, latency, tokens,
                             graphs.quad_count, now, None, extraction.unlocated_quotes))
        progress.advance()

    quads.replace_documents(written)
    _write_bucket(catalog, gone, deletions, done, rows, runs, calls)
    return summary


def paid_tokens(calls: Sequence[Any]) -> tuple[int, int]:
    """Tokens in and out of the calls that were paid for now; a cache hit repeats an answer paid earlier."""
    paid = [call for call in calls if not call.cached]
    return sum(call.tokens_in for call in paid), sum(call.tokens_out for call in paid)


def _call_rows(run_id: str | None, doc_id: str, bucket: int, calls: Sequence[Any]) -> list[dict]:
    return [{"run_id": run_id, "doc_id": doc_id, "path": call.path, "bucket": bucket, "segment": call.segment,
             "segments": call.segments, "model": call.model, "prompt_version": call.prompt_version,
             "tokens_in": call.tokens_in, "tokens_out": call.tokens_out, "requests": call.requests,
             "cached": bool(call.cached), "status": call.status, "error": call.error,
             "latency_ms": float(call.latency_ms), "called_at": call.called_at}
            for call in calls]


def _write_bucket(catalog, gone, deletions, done, rows, runs, calls) -> None:
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
            with registered(catalog, "extracted_now", pd.DataFrame(done)):
                catalog.execute(
                    """UPDATE documents SET extracted_hash = e.body_hash, extractor = e.extractor,
                    extracted_at = e.extracted_at, quads = e.quads, statements = e.statements, entities = e.entities
                    FROM extracted_now e WHERE documents.doc_id = e.doc_id"""
                )
        _append(catalog, "deletions", deletions)
        _append(catalog, "extraction_runs", runs)
        _append(catalog, "llm_calls", calls)
        catalog.execute("COMMIT")
    except BaseException:
        catalog.execute("ROLLBACK")
        raise


def _append(catalog: duckdb.DuckDBPyConnection, table: str, rows: list[dict]) -> None:
    if not rows:
        return
    insert_frame(catalog, table, pd.DataFrame(rows))


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
                                 "first_line": min((s.line_start for s in entity.spans), default=None),
                                 "core_kind": extraction.core_kind_of(entity.kind)})
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
                                  "line_start": decision.span.line_start if decision.span else None,
                                  "line_end": decision.span.line_end if decision.span else None,
                                  "supersedes": list(decision.supersedes),
                                  "superseded_by": list(decision.superseded_by)})


def _run_row(run_id, doc_id, path, bucket, status, extractor, latency, tokens, quad_count, now, error,
             unlocated) -> dict:
    return {"run_id": run_id, "doc_id": doc_id, "path": path, "bucket": bucket, "status": status,
            "extractor": extractor.name, "extractor_version": extractor.version,
            "model": getattr(extractor, "model", None), "latency_ms": latency,
            "tokens_in": tokens[0], "tokens_out": tokens[1],
            "quads": quad_count, "error": error, "finished_at": now, "unlocated_quotes": unlocated}
