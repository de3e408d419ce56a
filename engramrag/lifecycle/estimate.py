"""What a build would extract and what it would cost, before anything is paid for (``engram build --dry-run``).

The documents are chosen the way a build chooses them: the buckets the change plan names (``plan.py``), then in
those buckets every readable document whose text is not yet extracted by this extractor (new, changed, failed
before, or extracted by another extractor or prompt). Each is handed to the extractor's ``estimate``, which
splits it into the segments it would send and counts their tokens without calling the model; segments its
response cache already answered cost nothing. Nothing here calls a model or writes a store: the catalog is read
under the shared lock, a home that does not exist is neither created nor locked, and the vault is only read.
The extractor is the caller's: make it with ``make_extractor(name, home, read_only=True)`` so that its response
cache is only read too.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engramrag.agent.approvals import ApprovalGate
from engramrag.catalog.connection import catalog_reader
from engramrag.extract.base import Extractor
from engramrag.extract.registry import extractor_id
from engramrag.lifecycle.plan import plan_changes
from engramrag.lifecycle.scan import VaultFile, scan_vault
from engramrag.metrics.lifecycle import Cost, Prices, cost_of
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.converters import convert_document, is_convertible, source_hash
from engramrag.vault.document import Document
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.markdown import content_hash, parse_document

NOTHING_TO_EXTRACT = Cost(0.0, "nothing to extract")


@dataclass(frozen=True)
class DocumentEstimate:
    """One document a build would extract: why, how many segments, their tokens and how many are cached."""

    path: str
    reason: str  # new | changed | pending (not yet extracted by this extractor: failed, killed, or another one)
    segments: int
    tokens_in: int  # of the uncached segments only: what would be sent and paid for
    tokens_out: int
    cached_segments: int


@dataclass
class BuildEstimate:
    """The dry run's answer. Tokens are the extractor's estimates for the segments its response cache cannot
    answer (the ones that would be paid for); ``cost`` prices them, None (with the reason) when the model has no
    price."""

    extractor: str
    model: str | None
    buckets: list[int]
    documents: list[DocumentEstimate] = field(default_factory=list)
    unchanged: int = 0
    rejected: dict[str, str] = field(default_factory=dict)
    cost: Cost = NOTHING_TO_EXTRACT

    @property
    def segments(self) -> int:
        return sum(document.segments for document in self.documents)

    @property
    def cached_segments(self) -> int:
        return sum(document.cached_segments for document in self.documents)

    @property
    def tokens_in(self) -> int:
        return sum(document.tokens_in for document in self.documents)

    @property
    def tokens_out(self) -> int:
        return sum(document.tokens_out for document in self.documents)

    def to_json(self) -> dict[str, Any]:
        return {
            "extractor": self.extractor,
            "model": self.model,
            "buckets": self.buckets,
            "documents": len(self.documents),
            "unchanged": self.unchanged,
            "rejected": self.rejected,
            "segments": self.segments,
            "cached_segments": self.cached_segments,
            "requests": self.segments - self.cached_segments,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": self.cost.usd,
            "cost_note": self.cost.note,
            "per_document": [asdict(document) for document in self.documents],
        }


def estimate_build(
    home: Home,
    vault: Path,
    config: VaultConfig,
    extractor: Extractor,
    prices: Prices | None = None,
    full: bool = False,
) -> BuildEstimate:
    """Estimate the extraction a build of ``vault`` into ``home`` would run now (every bucket with ``full``)."""
    current = extractor_id(extractor)
    built = home.catalog_path.exists()
    if full or not built:
        buckets = list(range(config.bucket_count))
    else:
        buckets = plan_changes(home, vault, config, extractor=current).buckets
    result = BuildEstimate(current, getattr(extractor, "model", None), buckets)
    known = _catalog_documents(home, buckets) if built and buckets else {}
    result.unchanged = _live_documents(home) - len(known) if built else 0  # the buckets with nothing to do
    gate = ApprovalGate(home, config, read_only=True)
    for file in scan_vault(vault, config, buckets) if buckets else []:
        previous = known.get(file.path)
        try:
            document, reason = _document(file, previous, config, gate, trust_stat=not full)
        except DocumentRejected as rejection:
            result.rejected[file.path] = rejection.message
            continue
        if previous is not None and (previous["extracted_hash"], previous["extractor"]) == (
            document.body_hash, current
        ):
            result.unchanged += 1
            continue
        result.documents.append(_estimate(extractor, document, reason))
    _price(result, prices or {})
    return result


def _document(file: VaultFile, previous: dict | None, config: VaultConfig, gate: ApprovalGate,
              trust_stat: bool) -> tuple[Document, str]:
    """The document as the build's sync would store it, and why it would be extracted (DocumentRejected where
    the sync would reject it or hold an agent's note back). A file whose content the catalog already holds is
    taken from the catalog."""
    if trust_stat and previous is not None and (previous["size_bytes"], previous["mtime_ns"]) == (
        file.size_bytes, file.mtime_ns
    ):
        return _stored(previous, file.path, config), "pending"
    try:
        raw = file.absolute.read_bytes()
    except OSError as error:
        raise DocumentRejected("unreadable", f"{file.path}: cannot be read ({error}).") from None
    held = gate.held(file.path, raw)
    if held is not None:
        raise DocumentRejected("awaiting_approval", held)
    convertible = is_convertible(file.path, config)
    if previous is not None and _same_content(previous, raw, convertible):
        return _stored(previous, file.path, config), "pending"
    document = (convert_document if convertible else parse_document)(raw, file.path, config)
    return document, "new" if previous is None else "changed"


def _stored(previous: dict, path: str, config: VaultConfig) -> Document:
    """The document from the text the catalog holds, parsed as extraction parses it."""
    return parse_document(previous["text"].encode("utf-8"), path, config)


def _same_content(previous: dict, raw: bytes, convertible: bool) -> bool:
    """As the sync decides: a Markdown file by its text's hash, a converted original by its own bytes."""
    if not convertible:
        return content_hash(raw) == previous["body_hash"]
    try:
        front_matter = json.loads(previous["front_matter"] or "{}")
    except ValueError:
        return False
    return isinstance(front_matter, dict) and front_matter.get("source_sha256") == source_hash(raw)


