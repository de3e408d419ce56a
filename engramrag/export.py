"""Exporting the quad store as RDF files."""

from __future__ import annotations

from pathlib import Path

from engramrag.catalog.connection import catalog_reader
from engramrag.ontology.quadstore import EXPORT_FORMATS, QuadStore
from engramrag.store import Home


class NothingToExport(LookupError):
    pass


def export_dataset(home: Home, output: Path | str, fmt: str, document: str | None = None) -> int:
    """Write every document's graphs (or one document's, by vault-relative path) to ``output`` as N-Quads or
    TriG. Returns the number of quads written."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join(EXPORT_FORMATS)}")
    if not home.quads_path.exists():
        raise NothingToExport(f"{home.root} has no quad store yet; run `engram build` first.")
    if document is not None:
        with catalog_reader(home) as catalog:
            known = catalog is not None and catalog.execute(
                "SELECT count(*) FROM documents WHERE path = ? AND NOT gone", [document]
            ).fetchone()[0]
        if not known:
            raise NothingToExport(f"no document {document!r} in {home.root}; paths are relative to the vault.")
    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        return quads.export(output, fmt, document)
