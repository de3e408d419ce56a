"""Stage one: bring the catalog's ``documents`` rows of some buckets in line with the vault.

New and changed files are parsed and stored (text included, so extraction never re-reads a file that may
have changed again); files that are gone are marked ``gone`` for the extraction stage to clean up; files that
cannot be read are recorded in ``rejected_documents`` with the reason, and the rest go on. Files of the sources
folder that are not Markdown are converted first (engramrag.vault.converters); a failed conversion is recorded
with reason ``conversion_failed``.

An agent's note in the agent folder joins only once a person approved its exact bytes: until then it is
recorded as rejected with reason ``awaiting_approval``, and if an earlier, approved version was live it is
marked gone so extraction removes its graphs, chunks and vectors like those of a deleted file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pandas as pd

from engramrag.agent.approvals import AWAITING_APPROVAL, ApprovalGate
from engramrag.catalog.connection import catalog_writer, registered, remember_vault
from engramrag.lifecycle.scan import VaultFile, scan_vault
from engramrag.progress import Progress
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.converters import convert_document, is_convertible, source_hash
from engramrag.vault.dates import document_date
from engramrag.vault.document import Document
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.git_dates import first_commit_dates
from engramrag.vault.markdown import content_hash, parse_document

DOCUMENT_COLUMNS = [
    "doc_id",
    "path",
    "bucket",
    "title",
    "author",
    "agent_authored",
    "body_hash",
    "size_bytes",
    "mtime_ns",
    "text",
    "front_matter",
    "seen_run",
    "doc_date",
    "date_source",
]


@dataclass
class SyncSummary:
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    gone: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)  # path -> message

    def merge(self, other: SyncSummary) -> None:
        self.new += other.new
        self.changed += other.changed
        self.unchanged += other.unchanged
        self.gone += other.gone
        self.rejected.update(other.rejected)


def sync_documents(
    home: Home,
    vault: Path,
    config: VaultConfig,
    buckets: list[int],
    run_id: str | None,
    verify_hashes: bool = False,
) -> SyncSummary:
    """Sync the given buckets. With ``verify_hashes`` every file is read and hashed; otherwise a file whose
    size and modification time match the catalog is taken as unchanged without reading it."""
    files = scan_vault(vault, config, buckets)
    by_bucket: dict[int, list[VaultFile]] = {bucket: [] for bucket in buckets}
    for file in files:
        by_bucket[file.bucket].append(file)
    summary = SyncSummary()
    progress = Progress("read documents", len(files))
    gate = ApprovalGate(home, config)
    dating = _Dating(vault)
    with catalog_writer(home, config.bucket_count) as catalog:
        remember_vault(catalog, vault)
    for bucket in buckets:
        with catalog_writer(home, config.bucket_count) as catalog:
            summary.merge(
                _sync_bucket(catalog, config, bucket, by_bucket[bucket], run_id, verify_hashes, progress, gate,
                             dating)
            )
    return summary


class _Dating:
    """Each document's date (``engramrag.vault.dates``); the vault's git history is read only when a document
    has no date of its own, and then once."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self._first_commits: dict | None = None

    def of(self, document: Document, mtime_ns: int) -> tuple[str | None, str | None]:
        heading = document.headings[0].text if document.headings else None
        found = document_date(document.front_matter, document.path, heading, None, None, document.body)
        if found is None:
            if self._first_commits is None:
                self._first_commits = first_commit_dates(self.vault)
            found = document_date({}, document.path, None, self._first_commits.get(document.path), mtime_ns / 1e9)
        return (found.value, found.source) if found else (None, None)