def _estimate(extractor: Extractor, document: Document, reason: str) -> DocumentEstimate:
    estimate = getattr(extractor, "estimate", None)
    if estimate is None:  # an extractor that calls no model (rules, replay): nothing to count or pay
        return DocumentEstimate(document.path, reason, 0, 0, 0, 0)
    figures = estimate(document)
    return DocumentEstimate(document.path, reason, int(figures.segments), int(figures.tokens_in),
                            int(figures.tokens_out), int(figures.cached_segments))


def _price(result: BuildEstimate, prices: Prices) -> None:
    if not result.documents:
        result.cost = NOTHING_TO_EXTRACT
    elif result.model is None:
        result.cost = Cost(0.0, f"{result.extractor} calls no model")
    else:
        result.cost = cost_of(result.model, result.tokens_in, result.tokens_out, prices)


def _catalog_documents(home: Home, buckets: list[int]) -> dict[str, dict]:
    with catalog_reader(home) as catalog:
        if catalog is None:
            return {}
        cursor = catalog.execute(
            """SELECT path, body_hash, size_bytes, mtime_ns, text, front_matter, extracted_hash, extractor
            FROM documents
            WHERE NOT gone AND list_contains(?, bucket)""",
            [buckets],
        )
        names = [column[0] for column in cursor.description]
        return {row[0]: dict(zip(names, row, strict=True)) for row in cursor.fetchall()}


def _live_documents(home: Home) -> int:
    with catalog_reader(home) as catalog:
        return catalog.execute("SELECT count(*) FROM documents WHERE NOT gone").fetchone()[0] if catalog else 0
