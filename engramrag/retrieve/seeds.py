"""The four seeding legs and the hub correction. Each leg returns node -> score scaled to a maximum of 1.

- lexical: entity surface forms named in the query (see lexical.py);
- entity: query vs entity-label embeddings, hub-corrected (CSLS);
- triple: query vs triple embeddings; a triple seeds its subject and object;
- passage: chunk embeddings (dense) and BM25, per document.
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
    best_chunk: dict[str, dict] = field(default_factory=dict)  # doc_id -> the chunk that scored best
    triples: list[dict] = field(default_factory=list)  # the triple hits, for provenance

    def entity_weights(self) -> dict[int, float]:
        """The restart weight of each seed entity: the sum of its leg scores."""
        total: dict[int, float] = defaultdict(float)
        for leg in (self.lexical, self.entity, self.triple):
            for node, score in leg.items():
                total[node] += score
        return dict(total)

    def passage_scores(self) -> dict[str, float]:
        """Per document: the mean of its scaled dense and BM25 scores (legs that ran), scaled to max 1."""
        legs = [scaled(leg) for leg in (self.dense, self.bm25) if leg]
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


def hub_corrected(
    nodes: Sequence[int], cosines: Sequence[float], densities: Sequence[float], weight: float, limit: int
) -> dict[int, float]:
    """CSLS seeds: cosine minus ``weight`` x the entity's local density, best ``limit`` kept, scaled to max 1.

    A label that sits in a dense crowd of labels (a hub: "system", "2023") is similar to every query a
    little; subtracting its density stops it from out-seeding the specific entity the query names. With
    weight 0.5 the order is CSLS's (2 cos - r_query - r_entity, r_query being the same for every entity).
    The raw top-1 by cosine is always kept as a seed, at no less than the weakest kept seed: correction
    reorders the candidates but never removes the single closest label.
    """
    if not nodes:
        return {}
    cos = np.asarray(cosines, dtype=np.float64)
    corrected = cos - weight * np.asarray(densities, dtype=np.float64)
    order = np.argsort(-corrected, kind="stable")[:limit]
    shift = min(0.0, float(corrected[order].min()))  # keep weights positive when all corrected scores are low
    weights = {int(nodes[i]): float(corrected[i] - shift) + 1e-6 for i in order}
    top_raw = int(np.argmax(cos))
    floor = min(weights.values())
    weights[int(nodes[top_raw])] = max(weights.get(int(nodes[top_raw]), 0.0), floor)
    return scaled(weights)


def triple_seeds(hits: Sequence[dict], node_of_label: Mapping[str, int]) -> dict[int, float]:
    """Each triple hit seeds its subject and object entity with its cosine (the best triple per entity)."""
    best: dict[int, float] = {}
    for hit in hits:
        for label in (hit["subject"], hit["object"]):
            node = node_of_label.get(label)
            if node is not None and hit["score"] > best.get(node, 0.0):
                best[node] = hit["score"]
    return scaled(best)


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
