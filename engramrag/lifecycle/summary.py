"""Stage three: record what a build did, and report the state of a home."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import duckdb

from engramrag.catalog.connection import catalog_reader, catalog_writer
from engramrag.store import Home
from engramrag.vault.config import VaultConfig

# Quads: what the extraction wrote for the live documents, plus what the review steps wrote into their graphs
# (accepted supersessions, later values): every quad of the store, the count `engram export` writes.
TOTALS = """SELECT
    (SELECT count(*) FROM documents WHERE NOT gone),
    (SELECT coalesce(sum(quads), 0) FROM documents WHERE NOT gone)
        + (SELECT count(*) FROM supersession_quads) + (SELECT count(*) FROM timeline_quads),
    (SELECT coalesce(sum(statements), 0) FROM documents WHERE NOT gone),
    (SELECT count(*) FROM rejected_documents)"""


def record_build(home: Home, config: VaultConfig, run_id: str, buckets: list[int] | None) -> dict[str, Any]:
    """Write the ``builds`` row of a run from what its stages recorded, and return it."""
    with catalog_writer(home, config.bucket_count) as catalog:
        documents, quads, statements, rejected = catalog.execute(TOTALS).fetchone()
        extracted, failed, unchanged, deleted = _run_counts(catalog, run_id)
        row = {
            "run_id": run_id,
            "finished_at": datetime.now(UTC),
            "buckets": ",".join(str(b) for b in buckets) if buckets is not None else "all",
            "documents": documents,
            "extracted": extracted,
            "failed": failed,
            "unchanged": unchanged,
            "deleted": deleted,
            "rejected": rejected,
            "quads": quads,
            "statements": statements,
        }
        catalog.execute(
            f"INSERT OR REPLACE INTO builds ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
            list(row.values()),
        )
    return row


def _run_counts(catalog: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, int, int, int]:
    """What one run did to the live documents: extracted, failed, unchanged (neither), and the deleted ones."""
    extracted, failed = catalog.execute(
        "SELECT count(*) FILTER (status = 'ok'), count(*) FILTER (status = 'failed') "
        "FROM extraction_runs WHERE run_id = ?",
        [run_id],
    ).fetchone()
    deleted = catalog.execute("SELECT count(*) FROM deletions WHERE run_id = ?", [run_id]).fetchone()[0]
    unchanged = catalog.execute(  # live documents the run neither extracted nor failed to extract
        "SELECT count(*) FROM documents WHERE NOT gone AND doc_id NOT IN "
        "(SELECT doc_id FROM extraction_runs WHERE run_id = ?)",
        [run_id],
    ).fetchone()[0]
    return extracted, failed, unchanged, deleted


def read_status(home: Home, run_id: str | None = None) -> dict[str, Any]:
    """The figures ``engram status`` prints: the stores' totals, and the last build with the documents that are
    failing now. With ``run_id``, the build is that run and the failed documents are the ones it failed: what
    `engram build` reports of itself, whichever build of the home finished after it."""
    with catalog_reader(home) as catalog:
        if catalog is None:
            return {"home": str(home.root), "documents": 0, "quads": 0, "statements": 0, "rejected": 0,
                    "failed": 0, "last_build": None, "rejected_documents": [], "failed_documents": []}
        documents, quads, statements, rejected = catalog.execute(TOTALS).fetchone()
        last = catalog.execute(
            "SELECT run_id, finished_at, extracted, unchanged, deleted, rejected, failed FROM builds "
            + ("WHERE run_id = ?" if run_id is not None else "ORDER BY finished_at DESC LIMIT 1"),
            [run_id] if run_id is not None else [],
        ).fetchone()
        if last is None and run_id is not None:  # the run stopped before its record: what its stages recorded
            extracted, failed, unchanged, deleted = _run_counts(catalog, run_id)
            last = (run_id, None, extracted, unchanged, deleted, rejected, failed)
        rejected_rows = catalog.execute(
            "SELECT path, reason, message FROM rejected_documents ORDER BY path"
        ).fetchall()
        if run_id is not None:
            failed_rows = catalog.execute(
                "SELECT path, error FROM extraction_runs WHERE run_id = ? AND status = 'failed' ORDER BY path",
                [run_id],
            ).fetchall()
        else:
            failed_rows = catalog.execute(
                """SELECT r.path, r.error FROM extraction_runs r JOIN documents d USING (doc_id)
                WHERE r.status = 'failed' AND d.extracted_hash IS DISTINCT FROM d.body_hash
                QUALIFY row_number() OVER (PARTITION BY r.doc_id ORDER BY r.finished_at DESC) = 1
                ORDER BY r.path"""
            ).fetchall()
    last_build = None
    if last is not None:
        last_build = {
            "run_id": last[0],
            "finished_at": last[1].isoformat() if last[1] is not None else None,
            "extracted": last[2],
            "unchanged": last[3],
            "deleted": last[4],
            "rejected": last[5],
            "failed": last[6],
        }
    return {
        "home": str(home.root),
        "documents": documents,
        "quads": int(quads),
        "statements": int(statements),
        "rejected": rejected,
        "failed": len(failed_rows),
        "last_build": last_build,
        "rejected_documents": [{"path": p, "reason": r, "message": m} for p, r, m in rejected_rows],
        "failed_documents": [{"path": p, "error": e} for p, e in failed_rows],
    }


def documents_written_in(home: Home, run_id: str) -> list[str]:
    """The documents whose graphs a run wrote or deleted: what an incremental check needs to look at."""
    with catalog_reader(home) as catalog:
        if catalog is None:
            return []
        rows = catalog.execute(
            """SELECT path FROM extraction_runs WHERE run_id = $run AND status = 'ok'
            UNION SELECT path FROM deletions WHERE run_id = $run ORDER BY path""",
            {"run": run_id},
        ).fetchall()
    return [row[0] for row in rows]
