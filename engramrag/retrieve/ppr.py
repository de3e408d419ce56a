"""Personalized PageRank over the seeds' neighbourhood, with igraph's PRPACK solver.

With damping d, the walk restarts at a seed with probability 1 - d at every step, so the mass that
reaches h hops away is at most d**h (1/8 at three hops for d = 0.5). Solving on the nodes within a few
hops of the seeds is therefore close to solving on the whole graph, and it keeps a query's cost
independent of the vault's size. When the whole graph is smaller than the cap, it is solved exactly.

The neighbourhood is grown with sparse products over the walk's transition matrix (one per hop), and
when a hop would overflow the cap it keeps the nodes the walk reaches with the most probability, so a hub
among the seeds does not fill the neighbourhood with its least connected neighbours.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import igraph as ig
import numpy as np
import scipy.sparse as sp


def walk_matrix(node_count: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> sp.csc_matrix:
    """The random walk's step over an undirected weighted edge list: column j holds the probabilities of
    stepping from node j to each neighbour (``walk @ mass`` is one step of the mass). Column-major, so that
    a step from a few nodes reads only their columns."""
    rows = np.concatenate([src, dst]).astype(np.int64)
    cols = np.concatenate([dst, src]).astype(np.int64)
    values = np.concatenate([weight, weight]).astype(np.float64)
    matrix = sp.csr_matrix((values, (rows, cols)), shape=(node_count, node_count))
    matrix.sum_duplicates()
    strength = np.asarray(matrix.sum(axis=0)).ravel()
    strength[strength == 0] = 1.0
    return (matrix @ sp.diags(1.0 / strength)).tocsc()


def neighbourhood(walk: sp.csc_matrix, reset: Mapping[int, float], hops: int, max_nodes: int) -> np.ndarray:
    """The seeds and the nodes within ``hops`` of them, at most ``max_nodes``, sorted by node number."""
    node_count = walk.shape[0]
    if node_count <= max_nodes:
        return np.arange(node_count)
    seeds = np.array([node for node, weight in reset.items() if weight > 0], dtype=np.int64)[:max_nodes]
    reached = np.zeros(node_count, dtype=bool)
    reached[seeds] = True
    layer, mass = seeds, np.array([reset[node] for node in seeds.tolist()], dtype=np.float64)
    count = len(seeds)
    for _ in range(hops):
        if count >= max_nodes:
            break
        spread = walk[:, layer] @ mass  # one step of the walk from the last layer
        spread[reached] = 0.0
        layer = np.flatnonzero(spread)
        if not len(layer):
            break
        room = max_nodes - count
        if len(layer) > room:
            layer = layer[np.argpartition(-spread[layer], room - 1)[:room]]
        reached[layer] = True
        count += len(layer)
        mass = spread[layer]
    return np.flatnonzero(reached)


@dataclass
class LocalPageRank:
    """PageRank scores over a neighbourhood, and the neighbourhood's graph (for paths between seeds)."""

    scores: dict[int, float]
    nodes: np.ndarray  # the neighbourhood, ascending; position i is vertex i of ``graph``
    graph: ig.Graph

    def shortest_paths(self, source: int, targets: list[int]) -> list[list[int]]:
        """Unweighted shortest paths (as node lists) from ``source`` to each target inside the neighbourhood;
        an empty list where there is none."""
        wanted = np.array([source, *targets], dtype=np.int64)
        found_at = np.minimum(np.searchsorted(self.nodes, wanted), max(len(self.nodes) - 1, 0))
        position = {
            int(node): int(at)
            for node, at in zip(wanted, found_at, strict=True)
            if len(self.nodes) and self.nodes[at] == node
        }
        if source not in position:
            return [[] for _ in targets]
        reachable = [target for target in targets if target in position]
        with warnings.catch_warnings():  # igraph warns when two nodes are not connected
            warnings.simplefilter("ignore", RuntimeWarning)
            found = self.graph.get_shortest_paths(
                position[source], to=[position[target] for target in reachable], output="vpath"
            )
        paths = dict(zip(reachable, found, strict=True))
        return [self.nodes[paths[target]].tolist() if paths.get(target) else [] for target in targets]


def personalized_pagerank(
    graph: ig.Graph,
    walk: sp.csc_matrix,
    reset: Mapping[int, float],
    damping: float,
    hops: int = 3,
    max_nodes: int = 50_000,
) -> LocalPageRank:
    """PageRank probability of each node in the seeds' neighbourhood for the restart distribution ``reset``
    (weights need not sum to 1). ``walk`` is ``graph``'s :func:`walk_matrix`, used to choose the
    neighbourhood."""
    if not any(weight > 0 for weight in reset.values()):
        return LocalPageRank({}, np.zeros(0, dtype=np.int64), ig.Graph())
    nodes = neighbourhood(walk, reset, hops, max_nodes)
    whole = len(nodes) == graph.vcount()
    # induced_subgraph numbers the kept vertices in ascending order, as ``nodes`` is.
    sub = graph if whole else graph.induced_subgraph(nodes.tolist(), implementation="create_from_scratch")
    restart = np.zeros(len(nodes))
    positions = np.searchsorted(nodes, np.fromiter(reset, dtype=np.int64, count=len(reset)))
    for position, (node, weight) in zip(positions.tolist(), reset.items(), strict=True):
        if weight > 0 and position < len(nodes) and nodes[position] == node:
            restart[position] = weight
    weights = "weight" if "weight" in sub.es.attributes() else None
    scores = sub.personalized_pagerank(
        directed=False, damping=damping, reset=restart.tolist(), weights=weights, implementation="prpack"
    )
    return LocalPageRank(dict(zip(nodes.tolist(), scores, strict=True)), nodes, sub)
