"""The published graph index, opened read-only for searching."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import igraph as ig
import lancedb
import numpy as np

from engramrag.retrieve.index_build import ENTITY_TABLE, current_index
from engramrag.store import Home


class IndexMissing(RuntimeError):
    """The home has no retrieval index yet."""


@dataclass
class RetrievalIndex:
    folder: Path
    manifest: dict[str, Any]
    graph: ig.Graph
    entity_count: int
    edge_kind: np.ndarray
    db: duckdb.DuckDBPyConnection
    _entities: Any = field(default=None, repr=False)

    @classmethod
    def open(cls, home: Home) -> RetrievalIndex:
        folder = current_index(home)
        if folder is None:
            raise IndexMissing(
                f"{home.root} has no retrieval index yet. "
                f"Build it with `engram build --vault VAULT --home {home.root}`."
            )
        manifest = json.loads((folder / "manifest.json").read_text())
        with np.load(folder / "graph.npz") as arrays:
            node_count = int(arrays["node_count"][0])
            entity_count = int(arrays["entity_count"][0])
            edges = np.column_stack([arrays["src"], arrays["dst"]])
            weight = arrays["weight"].astype(np.float64)
            kind = arrays["kind"]
        graph = ig.Graph(n=node_count, edges=edges, directed=False)
        graph.es["weight"] = weight
        db = duckdb.connect(str(folder / "index.duckdb"), read_only=True)
        return cls(folder, manifest, graph, entity_count, kind, db)

    @property
    def entities(self) -> Any:
        """The LanceDB table of unique entity labels with their vectors and local densities."""
        if self._entities is None:
            self._entities = lancedb.connect(str(self.folder / "vectors")).open_table(ENTITY_TABLE)
        return self._entities

    def is_passage(self, node: int) -> bool:
        return node >= self.entity_count

    def close(self) -> None:
        self.db.close()
