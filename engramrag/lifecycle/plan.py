"""What changed in the vault since the catalog last saw it, bucket by bucket.

Used by ``engram build`` to choose the buckets to run, and by the vault sensor, which examines a capped
number of files per tick and resumes from a cursor.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd

from engramrag.catalog.connection import catalog_reader, has_table, registered
from engramrag.catalog.schema import NEEDS_EXTRACTION
from engramrag.lifecycle.scan import scan_vault, vault_files
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.converters import is_convertible, source_hash
from engramrag.vault.ids import short_hash
from engramrag.vault.markdown import content_hash


@dataclass
class ChangePlan:
    changes: dict[int, list[str]] = field(default_factory=dict)  # bucket -> "path:what" entries
    examined: int = 0
    complete: bool = True  # False when the cap stopped the scan before the end
    resume_after: str = ""  # the last path examined, for the next tick
    files_changed: int = 0  # entries for a file of the vault (new, edited, deleted), not a document still waiting
    # for its extraction or its vectors

    @property
    def buckets(self) -> list[int]:
        return sorted(self.changes)

    def fingerprint(self, bucket: int) -> str:
        """A content-derived key of one bucket's changes: the same changes give the same run key."""
        return short_hash(*sorted(self.changes[bucket]))


def plan_changes(
    home: Home,
    vault: Path,
    config: VaultConfig,
    max_files: int | None = None,
    resume_after: str = "",
    extractor: str | None = None,
    embedder: str | None = None,
    only: Collection[str] | None = None,
) -> ChangePlan:
    """Compare the vault with the catalog. A file whose size or modification time differs from the catalog
    is read and hashed; only a different hash counts as a change. At most ``max_files`` files are read.
    With ``extractor`` (an extractor id), documents the catalog holds but that are not yet extracted by it
    (a failed or killed build, or a new extractor) count as changes too; with ``embedder`` (an embedder
    name), so do documents whose vectors are missing or stale. ``only``: just these vault paths are compared
    (written, moved or deleted since the last look, as the system told ``engram watch``); listing a 100,000-note
    vault and its catalog rows was most of a look."""
    files = scan_vault(vault, config) if only is None else vault_files(vault, config, only)
    manifest, rejected = _manifest(home, only)
    plan = ChangePlan()
    for path, bucket in _pending(home, extractor) if extractor else []:
        plan.changes.setdefault(bucket, []).append(f"{path}:pending")
    for path, bucket in _unembedded(home, embedder) if embedder else []:
        plan.changes.setdefault(bucket, []).append(f"{path}:embedding")
    present = {file.path for file in files}
    for path, (bucket, *_) in manifest.items():
        if path not in present:
            plan.changes.setdefault(bucket, []).append(f"{path}:deleted")
            plan.files_changed += 1
    for path, (bucket, _, _) in rejected.items():
        if path not in present:
            plan.changes.setdefault(bucket, []).append(f"{path}:rejected-gone")
            plan.files_changed += 1
    ordered = [file for file in files if file.path > resume_after] + [f for f in files if f.path <= resume_after]
    for file in ordered:
        known = manifest.get(file.path)
        if known is not None and (known[2], known[3]) == (file.size_bytes, file.mtime_ns):
            continue
        if file.path in rejected and rejected[file.path][1:] == (file.size_bytes, file.mtime_ns):
            continue
        if max_files is not None and plan.examined >= max_files:
            plan.complete = False
            break
        plan.examined += 1
        plan.resume_after = file.path
        if known is None:
            plan.changes.setdefault(file.bucket, []).append(f"{file.path}:new:{file.size_bytes}:{file.mtime_ns}")
            plan.files_changed += 1
            continue
        try:
            raw = file.absolute.read_bytes()
        except OSError:
            raw = None
        # a converted original is compared by its own bytes: its catalog text is the converted Markdown
        convertible = is_convertible(file.path, config)
        digest = "unreadable" if raw is None else source_hash(raw) if convertible else content_hash(raw)
        if digest != (known[4] if convertible else known[1]):
            plan.changes.setdefault(file.bucket, []).append(f"{file.path}:{digest}")
            plan.files_changed += 1
    if plan.complete:
        plan.resume_after = ""
    return plan


def _pending(home: Home, extractor: str) -> list[tuple[str, int]]:
    with catalog_reader(home) as catalog:
        if catalog is None:
            return []
        return catalog.execute(
            f"""SELECT path, bucket FROM documents
            WHERE gone OR {NEEDS_EXTRACTION}""",
            [extractor],
        ).fetchall()


def _unembedded(home: Home, embedder: str) -> list[tuple[str, int]]:
    with catalog_reader(home) as catalog:
        if catalog is None or not has_table(catalog, "embedded_documents"):
            return []
        return catalog.execute(
            """
            SELECT d.path, d.bucket FROM documents d LEFT JOIN embedded_documents e USING (doc_id)
            WHERE NOT d.gone AND d.extracted_hash IS NOT NULL
              AND (e.extraction IS DISTINCT FROM d.extracted_hash || '|' || d.extractor
                   OR e.embedder IS DISTINCT FROM ?)
            UNION ALL
            SELECT coalesce(d.path, e.doc_id), e.bucket FROM embedded_documents e LEFT JOIN documents d USING (doc_id)
            WHERE d.doc_id IS NULL OR d.gone OR d.extracted_hash IS NULL
            """,
            [embedder],
        ).fetchall()


def _manifest(
    home: Home, only: Collection[str] | None = None
) -> tuple[dict[str, tuple[int, str, int, int, str | None]], dict[str, tuple[int, int, int]]]:
    """The catalog's live documents and rejected files (of the paths ``only``, when given)."""
    with catalog_reader(home) as catalog:
        if catalog is None:
            return {}, {}
        if only is not None:
            with registered(catalog, "looked_paths", pd.DataFrame({"path": sorted(only)}, dtype=object)):
                return _manifest_rows(catalog, "AND path IN (SELECT path FROM looked_paths)")
        return _manifest_rows(catalog, "")


def _manifest_rows(
    catalog: duckdb.DuckDBPyConnection, among: str
) -> tuple[dict[str, tuple[int, str, int, int, str | None]], dict[str, tuple[int, int, int]]]:
    documents = {
        path: (bucket, body_hash, size, mtime, original)
        for path, bucket, body_hash, size, mtime, original in catalog.execute(
            f"""SELECT path, bucket, body_hash, size_bytes, mtime_ns,
                       json_extract_string(front_matter, '$.source_sha256')
                FROM documents WHERE NOT gone {among}"""
        ).fetchall()
    }
    rejected = {
        path: (bucket, size, mtime)
        for path, bucket, size, mtime in catalog.execute(
            f"SELECT path, bucket, size_bytes, mtime_ns FROM rejected_documents WHERE true {among}"
        ).fetchall()
    }
    return documents, rejected
