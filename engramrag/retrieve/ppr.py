"""Personalized PageRank over the seeds' neighbourhood, with igraph's PRPACK solver.

With damping d, the walk restarts at a seed with probability 1 - d at every step, so the mass that
reaches h hops away is at most d**h (1/8 at three hops for d = 0.5). Solving on the nodes within a few
hops of the seeds is therefore close to solving on the whole graph, and it keeps a query's cost
independent of the vault's size. When the whole graph is smaller than the cap, it is solved exactly.
"""

from __future__ import annotations

from collections.abc import Mapping

import igraph as ig
import numpy as np


def neighbourhood(graph: ig.Graph, seeds: list[int], hops: int, max_nodes: int) -> list[int]:
    """The seeds and the nodes within ``hops`` of them, nearest first, at most ``max_nodes``."""
    if graph.vcount() <= max_nodes:
        return list(range(graph.vcount()))
    chosen = dict.fromkeys(seeds)
    frontier = list(chosen)
    for _ in range(hops):
        if len(chosen) >= max_nodes or not frontier:
            break
        following: list[int] = []
        for layer in graph.neighborhood(frontier, order=1, mindist=1):
            for node in layer:
                if node not in chosen:
                    chosen[node] = None
                    following.append(node)
        frontier = following
    return list(chosen)[:max_nodes]


def personalized_pagerank(
    graph: ig.Graph, reset: Mapping[int, float], damping: float, hops: int = 3, max_nodes: int = 50_000
) -> dict[int, float]:
    """Node -> PageRank probability for the restart distribution ``reset`` (weights need not sum to 1)."""
    seeds = [node for node, weight in reset.items() if weight > 0]
    if not seeds:
        return {}
    # induced_subgraph numbers the kept vertices in ascending order; keep ours the same.
    nodes = sorted(neighbourhood(graph, seeds, hops, max_nodes))
    whole = len(nodes) == graph.vcount()
    sub = graph if whole else graph.induced_subgraph(nodes, implementation="create_from_scratch")
    position = {node: i for i, node in enumerate(nodes)}
    restart = np.zeros(len(nodes))
    for node, weight in reset.items():
        if weight > 0 and node in position:
            restart[position[node]] = weight
    weights = "weight" if "weight" in sub.es.attributes() else None
    scores = sub.personalized_pagerank(
        directed=False, damping=damping, reset=restart.tolist(), weights=weights, implementation="prpack"
    )
    return {node: scores[i] for i, node in enumerate(nodes)}
