"""The lexical leg: which entity surface forms occur in the query.

Labels and queries are cut into the same terms as the full-text index (words; CJK runs as overlapping
bigrams, so "박민지" is found in "박민지는"), minus function words. An entity matches when the IDF-weighted
share of its label's terms found in the query reaches a minimum; its score is that share times the IDF
mass matched, so a rare, fully named entity outranks a common word. Term rarity is measured over the
documents' text, not over the labels, so a common word that happens to be a label stays weak.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np

from engramrag.vectors.fts_text import fts_tokens

STOP_WORDS = frozenset(
    [
        "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do", "does", "for",
        "from", "had", "has", "have", "he", "her", "his", "how", "i", "in", "into", "is", "it", "its", "me", "my",
        "no", "not", "of", "on", "or", "our", "she", "so", "than", "that", "the", "their", "them", "then", "there",
        "these", "they", "this", "those", "to", "was", "we", "were", "what", "when", "where", "which", "who",
        "whom", "whose", "why", "will", "with", "would", "you", "your",
    ]
)


def terms(text: str) -> list[str]:
    """The matching terms of a label or query, in order, without function words."""
    return [term for term in fts_tokens(text) if term not in STOP_WORDS]


def smoothed_idf(document_frequency: int, total: int) -> float:
    """BM25's smoothed inverse document frequency of a term in ``document_frequency`` of ``total`` documents."""
    return math.log(1.0 + (total - document_frequency + 0.5) / (document_frequency + 0.5))


def term_idf(document_frequency: Mapping[str, int], total: int) -> dict[str, float]:
    """Smoothed inverse document frequency of each term (``total`` documents)."""
    return {term: smoothed_idf(df, total) for term, df in document_frequency.items()}


class LabelTerms:
    """The entities' label terms, indexed for the lexical leg (held in memory: it runs on every query).

    An entity may have several wordings (a merged cluster: "PostgreSQL", "Postgres"); each is matched on its own
    and the entity scores by its best one.
    """

    def __init__(self, rows: Iterable[tuple[int, int, str]], idf: Mapping[str, float], entity_count: int) -> None:
        wording_of: dict[tuple[int, int], int] = {}
        listed: dict[str, list[int]] = defaultdict(list)
        weights: list[float] = []
        owners: list[int] = []
        for node, wording, term in rows:
            row = wording_of.setdefault((node, wording), len(wording_of))
            if row == len(weights):
                weights.append(0.0)
                owners.append(node)
            listed[term].append(row)
            weights[row] += idf.get(term, 0.0)
        self.postings = {term: np.asarray(found, dtype=np.int64) for term, found in listed.items()}
        self.idf = dict(idf)
        self.wording_weight = np.asarray(weights)  # each wording's total term rarity
        self.owner = np.asarray(owners, dtype=np.int64)  # the entity node of each wording
        self.entity_count = entity_count

    def matched_rarity(self, query_terms: Iterable[str], nodes: Iterable[int]) -> dict[int, float]:
        """For each of ``nodes``, the rarity in (0, 1] of the rarest query term its labels contain: that term's
        IDF over the largest IDF a term can have. A session title "Nicholas and Matthew — session 8" names one
        note, but a question that matches it only through the speakers' names is no more specific than they are."""
        wanted = set(nodes)
        ceiling = max(self.idf.values(), default=1.0) or 1.0
        best: dict[int, float] = {}
        for term in set(query_terms):
            rows = self.postings.get(term)
            rarity = self.idf.get(term, 0.0) / ceiling
            if rows is None or rarity <= 0:
                continue
            for node in self.owner[rows].tolist():
                if node in wanted and rarity > best.get(node, 0.0):
                    best[node] = rarity
        return best

    def scores(self, query_terms: Iterable[str], min_coverage: float, limit: int) -> dict[int, float]:
        """Node -> score for the ``limit`` entities whose labels the query names best (scaled to max 1)."""
        present = [term for term in set(query_terms) if term in self.postings and self.idf.get(term, 0.0) > 0]
        if not present:
            return {}
        found = np.concatenate([self.postings[term] for term in present])
        rarity = np.concatenate([np.full(len(self.postings[term]), self.idf[term]) for term in present])
        matched = np.bincount(found, weights=rarity, minlength=len(self.wording_weight))
        wordings = np.flatnonzero(matched)
        coverage = matched[wordings] / self.wording_weight[wordings]
        kept = coverage >= min_coverage
        wordings, score = wordings[kept], (coverage * matched[wordings])[kept]
        if not len(wordings):
            return {}
        best_of_entity = np.zeros(self.entity_count)
        np.maximum.at(best_of_entity, self.owner[wordings], score)
        nodes = np.flatnonzero(best_of_entity)
        best = nodes[np.lexsort((nodes, -best_of_entity[nodes]))[:limit]]
        top = best_of_entity[best[0]]
        return {int(node): float(best_of_entity[node] / top) for node in best}
