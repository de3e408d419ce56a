"""Vectors and the full-text index in LanceDB (DESIGN.md, "The stores")."""

from engramrag.vectors.lancedb_store import TABLES, ReplaceResult, VectorStore, VectorStoreMismatch

__all__ = ["TABLES", "ReplaceResult", "VectorStore", "VectorStoreMismatch"]
