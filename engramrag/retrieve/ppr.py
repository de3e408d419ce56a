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

import gc
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import igraph as ig
import numpy as np
import scipy.sparse as sp


def adjacency_matrix(node_count: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> sp.csc_matrix:
    """The undirected weighted edge list as a symmetric matrix, the weights of parallel edges summed, each column's
    rows sorted (column j lists j's neighbours in ascending order)."""
    rows = np.concatenate([src, dst]).astype(np.int64)
    cols = np.concatenate([dst, src]).astype(np.int64)
    values = np.concatenate([weight, weight]).astype(np.float64)
    matrix = sp.csc_matrix((values, (rows, cols)), shape=(node_count, node_count))
    matrix.sum_duplicates()
    matrix.sort_indices()
    return matrix


def walk_from(adjacency: sp.csc_matrix) -> sp.csc_matrix:
    """The random walk's step over :func:`adjacency_matrix`: column j holds the probabilities of stepping from
    node j to each neighbour (``walk @ mass`` is one step of the mass). Column-major, so that a step from a few
    nodes reads only their columns."""
    strength = np.asarray(adjacency.sum(axis=0)).ravel()
    strength[strength == 0] = 1.0
    return (adjacency @ sp.diags(1.0 / strength)).tocsc()


# NeighbourhoodEdges takes the edges itself when the kept nodes' edges are this many times the small nodes'.
HUB_SHARE = 10


class NeighbourhoodEdges:
    """Takes a neighbourhood's edges out of the whole graph's :func:`adjacency_matrix`: one igraph edge per linked
    pair of kept nodes, weighted by the pair's summed weight.

    igraph's ``induced_subgraph`` reads every edge of every kept vertex, and a neighbourhood holds hubs (a kind, a
    tag, a much-linked note) with tens of thousands of edges: 23 ms of a 500-node neighbourhood's 28 ms of PageRank
    at 100,000 notes. Here a pair with a node of at most ``hub_degree`` edges is read from that node's column, and
    the pairs of two hubs from a matrix of the hubs' edges among themselves, made once; so a query's cost follows
    the small nodes' degrees and the hubs' links to each other, not the hubs' degrees."""

    def __init__(self, adjacency: sp.csc_matrix, hub_degree: int = 1_000) -> None:
        self.adjacency = adjacency
        degree = np.diff(adjacency.indptr)
        self.hubs = np.flatnonzero(degree > hub_degree)
        self.hub_number = np.full(adjacency.shape[0], -1, dtype=np.int64)
        self.hub_number[self.hubs] = np.arange(len(self.hubs))
        self.among_hubs = adjacency[:, self.hubs].tocsr()[self.hubs, :].tocsc()

    def subgraph(self, whole: ig.Graph, nodes: np.ndarray) -> ig.Graph:
        """The graph among ``nodes`` (ascending; vertex i is ``nodes[i]``), taken by :meth:`graph` when the hubs
        hold most of the kept nodes' edges, else by igraph (without hubs to skip, its C loop is the faster one:
        at 10,000 notes the kept nodes' edges were 2-4 times the small nodes', and ``graph`` was slower; at
        100,000 notes 13-130 times, and ``graph`` three times faster for auto_turn)."""
        indptr = self.adjacency.indptr
        degree = indptr[nodes + 1] - indptr[nodes]
        if degree.sum() < HUB_SHARE * max(int(degree[self.hub_number[nodes] < 0].sum()), 1):
            return whole.induced_subgraph(nodes.tolist(), implementation="create_from_scratch")
        return self.graph(nodes)

    def graph(self, nodes: np.ndarray) -> ig.Graph:
        """The graph among ``nodes`` (ascending; vertex i is ``nodes[i]``)."""
        indptr, indices, data = self.adjacency.indptr, self.adjacency.indices, self.adjacency.data
        inside = np.zeros(self.adjacency.shape[0], dtype=bool)
        inside[nodes] = True
        numbers = self.hub_number[nodes]
        small, hubs = nodes[numbers < 0], nodes[numbers >= 0]
        lengths = indptr[small + 1] - indptr[small]
        entries = np.repeat(indptr[small] - (np.cumsum(lengths) - lengths), lengths) + np.arange(lengths.sum())
        rows, cols, weights = indices[entries].astype(np.int64), np.repeat(small, lengths), data[entries]
        is_hub = self.hub_number[rows] >= 0
        keep = inside[rows] & (is_hub | (rows > cols))  # a pair of small nodes from its lower end only
        hub_numbers = numbers[numbers >= 0]
        between = self.among_hubs[:, hub_numbers][hub_numbers, :].tocoo()
        upper = between.row > between.col
        pairs = np.concatenate([
            np.column_stack([cols[keep], rows[keep]]),
            np.column_stack([hubs[between.col[upper]], hubs[between.row[upper]]]),
        ])
        with _collector_paused():  # igraph makes a Python pair per edge; a collection pass per few hundred cost more
            graph = ig.Graph(n=len(nodes), edges=np.searchsorted(nodes, pairs), directed=False)
        graph.es["weight"] = np.concatenate([weights[keep], between.data[upper]]).tolist()
        return graph


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic collector off for a moment: the pairs igraph's constructor makes (15,000-150,000 for a
    neighbourhood) are freed at once, but each few hundred set off a collection that walked the search's objects:
    208 ms of a 2,000-node neighbourhood's 230 ms at 100,000 notes, 39 ms without."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
    edges: NeighbourhoodEdges | None = None,
) -> LocalPageRank:
    """PageRank probability of each node in the seeds' neighbourhood for the restart distribution ``reset``
    (weights need not sum to 1). ``walk`` is ``graph``'s :func:`walk_from`, used to choose the
    neighbourhood; ``edges``, when given, takes the neighbourhood's edges (else igraph's ``induced_subgraph``)."""
    if not any(weight > 0 for weight in reset.values()):
        return LocalPageRank({}, np.zeros(0, dtype=np.int64), ig.Graph())
    nodes = neighbourhood(walk, reset, hops, max_nodes)
    whole = len(nodes) == graph.vcount()
    # induced_subgraph numbers the kept vertices in ascending order, as ``nodes`` is.
    if whole:
        sub = graph
    elif edges is not None:
        sub = edges.subgraph(graph, nodes)
    else:
        sub = graph.induced_subgraph(nodes.tolist(), implementation="create_from_scratch")
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
