"""The four seeding legs and the hub correction.

- lexical: entity surface forms named in the query (see lexical.py), scaled to a maximum of 1;
- entity: query vs entity-label embeddings, hub-corrected (CSLS), unscaled;
- triple: query vs triple embeddings; a triple that stands out seeds its subject and object, unscaled;
- passage: chunk embeddings (dense) and BM25, per document, each scaled to a maximum of 1.

The embedding legs are deliberately not rescaled to 1: how far a match stands out is the evidence, and
rescaling would give the best of a set of poor matches the weight of a label the query names verbatim
(on MuSiQue with the hash embedder, rescaled embedding seeds cost 15 points of ALL@10; eval/README.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Seeds:
    lexical: dict[int, float] = field(default_factory=dict)
    entity: dict[int, float] = field(default_factory=dict)
    triple: dict[int, float] = field(default_factory=dict)
    dense: dict[str, float] = field(default_factory=dict)  # doc_id -> best chunk cosine (raw)
    bm25: dict[str, float] = field(default_factory=dict)  # doc_id -> best chunk BM25 (raw)
    notes: dict[str, float] = field(default_factory=dict)  # doc_id -> whole-note BM25 (raw)
    best_chunk: dict[str, dict] = field(default_factory=dict)  # doc_id -> the chunk that scored best
    triples: list[dict] = field(default_factory=list)  # the triple hits, for provenance

    def entity_weights(self) -> dict[int, float]:
        """The restart weight of each seed entity: the sum of its leg scores."""
        total: dict[int, float] = defaultdict(float)
        for leg in (self.lexical, self.entity, self.triple):
            for node, score in leg.items():
                total[node] += score
        return dict(total)

    def passage_scores(self, use_dense: bool = True) -> dict[str, float]:
        """Per document: the mean of its scaled dense, chunk BM25 and whole-note BM25 scores (legs that ran),
        scaled to max 1: the passages' share of the PageRank restart."""
        legs = [scaled(leg) for leg in ((self.dense if use_dense else {}), self.bm25, self.notes) if leg]
        if not legs:
            return {}
        combined: dict[str, float] = defaultdict(float)
        for leg in legs:
            for doc, score in leg.items():
                combined[doc] += score / len(legs)
        return scaled(combined)


def scaled(scores: Mapping, floor: float = 0.0) -> dict:
    """Scores divided by the largest; non-positive ones dropped."""
    kept = {key: value for key, value in scores.items() if value > floor}
    if not kept:
        return {}
    top = max(kept.values())
    return {key: value / top for key, value in kept.items()}


def query_density(cosines: Sequence[float], k: int) -> float:
    """Mean similarity of the query to its ``k`` nearest candidates (CSLS's r_query)."""
    if len(cosines) == 0:
        return 0.0
    return float(np.sort(np.asarray(cosines, dtype=np.float64))[::-1][:k].mean())


def hub_corrected(
    nodes: Sequence[int], cosines: Sequence[float], densities: Sequence[float], k: int, limit: int
) -> dict[int, float]:
    """CSLS seeds: 2 cos(q, e) - r_query - r_entity, the best ``limit`` of those above zero.

    A label that sits in a dense crowd of labels (a hub: "system", "2023") is similar to every query a
    little; subtracting its local density r_entity (precomputed: mean similarity to its k nearest labels)
    stops it from out-seeding the specific entity the query names, and subtracting the query's own
    density r_query keeps only labels that stand out from what the query is vaguely close to. The weights
    are not rescaled: a weak embedder (the hash one) yields small weights and so defers to the lexical
    leg, a strong one yields large ones. The raw top-1 by cosine stays a seed, at no less than the weakest
    kept seed, whenever any label stands out: correction reorders the candidates but never drops the
    single closest label in favour of weaker ones.
    """
    if not nodes:
        return {}
    cos = np.asarray(cosines, dtype=np.float64)
    csls = 2.0 * cos - query_density(cos, k) - np.asarray(densities, dtype=np.float64)
    order = [i for i in np.argsort(-csls, kind="stable")[:limit] if csls[i] > 0]
    weights = {int(nodes[i]): float(csls[i]) for i in order}
    if weights:
        top_raw = int(nodes[int(np.argmax(cos))])
        weights[top_raw] = max(weights.get(top_raw, 0.0), min(weights.values()))
    return weights


def triple_seeds(hits: Sequence[dict], node_of_label: Mapping[str, int], k: int) -> dict[int, float]:
    """A triple that stands out (cosine above the query's mean over its ``k`` nearest triples) seeds its
    subject and object with that margin; an entity keeps the best margin of its triples."""
    r_query = query_density([hit["score"] for hit in hits], k)
    best: dict[int, float] = {}
    for hit in hits:
        margin = hit["score"] - r_query
        if margin <= 0:
            continue
        for label in (hit["subject"], hit["object"]):
            node = node_of_label.get(label)
            if node is not None and margin > best.get(node, 0.0):
                best[node] = margin
    return best


def best_per_document(hits: Sequence[dict]) -> tuple[dict[str, float], dict[str, dict]]:
    """doc_id -> its best chunk score, and doc_id -> that chunk."""
    scores: dict[str, float] = {}
    chunks: dict[str, dict] = {}
    for hit in hits:
        doc = hit["doc_id"]
        if hit["score"] > scores.get(doc, float("-inf")):
            scores[doc] = hit["score"]
            chunks[doc] = hit
    return scores, chunks
