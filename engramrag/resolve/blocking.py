"""Blocking: the pairs of keys worth scoring, found without comparing all pairs.

One job: propose every pair of key-table rows where some candidate feature can be non-zero. Each feature that can
produce a candidate has its own index: alias and compact-form tables; initials and numeronym tables; words by
their rarest word (containment); character trigrams with a prefix filter derived from the q-gram lemma (edit: a
pair within edit distance d shares at least max(len)+2-3d padded trigrams, so it shares one of the rarest grams
of each side); and, for label vectors, each key's ``embedding_neighbours`` most similar keys above the cosine that
could reach ``min_score``. Only ``shared_documents`` has no index, which is why its weight must stay below
``min_score``. The indexes are exact except where a posting list is longer than ``max_posting`` (a word or trigram
common to that many labels says nothing about identity), for cosine pairs outside the k nearest, and, for vectors
longer than ``embedding_projection``, near the cut of the rotated search. At 40,000 keys with 512-dimensional
vectors this takes about 20 s on two busy cores.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable

import numpy as np
from scipy import sparse

from engramrag.resolve.candidate_config import CandidateConfig
from engramrag.resolve.keytable import KeyTable
from engramrag.resolve.surface import edit_similarity
from engramrag.retrieve.neighbours import BLOCK


def blocked_pairs(table: KeyTable, config: CandidateConfig) -> dict[tuple[int, int], float | None]:
    """Every pair some index proposes -> its edit similarity when the edit index computed it already."""
    pairs: dict[tuple[int, int], float | None] = {}

    def add(a: int, b: int) -> None:
        if a != b:
            pairs.setdefault((a, b) if a < b else (b, a), None)

    by_compact: dict[str, list[int]] = defaultdict(list)
    for i, form in enumerate(table.compact):
        by_compact[form].append(i)
    for group in by_compact.values():
        _add_all(group, add)

    owners: dict[str, list[int]] = defaultdict(list)
    for i in range(len(table.keys)):
        for alias in table.declared[i] | table.written[i]:
            for j in by_compact.get(alias, ()):
                add(i, j)
        for alias in table.names[i]:
            owners[alias].append(i)
    for group in owners.values():
        _add_all(group, add)

    for i, forms in enumerate(table.acronyms):
        for form in forms:
            for j in by_compact.get(form, ()):
                add(i, j)

    for a, b in _containment_pairs(table.tokens, config.max_posting):
        add(a, b)
    for pair, similarity in _edit_pairs(table, config.edit_floor, config.max_posting).items():
        pairs[pair] = similarity
    if table.vectors is not None and config.embedding_neighbours:
        for a, b in _embedding_pairs(table.vectors, table.has_vector, config):
            add(a, b)
    return pairs


def _add_all(group: list[int], add) -> None:
    for x in range(len(group)):
        for y in range(x + 1, len(group)):
            add(group[x], group[y])


def _containment_pairs(tokens: list[frozenset[str]], max_posting: int) -> Iterable[tuple[int, int]]:
    """Pairs where one key's words are all words of the other: the container holds the contained key's rarest
    word, so looking only there finds every such pair."""
    postings: dict[str, list[int]] = defaultdict(list)
    for i, words in enumerate(tokens):
        for word in words:
            postings[word].append(i)
    for i, words in enumerate(tokens):
        if not words:
            continue
        rarest = min(words, key=lambda w: (len(postings[w]), w))
        holders = postings[rarest]
        if len(holders) > max_posting:
            continue
        for j in holders:
            if j != i and words <= tokens[j]:
                yield i, j


def _edit_pairs(table: KeyTable, floor: float, max_posting: int) -> dict[tuple[int, int], float]:
    """Pairs whose edit feature is non-zero, with its value: found by the q-gram lemma with a prefix filter.

    With padded trigrams (L + 2 of them for a string of length L), strings within edit distance d share at
    least max(La, Lb) + 2 - 3d trigrams; similarity >= floor bounds d by (1 - floor) max(La, Lb), so they share
    at least T = (3 floor - 2) L + 2 trigrams for either length L. Ordering every string's trigrams rarest
    first, two sets that share T elements must share one of the first n - T + 1 of each: only those are indexed.
    The pairs sharing an indexed trigram (a sparse product) are then cut by length, numbers, the exact trigram
    count and the character-bag distance (a lower bound of the edit distance) before the Levenshtein distance
    is computed for the few that remain.
    """
    compact, n = table.compact, len(table.compact)
    if n < 2:
        return {}
    grams = [_numbered_trigrams(form) for form in compact]
    ids: dict[tuple[str, int], int] = {}
    full_rows, full_cols = [], []
    for i, items in enumerate(grams):
        for gram in items:
            full_rows.append(i)
            full_cols.append(ids.setdefault(gram, len(ids)))
    frequency = np.bincount(np.asarray(full_cols, dtype=np.int64), minlength=len(ids))
    prefix_rows, prefix_cols = [], []
    for i, items in enumerate(grams):
        length = len(compact[i])
        required = max(1, math.ceil((3 * floor - 2) * length + 2 - 1e-9))
        ranked = sorted(items, key=lambda g: (frequency[ids[g]], g))[: max(1, len(items) - required + 1)]
        prefix_rows += [i] * len(ranked)
        prefix_cols += [ids[g] for g in ranked]
    prefix = _incidence(prefix_rows, prefix_cols, n, len(ids))
    crowded = np.flatnonzero(np.diff(prefix.tocsc().indptr) > max_posting)
    if len(crowded):
        prefix = prefix @ sparse.diags(np.isin(np.arange(len(ids)), crowded, invert=True).astype(np.float32))
    shared = sparse.triu(prefix @ prefix.T, k=1).tocoo()
    a, b = shared.row.astype(np.int64), shared.col.astype(np.int64)

    lengths = np.array([len(form) for form in compact], dtype=np.int64)
    number_ids: dict[tuple[str, ...], int] = {}
    numbers = np.array([number_ids.setdefault(t, len(number_ids)) for t in table.numbers], dtype=np.int64)
    longest = np.maximum(lengths[a], lengths[b])
    budget = np.floor((1 - floor) * longest + 1e-9).astype(np.int64)
    keep = (np.abs(lengths[a] - lengths[b]) <= budget) & (numbers[a] == numbers[b]) & (longest > 0)
    a, b, longest, budget = a[keep], b[keep], longest[keep], budget[keep]
    full = _incidence(full_rows, full_cols, n, len(ids))
    characters = _character_counts(compact)
    survivors = []
    for start in range(0, len(a), 200_000):
        x, y = a[start : start + 200_000], b[start : start + 200_000]
        limit, most = budget[start : start + 200_000], longest[start : start + 200_000]
        overlap = np.asarray(full[x].multiply(full[y]).sum(axis=1)).ravel()
        bag = (np.asarray(abs(characters[x] - characters[y]).sum(axis=1)).ravel() + np.abs(lengths[x] - lengths[y]))
        passing = (overlap >= most + 2 - 3 * limit) & (bag / 2 <= limit)
        survivors += list(zip(x[passing].tolist(), y[passing].tolist(), strict=True))
    found = {}
    for x, y in survivors:
        similarity = edit_similarity(compact[x], compact[y], floor)
        if similarity:
            found[(x, y)] = similarity
    return found


def _incidence(rows: list[int], cols: list[int], n: int, width: int) -> sparse.csr_matrix:
    data = np.ones(len(rows), dtype=np.float32)
    return sparse.csr_matrix((data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
                             shape=(n, max(1, width)))  # fmt: skip


def _character_counts(forms: list[str]) -> sparse.csr_matrix:
    ids: dict[str, int] = {}
    rows, cols = [], []
    for i, form in enumerate(forms):
        for char in form:
            rows.append(i)
            cols.append(ids.setdefault(char, len(ids)))
    return _incidence(rows, cols, len(forms), len(ids))  # duplicate entries add up to counts


def _embedding_pairs(vectors: np.ndarray, present: np.ndarray, config: CandidateConfig) -> set[tuple[int, int]]:
    """Among each key's ``embedding_neighbours`` nearest later keys (in key order; each pair is compared once),
    those whose cosine can lift the pair to ``min_score`` (with at most the shared-documents feature beside it;
    every other feature has its own index).

    ``retrieve.neighbours.nearest_neighbours`` ranks every row fully, which at 40,000 keys costs 18 s of
    partitioning alone; here a block of similarities is first cut at the floor (one comparison), and only the hits
    are ranked. Vectors longer than ``embedding_projection`` are first turned by a fixed random rotation to that
    length (cosines are kept to about 1/sqrt(length)) and searched with the cut lowered by
    ``embedding_projection_margin``; the cut that decides is then applied to the cosine of the full vectors.
    """
    full = np.ascontiguousarray(vectors, dtype=np.float32)
    needed = (1.0 - (1.0 - config.min_score) / (1.0 - config.shared_documents_weight)) / config.embedding_weight
    if needed > 1.0:
        return set()
    cut = config.embedding_floor + max(0.0, needed) * (1.0 - config.embedding_floor)
    matrix, search_cut = full, cut
    if full.shape[1] > config.embedding_projection:
        gaussian = np.random.default_rng(0).standard_normal((full.shape[1], config.embedding_projection))
        matrix = full @ np.linalg.qr(gaussian)[0].astype(np.float32)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), np.float32(1e-12))
        search_cut -= config.embedding_projection_margin
    matrix = np.where(present[:, None], matrix, np.float32(0.0)).astype(np.float32)
    transposed = np.ascontiguousarray(matrix.T)
    k, n = config.embedding_neighbours, matrix.shape[0]
    rows_per_block = max(1, min(BLOCK, n))
    similarities = np.empty((rows_per_block, n), dtype=np.float32)  # reused: fresh pages cost more than the BLAS
    hits = np.empty((rows_per_block, n), dtype=bool)
    low_parts, high_parts = [], []
    for start in range(0, n, rows_per_block):
        stop = min(n, start + rows_per_block)
        width = n - start  # only later keys: each pair is met once
        block, mask = similarities[: stop - start, :width], hits[: stop - start, :width]
        np.matmul(matrix[start:stop], transposed[:, start:], out=block)
        np.greater_equal(block, search_cut, out=mask)
        mask &= np.arange(width)[None, :] > np.arange(stop - start)[:, None]
        busy = np.flatnonzero(mask.any(axis=1))
        if not len(busy):
            continue
        local, cols = np.nonzero(mask[busy])
        rows = busy[local]
        similarity = block[rows, cols]
        order = np.lexsort((-similarity, rows))  # by row, most similar first
        rows, cols = rows[order], cols[order]
        rank = np.arange(len(rows)) - np.searchsorted(rows, rows, side="left")
        rows, cols = rows[rank < k] + start, cols[rank < k] + start
        exact = np.einsum("ij,ij->i", full[rows], full[cols])
        keep = exact >= cut - 1e-6
        low_parts.append(rows[keep])
        high_parts.append(cols[keep])
    if not low_parts:
        return set()
    low, high = np.concatenate(low_parts), np.concatenate(high_parts)
    return set(zip(low.tolist(), high.tolist(), strict=True))


def _numbered_trigrams(text: str) -> list[tuple[str, int]]:
    """Padded trigrams, repeated ones numbered so that the multiset becomes a set."""
    padded = f"\x02\x02{text}\x03\x03"
    seen: Counter[str] = Counter()
    out = []
    for k in range(len(padded) - 2):
        gram = padded[k : k + 3]
        seen[gram] += 1
        out.append((gram, seen[gram]))
    return out