def _sync_bucket(
    catalog: duckdb.DuckDBPyConnection,
    config: VaultConfig,
    bucket: int,
    files: list[VaultFile],
    run_id: str | None,
    verify_hashes: bool,
    progress: Progress,
    gate: ApprovalGate,
    dating: _Dating,
) -> SyncSummary:
    summary = SyncSummary()
    known = {
        path: (body_hash, size, mtime, gone)
        for path, body_hash, size, mtime, gone in catalog.execute(
            "SELECT path, body_hash, size_bytes, mtime_ns, gone FROM documents WHERE bucket = ?", [bucket]
        ).fetchall()
    }
    rejected_before: dict[str, tuple[int, int]] = {}
    rejected_messages: dict[str, str] = {}
    for path, size, mtime, message in catalog.execute(
        "SELECT path, size_bytes, mtime_ns, message FROM rejected_documents WHERE bucket = ?", [bucket]
    ).fetchall():
        rejected_before[path] = (size, mtime)
        rejected_messages[path] = message
    upserts: list[dict] = []
    touched: list[tuple[str, int]] = []  # unchanged content, new mtime
    rejected_rows: list[dict] = []
    held_live: list[str] = []  # approved notes an agent changed since: out of the graph until approved again
    now = datetime.now(UTC)
    seen = set()
    for file in files:
        seen.add(file.path)
        progress.advance()
        previous = known.get(file.path)
        if file.outside is not None:
            message = (f"{file.path} is a link to {file.outside}, outside the vault, so it is not read. Copy the "
                       "file into the vault if it belongs in the memory, or remove the link.")  # fmt: skip
            rejected_rows.append(_rejected(file, "outside_vault", message, run_id, now))
            summary.rejected[file.path] = message
            continue
        if file.path in rejected_before and rejected_before[file.path] == (file.size_bytes, file.mtime_ns):
            summary.rejected[file.path] = rejected_messages[file.path]
            continue
        if (
            previous is not None
            and not previous[3]
            and not verify_hashes
            and (previous[1], previous[2]) == (file.size_bytes, file.mtime_ns)
            and file.path not in rejected_before
        ):
            summary.unchanged += 1
            continue
        try:
            raw = file.absolute.read_bytes()
        except OSError as error:
            rejected_rows.append(_rejected(file, "unreadable", f"{file.path}: cannot be read ({error}).", run_id, now))
            summary.rejected[file.path] = str(error)
            continue
        held = gate.held(file.path, raw)
        if held is not None:
            rejected_rows.append(_rejected(file, AWAITING_APPROVAL, held, run_id, now))
            summary.rejected[file.path] = held
            if previous is not None and not previous[3]:
                held_live.append(file.path)
            continue
        convertible = is_convertible(file.path, config)
        live = previous is not None and not previous[3]
        if live and _same_content(catalog, file.path, raw, previous[0], convertible):
            touched.append((file.path, file.mtime_ns))
            summary.unchanged += 1
            continue
        try:
            read = convert_document if convertible else parse_document
            document = read(raw, file.path, config)
        except DocumentRejected as rejection:
            rejected_rows.append(_rejected(file, rejection.reason, rejection.message, run_id, now))
            summary.rejected[file.path] = rejection.message
            continue
        (summary.changed if previous is not None and not previous[3] else summary.new).append(file.path)
        doc_date, date_source = dating.of(document, file.mtime_ns)
        upserts.append(
            {
                "doc_id": document.doc_id,
                "path": document.path,
                "bucket": document.bucket,
                "title": document.title,
                "author": document.author,
                "agent_authored": document.agent_authored,
                "body_hash": document.body_hash,
                "size_bytes": document.size_bytes,
                "mtime_ns": file.mtime_ns,
                "text": document.text,
                "front_matter": json.dumps(document.front_matter, ensure_ascii=False),
                "seen_run": run_id,
                "doc_date": doc_date,
                "date_source": date_source,
            }
        )
    summary.gone = sorted([*(path for path, row in known.items() if path not in seen and not row[3]), *held_live])
    fine_now = [path for path in rejected_before if path not in summary.rejected]

    catalog.execute("BEGIN TRANSACTION")
    try:
        if upserts:
            frame = pd.DataFrame(upserts, columns=DOCUMENT_COLUMNS)
            with registered(catalog, "incoming_documents", frame):
                catalog.execute(
                    f"""INSERT INTO documents ({", ".join(DOCUMENT_COLUMNS)})
                    SELECT {", ".join(DOCUMENT_COLUMNS)} FROM incoming_documents
                    ON CONFLICT (doc_id) DO UPDATE SET
                    {", ".join(f"{column} = excluded.{column}" for column in DOCUMENT_COLUMNS[1:])}, gone = FALSE"""
                )
        if touched:
            catalog.executemany(
                "UPDATE documents SET mtime_ns = ?, doc_date = CASE WHEN date_source = 'mtime' THEN ? "
                "ELSE doc_date END WHERE path = ?",
                [(m, datetime.fromtimestamp(m / 1e9, UTC).date().isoformat(), p) for p, m in touched],
            )
        if summary.gone:
            catalog.execute("UPDATE documents SET gone = TRUE WHERE list_contains(?, path)", [summary.gone])
        if fine_now:
            catalog.execute("DELETE FROM rejected_documents WHERE list_contains(?, path)", [fine_now])
        for row in rejected_rows:
            catalog.execute(
                """INSERT OR REPLACE INTO rejected_documents
                VALUES ($path, $bucket, $reason, $message, $size_bytes, $mtime_ns, $run_id, $detected_at)""",
                row,
            )
        catalog.execute("COMMIT")
    except BaseException:
        catalog.execute("ROLLBACK")
        raise
    return summary


def _same_content(
    catalog: duckdb.DuckDBPyConnection, path: str, raw: bytes, body_hash: str, convertible: bool
) -> bool:
    """Whether the file holds what the catalog already has. A converted original is compared by its own
    bytes (the hash its note recorded), so a converter or library upgrade does not make every source new."""
    if not convertible:
        return content_hash(raw) == body_hash
    row = catalog.execute("SELECT front_matter FROM documents WHERE path = ?", [path]).fetchone()
    front_matter = json.loads(row[0]) if row and row[0] else {}
    return isinstance(front_matter, dict) and front_matter.get("source_sha256") == source_hash(raw)


def _rejected(file: VaultFile, reason: str, message: str, run_id: str | None, now: datetime) -> dict:
    return {
        "path": file.path,
        "bucket": file.bucket,
        "reason": reason,
        "message": message,
        "size_bytes": file.size_bytes,
        "mtime_ns": file.mtime_ns,
        "run_id": run_id,
        "detected_at": now,
    }
