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


def ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """Document -> 1-based rank by score (ties broken by document id, so the order is reproducible);
    documents with a non-positive score are not ranked."""
    kept = sorted(((doc, score) for doc, score in scores.items() if score > 0), key=lambda item: (-item[1], item[0]))
    return {doc: position for position, (doc, _) in enumerate(kept, start=1)}


def fuse(legs: Mapping[str, Mapping[str, float]], weights: Mapping[str, float], k: float) -> dict[str, float]:
    """Weighted reciprocal rank fusion: document -> sum over legs of ``weights[leg] / (k + rank)``.
    A leg with no weight (or missing from ``weights``) is ignored."""
    fused: dict[str, float] = defaultdict(float)
    for leg, scores in legs.items():
        weight = weights.get(leg, 0.0)
        if weight <= 0:
            continue
        for doc, rank in ranks(scores).items():
            fused[doc] += weight / (k + rank)
    return dict(fused)


def seed_specificity(weights: Mapping[int, float], specificity: Sequence[float] | np.ndarray) -> float:
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
