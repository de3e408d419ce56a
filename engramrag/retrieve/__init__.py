"""Retrieval: seeding legs, hub correction, Personalized PageRank and budgeted context assembly.

The names below are imported when first used: `engram build` reads ``retrieve.published_index`` to tell whether the
index is current, and importing the whole search stack (LanceDB among it) cost a no-change build 2-3 s.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engramrag.retrieve.answer import Fact, Hit, SearchAnswer
    from engramrag.retrieve.config import IndexConfig, RetrievalConfig
    from engramrag.retrieve.index import IndexMissing
    from engramrag.retrieve.retriever import ABLATIONS, MODES, EmbedderMismatch, Retriever, search

_HOMES = {
    "Fact": "answer", "Hit": "answer", "SearchAnswer": "answer", "IndexConfig": "config",
    "RetrievalConfig": "config", "IndexMissing": "index", "ABLATIONS": "retriever", "MODES": "retriever",
    "EmbedderMismatch": "retriever", "Retriever": "retriever", "search": "retriever",
}  # fmt: skip

__all__ = [
    "ABLATIONS", "MODES", "EmbedderMismatch", "Fact", "Hit", "IndexConfig", "IndexMissing", "RetrievalConfig",
    "Retriever", "SearchAnswer", "search",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
