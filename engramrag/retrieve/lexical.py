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

from engramrag.vectors.fts_text import fts_text

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
    return [term for term in fts_text(text).split() if term not in STOP_WORDS]


def term_idf(document_frequency: Mapping[str, int], total: int) -> dict[str, float]:
    """Smoothed inverse document frequency of each term (``total`` documents)."""
    return {term: math.log(1.0 + (total - df + 0.5) / (df + 0.5)) for term, df in document_frequency.items()}


class LabelTerms:
    """The entities' label terms, indexed for the lexical leg (held in memory: it runs on every query)."""

    def __init__(self, rows: Iterable[tuple[int, str]], idf: Mapping[str, float], entity_count: int) -> None:
        listed: dict[str, list[int]] = defaultdict(list)
        label_weight = np.zeros(entity_count)
        for node, term in rows:
            listed[term].append(node)
            label_weight[node] += idf.get(term, 0.0)
        self.postings = {term: np.asarray(nodes, dtype=np.int64) for term, nodes in listed.items()}
        self.idf = dict(idf)
        self.label_weight = label_weight  # each label's total term rarity

    def scores(self, query_terms: Iterable[str], min_coverage: float, limit: int) -> dict[int, float]:
        """Node -> score for the ``limit`` entities whose labels the query names best (scaled to max 1)."""
        present = [term for term in set(query_terms) if term in self.postings and self.idf.get(term, 0.0) > 0]
        if not present:
            return {}
        nodes = np.concatenate([self.postings[term] for term in present])
        rarity = np.concatenate([np.full(len(self.postings[term]), self.idf[term]) for term in present])
        matched = np.bincount(nodes, weights=rarity, minlength=len(self.label_weight))
        candidates = np.flatnonzero(matched)
        coverage = matched[candidates] / self.label_weight[candidates]
        kept = coverage >= min_coverage
        candidates, score = candidates[kept], (coverage * matched[candidates])[kept]
        if not len(candidates):
            return {}
        best = np.lexsort((candidates, -score))[:limit]
        top = score[best[0]]
        return {int(node): float(value / top) for node, value in zip(candidates[best], score[best], strict=True)}
