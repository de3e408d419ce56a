"""Blocking: the pairs of keys worth scoring, found without comparing all pairs.

One job: propose every pair of key-table rows where some candidate feature can be non-zero. Each feature that can
produce a candidate has its own index: alias and compact-form tables; initials and numeronym tables; words by
their rarest word (containment); character trigrams with a prefix filter derived from the q-gram lemma (edit: a
pair within edit distance d shares at least max(len)+2-3d padded trigrams, so it shares one of the rarest grams
of each side); and, for label vectors, each key's ``embedding_neighbours`` most similar keys above the cosine that
could reach ``min_score``. Only ``shared_documents`` has no index, which is why its weight must stay below
``min_score``. The indexes are exact except where a posting list is longer than ``max_posting`` (a word or trigram
common to that many labels says nothing about identity), for cosine pairs outside the k nearest, and, for vectors
longer than ``embedding_projection``, near the cut of the rotated search. The embedding lists are kept between
runs (``resolve.embedding_lists``), so a run searches only the keys whose vector is new or changed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import chain

import numpy as np
from scipy import sparse

from engramrag.resolve.candidate_config import CandidateConfig
from engramrag.resolve.embedding_lists import (
    ListCache,
    proposed_rows,
    search_settings,
    searched_vectors,
    update_lists,
    vector_digests,
)
from engramrag.resolve.form_grams import FormGrams, FormIds
from engramrag.resolve.keytable import KeyTable
from engramrag.resolve.surface import edit_similarity
from engramrag.resolve.surface_pairs import SurfacePairs
from engramrag.run_memo import RunMemo, read_only


def blocked_pairs(
    table: KeyTable,
    config: CandidateConfig,
    lists: ListCache | None = None,
    surface: dict[tuple[int, int], float | None] | None = None,
    digests: list[str] | None = None,
) -> dict[tuple[int, int], float | None]:
    """Every pair some index proposes -> its edit similarity when the edit index computed it already. ``lists``:
    the embedding lists of the previous run (``previous``), and where this run's are left (``update``).
    ``surface``: the pairs of ``surface_pairs`` for this table's keys when known (``resolve.surface_pairs``).
    ``digests``: the keys' ``vector_digests`` when the caller has them. The pairs of ``blocked_rows``, as a dict."""
    kept = SurfacePairs.of(surface_pairs(table, config) if surface is None else surface, "")
    left, right, edits = blocked_rows(table, config, kept, lists, digests)
    rows = zip(left.tolist(), right.tolist(), edits.tolist(), strict=True)
    return {(i, j): None if edit != edit else edit for i, j, edit in rows}  # NaN: no edit similarity


