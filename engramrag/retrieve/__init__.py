"""Retrieval: seeding legs, hub correction, Personalized PageRank and budgeted context assembly."""

from engramrag.retrieve.answer import Fact, Hit, SearchAnswer
from engramrag.retrieve.config import IndexConfig, RetrievalConfig
from engramrag.retrieve.index import IndexMissing
from engramrag.retrieve.retriever import ABLATIONS, MODES, EmbedderMismatch, Retriever, search

__all__ = [
    "ABLATIONS",
    "MODES",
    "EmbedderMismatch",
    "Fact",
    "Hit",
    "IndexConfig",
    "IndexMissing",
    "RetrievalConfig",
    "Retriever",
    "SearchAnswer",
    "search",
]
