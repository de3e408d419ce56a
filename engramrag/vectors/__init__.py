"""Vectors and the full-text index in LanceDB (DESIGN.md, "The stores").

The store is imported when first used, so that a module needing only ``vectors.fts_text`` does not import LanceDB.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engramrag.vectors.lancedb_store import TABLES, ReplaceResult, VectorStore, VectorStoreMismatch

__all__ = ["TABLES", "ReplaceResult", "VectorStore", "VectorStoreMismatch"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module("engramrag.vectors.lancedb_store"), name)