def blocked_rows(
    table: KeyTable,
    config: CandidateConfig,
    surface: SurfacePairs,
    lists: ListCache | None = None,
    digests: list[str] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of ``blocked_pairs`` as arrays (left, right, edit similarity or NaN), sorted by left then right,
    with the surface legs given as arrays (``resolve.surface_pairs``). At 100,000 notes the 3 M pairs went through a
    dict three times (from the kept arrays, a copy, and back to arrays): 5 s of an edit."""
    legs = [_alias_leg(table)]
    if table.vectors is not None and table.has_vector is not None:
        # As arrays: the embedding leg's pairs as a set of tuples, then flattened, took 2.5 s at 100,000 notes.
        legs.append(np.column_stack(_embedding_rows(table, config, lists, digests)).astype(np.int64, copy=False))
    found = np.concatenate(legs)
    low, high = found.min(axis=1), found.max(axis=1)
    low, high = low[low != high], high[low != high]
    size = np.int64(max(1, len(table.keys)))
    keys = np.concatenate([surface.left * size + surface.right, low * size + high])
    edits = np.concatenate([surface.edit, np.full(len(low), np.nan)])
    unique, first = np.unique(keys, return_index=True)  # a surface pair keeps its edit similarity
    left, right = np.divmod(unique, size)
    return left, right, edits[first]


def surface_pairs(table: KeyTable, config: CandidateConfig) -> dict[tuple[int, int], float | None]:
    """The pairs found from the keys' surface forms alone (one compact form, an acronym of the other, word
    containment, edit similarity) -> the edit similarity where the edit index computed it. A function of the set of
    keys and the settings only: aliases and vectors are the other legs."""
    pairs: dict[tuple[int, int], float | None] = {}
    add = _adder(pairs)
    by_compact = _by_compact(table)
    for group in by_compact.values():
        _add_all(group, add)
    for i, forms in enumerate(table.acronyms):
        for form in forms:
            for j in by_compact.get(form, ()):
                add(i, j)
    for a, b in _containment_pairs(table.tokens, config.max_posting):
        add(a, b)
    for pair, similarity in _edit_pairs(table, config.edit_floor, config.max_posting).items():
        pairs[pair] = similarity
    return pairs


def _alias_leg(table: KeyTable) -> np.ndarray:
    """``_alias_pairs`` as rows of an array; the last run's when the keys and their aliases and names are the same
    (a one-note edit mostly changes neither: walking every key's aliases took 60 ms of each edit at 10,000 notes)."""
    inputs = (tuple(table.keys), tuple(table.declared), tuple(table.written), tuple(table.names))
    with _ALIAS_LEGS.run() as made:
        # Flattened as they come: np.array over a list of a million tuples took 2.7 s at 100,000 notes.
        return made(inputs, lambda: read_only(np.fromiter(chain.from_iterable(_alias_pairs(table)),
                                                          dtype=np.int64).reshape(-1, 2)))  # fmt: skip


_ALIAS_LEGS: RunMemo[tuple, np.ndarray] = RunMemo()


def _alias_pairs(table: KeyTable) -> Iterable[tuple[int, int]]:
    """Pairs (in either order, possibly a row with itself) where one key's alias is the other's compact form, or two
    keys share a name that is not generic."""
    by_compact = _by_compact(table)
    owners: dict[str, list[int]] = defaultdict(list)
    for i in range(len(table.keys)):
        for alias in table.declared[i] | table.written[i]:
            for j in by_compact.get(alias, ()):
                yield i, j
        for alias in table.names[i]:
            owners[alias].append(i)
    for group in owners.values():
        for x in range(len(group)):
            for y in range(x + 1, len(group)):
                yield group[x], group[y]


def _adder(pairs: dict[tuple[int, int], float | None]) -> Callable[[int, int], None]:
    """Adds a pair of distinct rows to ``pairs`` (smaller row first), keeping an edit similarity already there."""

    def add(a: int, b: int) -> None:
        if a != b:
            pairs.setdefault((a, b) if a < b else (b, a), None)

    return add


def _by_compact(table: KeyTable) -> dict[str, list[int]]:
    by_compact: dict[str, list[int]] = defaultdict(list)
    for i, form in enumerate(table.compact):
        by_compact[form].append(i)
    return by_compact


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
    cut = _FORM_GRAMS.of(compact)
    width = len(_FORM_GRAMS.grams)
    gram_counts = np.array([len(ids.grams) for ids in cut], dtype=np.int64)
    full_rows = np.repeat(np.arange(n, dtype=np.int64), gram_counts)
    full_cols = np.concatenate([ids.grams for ids in cut])
    frequency = np.bincount(full_cols, minlength=width)
    # Each trigram's place in the order (rarest first, then by the trigram), so a string's are sorted as integers.
    gram_at = np.lexsort((_FORM_GRAMS.gram_rank(), frequency))  # the trigram at each place
    place = np.empty(width, dtype=np.int64)
    place[gram_at] = np.arange(width, dtype=np.int64)
    lengths = np.array([len(form) for form in compact], dtype=np.int64)
    required = np.maximum(1, np.ceil((3 * floor - 2) * lengths + 2 - 1e-9)).astype(np.int64)
    # Each string's trigrams rarest first, by one sort of (row, place) packed in an integer (a string's trigrams
    # are distinct), and of them the first ``len - required + 1``.
    ranked = gram_at[np.sort(full_rows * width + place[full_cols]) % width]
    starts = np.cumsum(gram_counts) - gram_counts
    position = np.arange(len(full_cols), dtype=np.int64) - np.repeat(starts, gram_counts)
    chosen = position < np.repeat(np.maximum(1, gram_counts - required + 1), gram_counts)
    prefix = _incidence(full_rows[chosen], ranked[chosen], n, width)
    crowded = np.flatnonzero(np.diff(prefix.tocsc().indptr) > max_posting)
    if len(crowded):
        prefix = prefix @ sparse.diags(np.isin(np.arange(width), crowded, invert=True).astype(np.float32))
    shared = sparse.triu(prefix @ prefix.T, k=1).tocoo()
    a, b = shared.row.astype(np.int64), shared.col.astype(np.int64)

    number_ids: dict[tuple[str, ...], int] = {}
    numbers = np.array([number_ids.setdefault(t, len(number_ids)) for t in table.numbers], dtype=np.int64)
    longest = np.maximum(lengths[a], lengths[b])
    budget = np.floor((1 - floor) * longest + 1e-9).astype(np.int64)
    keep = (np.abs(lengths[a] - lengths[b]) <= budget) & (numbers[a] == numbers[b]) & (longest > 0)
    a, b, longest, budget = a[keep], b[keep], longest[keep], budget[keep]
    full = _incidence(full_rows, full_cols, n, width)
    characters = _character_counts(cut)
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


def _incidence(rows: np.ndarray, cols: np.ndarray, n: int, width: int) -> sparse.csr_matrix:
    data = np.ones(len(rows), dtype=np.float32)
    return sparse.csr_matrix((data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
                             shape=(n, max(1, width)))  # fmt: skip


def _character_counts(cut: list[FormIds]) -> sparse.csr_matrix:
    """Per form, how often each character is in it (a row per form, a column per character id)."""
    lengths = np.array([len(ids.characters) for ids in cut], dtype=np.int64)
    rows = np.repeat(np.arange(len(cut), dtype=np.int64), lengths)
    columns = np.concatenate([ids.characters for ids in cut]) if cut else np.zeros(0, dtype=np.int64)
    return _incidence(rows, columns, len(cut), len(_FORM_GRAMS.character_ids))  # duplicate entries add up to counts


def _embedding_rows(
    table: KeyTable, config: CandidateConfig, lists: ListCache | None, digests: list[str] | None
) -> tuple[np.ndarray, np.ndarray]:
    settings = search_settings(config, table.vectors.shape[1])
    if settings is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    digests = digests if digests is not None else vector_digests(table.vectors, table.has_vector)
    update = update_lists(lists.previous if lists else None, table.keys, digests,
                          lambda: searched_vectors(table.vectors, table.has_vector, settings), settings)  # fmt: skip
    if lists is not None:
        lists.update = update
    return proposed_rows(update.lists, table.vectors, settings, lists)


_FORM_GRAMS = FormGrams()  # this process's trigram and character ids (``resolve.form_grams``)
