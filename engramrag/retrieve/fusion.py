"""One scoring path from the legs' rankings to the documents' order, and the search's confidence.

Each leg (whole-note BM25, chunk BM25, chunk vectors, PageRank over the graph) ranks documents on its own;
the final order is a weighted reciprocal rank fusion of those rankings: a document's score is
``sum over legs of weight / (k + rank)``. Ranks, not raw scores, because the legs' scores live on unrelated
scales (BM25 grows with query length, PageRank mass with graph size) and a rank cannot be inflated by one
leg's scale. The lexical legs carry most of the weight, so the graph adds evidence and brings in bridges
without taking the head away from a note the words match clearly. The graph's weight also follows how
specific the question's seed entities are: seeds named in a large share of the notes (a chat's speakers,
the team's own name) say little about which note is wanted, so their PageRank ordering counts for little.

The confidence is how much of the question's rarity (IDF mass of its terms) the best few documents contain,
through a logistic curve: a question whose rare words occur in none of them scores low, whatever the legs find.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np


def ranks(scores: Mapping[str, float], tolerance: float = 0.0) -> dict[str, int]:
    """Document -> 1-based rank by score; documents with a non-positive score are not ranked. Scores within
    ``tolerance`` (relative) of the first score of their group share that group's rank ("1, 2, 2, 2, 5"): a
    leg that cannot tell two documents apart (PageRank mass differing by 1%) must not hand the fusion a whole
    rank step between them. Ties are listed by document id, so the order is reproducible."""
    kept = sorted(((doc, score) for doc, score in scores.items() if score > 0), key=lambda item: (-item[1], item[0]))
    out: dict[str, int] = {}
    leader = 0.0
    rank = 0
    for position, (doc, score) in enumerate(kept, start=1):
        if position == 1 or score < leader * (1.0 - tolerance):
            leader, rank = score, position
        out[doc] = rank
    return out


def fuse(
    legs: Mapping[str, Mapping[str, float]],
    weights: Mapping[str, float],
    k: float,
    tolerance: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Weighted reciprocal rank fusion: document -> sum over legs of ``weights[leg] / (k + rank)``, a leg's
    ranks with ties within ``tolerance[leg]`` (:func:`ranks`). A leg with no weight (or missing from
    ``weights``) is ignored."""
    fused: dict[str, float] = defaultdict(float)
    for leg, scores in legs.items():
        weight = weights.get(leg, 0.0)
        if weight <= 0:
            continue
        for doc, rank in ranks(scores, (tolerance or {}).get(leg, 0.0)).items():
            fused[doc] += weight / (k + rank)
    return dict(fused)


def seed_specificity(weights: Mapping[int, float], specificity: Mapping[int, float] | Sequence[float]) -> float:
    """The restart-weighted mean specificity of the seed entities, in [0, 1] (0 with no seeds)."""
    total = sum(weight for weight in weights.values() if weight > 0)
    if total <= 0:
        return 0.0
    return sum(weight * float(specificity[node]) for node, weight in weights.items() if weight > 0) / total


def length_normalised(mass: Mapping[str, float], strength: Mapping[str, float], exponent: float) -> dict[str, float]:
    """PageRank mass divided by the node's edge strength to ``exponent``: a random walk visits a
    well-connected (long) note often whatever the question, so raw mass favours long notes."""
    return {doc: value / max(strength.get(doc, 1.0), 1e-12) ** exponent for doc, value in mass.items()}


def coverage(query_idf: Sequence[float], present: np.ndarray) -> float:
    """The share of the question's IDF mass that the documents hold together: ``present`` is a
    (documents, terms) boolean matrix, ``query_idf`` each term's IDF. Together, because a multi-hop question's
    words are spread over the notes that answer it. 0 for no terms or no documents."""
    idf = np.asarray(query_idf, dtype=np.float64)
    if not len(idf) or idf.sum() <= 0 or present.size == 0:
        return 0.0
    return float(present.any(axis=0).astype(np.float64) @ idf / idf.sum())


def confidence(covered: float, slope: float, midpoint: float) -> float:
    """The logistic curve from coverage to a confidence in [0, 1]: 0.5 at ``midpoint``."""
    return 1.0 / (1.0 + math.exp(-slope * (covered - midpoint)))


def with_reserved_slots(
    order: Sequence[tuple[str, float]], graph: Mapping[str, float], head: int, slots: int
) -> list[tuple[str, float]]:
    """The fused order with up to ``slots`` places after the first ``head`` reserved for documents among the
    graph's own best ``head + slots`` that the head lacks: bridges (a multi-hop question's middle passage names
    neither end of the question, so no lexical leg finds it) enter the results without reordering the head. A
    bridge takes the score of the document it displaced, so scores still fall down the list."""
    if slots <= 0 or not graph:
        return list(order)
    ranked = list(order)
    top = ranked[:head]
    chosen = {doc for doc, _ in top}
    # Only the graph's own top places may bridge: a document the walk ranks far down is not evidence.
    graph_top = sorted(graph.items(), key=lambda item: (-item[1], item[0]))[: head + slots]
    bridges = [doc for doc, _ in graph_top if doc not in chosen][:slots]
    rest = [item for item in ranked[head:] if item[0] not in bridges]
    displaced = [score for _, score in ranked[head : head + len(bridges)]]
    if len(displaced) < len(bridges):
        floor = displaced[-1] if displaced else (top[-1][1] if top else 0.0)
        displaced += [floor] * (len(bridges) - len(displaced))
    return top + list(zip(bridges, displaced, strict=True)) + rest
