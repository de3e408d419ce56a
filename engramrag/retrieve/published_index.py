"""The published retrieval index: the folder ``<home>/ppr/CURRENT`` names, the format this code writes and reads,
and whether the index was built from what the catalog holds now. Kept apart from the build (``index_build``), which
imports the search libraries: ``engram build`` asks whether the index is current on every run, also when nothing
changed."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import duckdb

from engramrag.catalog.connection import catalog_reader
from engramrag.catalog.digests import rows_digest
from engramrag.embed.base import Embedder
from engramrag.retrieve.config import IndexConfig
from engramrag.store import Home

FORMAT = 13
CURRENT = "CURRENT"


def index_is_current(home: Home, embedder: Embedder, index_config: IndexConfig | None = None) -> bool:
    """Whether the published index was built from what the catalog holds now (read-only: no lock taken for
    writing, nothing migrated)."""
    current = current_index(home)
    if current is None:
        return False
    with catalog_reader(home) as catalog:
        if catalog is None:
            return False
        fingerprint = index_fingerprint(catalog, embedder, index_config or IndexConfig())
    return json.loads((current / "manifest.json").read_text()).get("fingerprint") == fingerprint


def current_index(home: Home) -> Path | None:
    pointer = home.ppr_path / CURRENT
    if not pointer.exists():
        return None
    folder = home.ppr_path / pointer.read_text().strip()
    return folder if (folder / "manifest.json").exists() else None


# What an index is built from, each part one row: the embedded documents, the live paths, people's verdicts (a merge
# reaches the graph through the clusters, an accepted supersession through supersessions), the timeline's
# supersessions and the notes' dates. Each as a count of its rows and an order-free digest of them
# (``catalog.digests``' rule; joining the rows as text took 40 ms of every build at 10,000 notes).
FINGERPRINT_PARTS = (
    rows_digest("embedded_documents", "doc_id", "extraction", "embedder"),
    rows_digest("documents WHERE NOT gone", "doc_id", "path", "doc_date"),
    rows_digest("entity_clusters", "entity_key", "cluster_key"),
    rows_digest("supersessions", "earlier_key", "later_key"),
    rows_digest("document_supersessions", "left_key", "right_key", "reason", "since"),
)


def index_fingerprint(catalog: duckdb.DuckDBPyConnection, embedder: Embedder, index_config: IndexConfig) -> str:
    """A digest of what the index would be built from now, and of the format and settings it would be built with."""
    parts = [repr(catalog.execute(query).fetchone()) for query in FINGERPRINT_PARTS]
    settings = json.dumps([FORMAT, embedder.name, dataclasses.asdict(index_config)], sort_keys=True)
    return hashlib.blake2b("|".join([*parts, settings]).encode(), digest_size=16).hexdigest()
