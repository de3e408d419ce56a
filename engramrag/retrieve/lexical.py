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


def lexical_scores(
    query_terms: Iterable[str],
    postings: Mapping[str, list[int]],
    label_terms: Mapping[int, tuple[str, ...]],
    idf: Mapping[str, float],
    min_coverage: float,
    limit: int,
) -> dict[int, float]:
    """Node -> score for the ``limit`` entities whose labels the query names best (scores scaled to max 1)."""
    present = set(query_terms)
    candidates: set[int] = set()
    for term in present:
        candidates.update(postings.get(term, ()))
    scored: dict[int, float] = defaultdict(float)
    for node in candidates:
        label = label_terms[node]
        total = sum(idf.get(term, 0.0) for term in label)
        matched = sum(idf.get(term, 0.0) for term in label if term in present)
        if total <= 0 or matched / total < min_coverage:
            continue
        scored[node] = (matched / total) * matched
    best = sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:limit]
    if not best:
        return {}
    top = best[0][1]
    return {node: score / top for node, score in best}
