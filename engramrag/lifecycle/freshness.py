"""Whether a global step has anything to do: a fingerprint of what it reads, compared with the one it last ran on.

One job. Each global step (the resolution candidates and overlay, the supersession proposals and their
application, the timeline) names the catalog parts and the people's decision topics it reads, plus its own
settings. Before it runs, the fingerprint of those inputs is compared with the one recorded in ``asset_inputs`` when
it last finished; equal means its outputs are already what it would write, so it does nothing and says so. The
consistency pass (``force``) always recomputes. A step records its fingerprint only after it finished, so a run
killed half-way is redone by the next build.

``stale_steps`` answers the same question for every step at once: `engram build` on an unchanged vault with no new
verdicts runs nothing at all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Generic, TypeVar

import duckdb

from engramrag.catalog.connection import catalog_reader, catalog_writer
from engramrag.catalog.digests import extraction_columns, live_documents_digest, rows_digest
from engramrag.decisions.store import MERGE, SUPERSESSION, DecisionsStore
from engramrag.store import Home

T = TypeVar("T")

# The live notes as the steps read them. extracted_at: a re-extraction with the same text (a --full build) rewrites
# the graphs the steps add to.
_LIVE_DOCUMENTS = live_documents_digest("path", "body_hash", *extraction_columns(), "doc_date", "date_source")

# What a step can read, each as one aggregate over the catalog (order-independent, cheap at 100,000 rows).
CATALOG_PARTS: dict[str, str] = {
    "documents": _LIVE_DOCUMENTS,
    # The live notes that record decisions (the supersession steps read only these): an edit elsewhere leaves it.
    "decision_documents": f"{_LIVE_DOCUMENTS} AND doc_id IN (SELECT doc_id FROM decisions)",
    "embeddings": rows_digest("embedded_documents", "doc_id", "extraction", "embedder"),
    "automatic_merges": rows_digest("resolution_candidates WHERE auto_merge AND NOT vetoed", "left_key", "right_key",
                                    "score"),
    "clusters": rows_digest("entity_clusters", "entity_key", "cluster_key"),
    "proposals": rows_digest("supersession_candidates", "earlier_key", "later_key", "earlier_path", "later_path",
                             "declared_in", "score"),
    # Model reviews that got no answer: a step that left some is stale at the next build, which asks them again.
    "failed_model_reviews": rows_digest("supersession_model_reviews WHERE outcome = 'failed'", "earlier_key",
                                        "later_key"),
}

# Per step: the catalog parts and the decision topics it reads.
STEP_INPUTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "resolution_candidates": (("documents", "embeddings"), ()),
    "resolution_overlay": (("documents", "automatic_merges"), (MERGE,)),
    "supersession_candidates": (("decision_documents",), ()),
    "accepted_supersessions": (("decision_documents", "proposals", "failed_model_reviews"), (SUPERSESSION,)),
    "document_timeline": (("documents", "clusters"), (MERGE, SUPERSESSION)),
}


@dataclass(frozen=True)
class Refresh(Generic[T]):
    """What a step did: ``result`` is None when its inputs were unchanged and it did nothing."""

    recomputed: bool
    reason: str
    result: T | None = None

    def metadata(self) -> dict[str, object]:
        return {"recomputed": self.recomputed, "reason": self.reason}


def input_fingerprint(catalog: duckdb.DuckDBPyConnection, home: Home, step: str, settings: str = "") -> str:
    """The fingerprint of what ``step`` reads now, as JSON naming each input (its catalog parts, its decision
    topics, its ``settings`` and the code), so that a recomputation can say which input changed."""
    parts, topics = STEP_INPUTS[step]
    values = {part: _part(catalog, part) for part in parts}
    store = DecisionsStore.for_home(home)
    values |= {f"{topic} verdicts": store.revision(topic) for topic in topics}
    values |= {"settings": _digest(settings), "code": code_version()}
    return json.dumps(values, sort_keys=True)


@lru_cache(maxsize=1)
def code_version() -> str:
    """A digest of this package's sources: a changed rule recomputes the steps on the next build, as a changed
    extractor version re-extracts."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(digest_size=16)
    for source in sorted(root.rglob("*.py")):
        digest.update(source.relative_to(root).as_posix().encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()


def refresh_unless_fresh(
    home: Home, bucket_count: int, step: str, settings: str, compute: Callable[[], T], force: bool = False
) -> Refresh[T]:
    """Run ``compute`` unless ``step``'s inputs are those it last finished on (always when ``force``)."""
    with catalog_writer(home, bucket_count) as catalog:
        fingerprint = input_fingerprint(catalog, home, step, settings)
        recorded = _recorded(catalog, step)
    if recorded == fingerprint and not force:
        return Refresh(False, "its inputs (documents, verdicts, settings) are unchanged since it last ran")
    reason = (
        "the consistency pass recomputes everything" if force
        else "it never ran on this home" if recorded is None
        else "its inputs changed: " + ", ".join(_changed(recorded, fingerprint))
    )
    result = compute()
    with catalog_writer(home, bucket_count) as catalog:
        catalog.execute(
            "INSERT OR REPLACE INTO asset_inputs VALUES (?, ?, ?)", [step, fingerprint, datetime.now(UTC)]
        )
    return Refresh(True, reason, result)


def stale_steps(home: Home, settings: dict[str, str]) -> list[str]:
    """The steps whose inputs changed since they last finished (all of them on a home never built)."""
    with catalog_reader(home) as catalog:
        if catalog is None:
            return list(STEP_INPUTS)
        return [
            step for step in STEP_INPUTS
            if _recorded(catalog, step) != input_fingerprint(catalog, home, step, settings.get(step, ""))
        ]


def _part(catalog: duckdb.DuckDBPyConnection, part: str) -> str:
    try:
        return _digest(repr(catalog.execute(CATALOG_PARTS[part]).fetchone()))
    except duckdb.CatalogException:  # a read-only reader of a catalog from before the part's table
        return "absent"


def _recorded(catalog: duckdb.DuckDBPyConnection, step: str) -> str | None:
    try:
        row = catalog.execute("SELECT fingerprint FROM asset_inputs WHERE asset = ?", [step]).fetchone()
    except duckdb.CatalogException:  # a read-only reader of a catalog from before schema 6
        return None
    return row[0] if row else None


def _changed(recorded: str, fingerprint: str) -> list[str]:
    try:
        before = json.loads(recorded)
    except ValueError:
        return ["everything (recorded by an older version)"]
    now = json.loads(fingerprint)
    return [name for name in now if before.get(name) != now[name]] or ["nothing (recorded differently)"]


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
