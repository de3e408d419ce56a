"""The published graph index, opened read-only for searching."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import igraph as ig
import numpy as np
import scipy.sparse as sp

from engramrag.retrieve.index_build import ENTITY_DENSITY, ENTITY_VECTORS
from engramrag.retrieve.note_bm25 import NoteIndex
from engramrag.retrieve.ppr import NeighbourhoodEdges, adjacency_matrix, walk_from
from engramrag.retrieve.published_index import FORMAT, current_index
from engramrag.retrieve.statements import StatementTable
from engramrag.store import Home


class IndexMissing(RuntimeError):
    """The home has no retrieval index yet."""


@dataclass
class RetrievalIndex:
    folder: Path
    manifest: dict[str, Any]
    graph: ig.Graph
    walk: sp.csc_matrix  # the graph's random-walk step, for choosing PageRank neighbourhoods
    entity_count: int
    edge_kind: np.ndarray
    db: duckdb.DuckDBPyConnection
    entity_vectors: np.ndarray  # (entities, dimension) unit rows, memory-mapped
    entity_density: np.ndarray  # (entities,) local density of each label, for CSLS
    statements: StatementTable  # the statements behind entity-entity edges, by entity
    notes: NoteIndex  # whole-note BM25; note i is passage node entity_count + i
    specificity: np.ndarray  # (entities,) log-IDF specificity of each entity over the notes, in [0, 1]
    strength: np.ndarray  # (nodes,) sum of each node's edge weights
    edges: NeighbourhoodEdges  # takes a PageRank neighbourhood's edges out of the graph

    @classmethod
    def open(cls, home: Home) -> RetrievalIndex:
        folder = current_index(home)
        if folder is None:
            raise IndexMissing(
                f"{home.root} has no retrieval index yet. "
                f"Build it with `engram build --vault VAULT --home {home.root}`."
            )
        manifest = json.loads((folder / "manifest.json").read_text())
        if manifest.get("format") != FORMAT:
            raise IndexMissing(
                f"the retrieval index of {home.root} has format {manifest.get('format')}, this version reads "
                f"{FORMAT}; run `engram build --vault VAULT --home {home.root}` to rebuild it."
            )
        with np.load(folder / "graph.npz") as arrays:
            node_count = int(arrays["node_count"][0])
            entity_count = int(arrays["entity_count"][0])
            src, dst = arrays["src"], arrays["dst"]
            weight = arrays["weight"].astype(np.float64)
            kind = arrays["kind"]
        graph = ig.Graph(n=node_count, edges=np.column_stack([src, dst]), directed=False)
        graph.es["weight"] = weight
        adjacency = adjacency_matrix(node_count, src, dst, weight)
        walk = walk_from(adjacency)
        edges = NeighbourhoodEdges(adjacency)
        db = duckdb.connect(str(folder / "index.duckdb"), read_only=True)
        vectors = np.load(folder / ENTITY_VECTORS, mmap_mode="r")
        density = np.load(folder / ENTITY_DENSITY)
        statements = StatementTable.load(folder, entity_count)
        specificity = np.asarray(
            [value for (value,) in db.execute("SELECT specificity FROM entity_nodes ORDER BY node").fetchall()],
            dtype=np.float64,
        )
        strength = np.asarray(graph.strength(weights="weight"), dtype=np.float64)
        return cls(
            folder, manifest, graph, walk, entity_count, kind, db, vectors, density, statements,
            NoteIndex.load(folder), specificity, strength, edges,
        )

    def nearest_entities(self, vector: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``limit`` entity nodes most similar to ``vector``, and their cosines, best first."""
        if self.entity_count == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        cosines = self.entity_vectors @ np.asarray(vector, dtype=np.float32)
        limit = min(limit, cosines.shape[0])
        top = np.argpartition(-cosines, limit - 1)[:limit]
        top = top[np.argsort(-cosines[top], kind="stable")]
        return top, cosines[top]

    def is_passage(self, node: int) -> bool:
        return node >= self.entity_count

    def close(self) -> None:
        self.db.close()
