"""The embedding leg of resolution's blocking on small vectors: each key's nearest later keys, searched whole or
updated from the previous run's lists, always the same as a brute-force ranking."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engramrag.resolve.candidate_config import CandidateConfig
from engramrag.resolve.embedding_lists import (
    DIGITS,
    ListCache,
    NeighbourLists,
    PairCuts,
    proposed_pairs,
    search_lists,
    search_settings,
    searched_vectors,
    update_lists,
    vector_digests,
)


def _clustered(rng: np.random.Generator, n: int, dimension: int) -> np.ndarray:
    """Unit vectors in tight groups, so that many pairs pass the cut and lists fill up."""
    centres = rng.standard_normal((max(1, n // 6), dimension))
    vectors = centres[rng.integers(0, len(centres), n)] + 0.25 * rng.standard_normal((n, dimension))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _brute_force(searched: np.ndarray, search_cut: float, k: int) -> list[list[int]]:
    n = searched.shape[0]
    similarity = np.round(searched @ searched.T, DIGITS)
    lists = []
    for i in range(n):
        later = [(-similarity[i, j], j) for j in range(i + 1, n) if similarity[i, j] >= round(search_cut, DIGITS)]
        lists.append([j for _, j in sorted(later)[:k]])
    return lists


@pytest.mark.parametrize("dimension", [32, 160])  # searched as they are / rotated to embedding_projection
def test_searched_lists_are_each_keys_best_later_keys_above_the_cut(dimension: int) -> None:
    rng = np.random.default_rng(3)
    config = CandidateConfig(embedding_neighbours=4, embedding_projection=128)
    vectors = _clustered(rng, 300, dimension)
    present = np.ones(len(vectors), dtype=bool)
    present[7] = False  # a key without a vector is in no list
    settings = search_settings(config, dimension)
    assert settings is not None and (settings.rotate_to == 128) == (dimension > 128)
    searched = searched_vectors(vectors, present, settings)
    keys = [f"key {i:04d}" for i in range(len(vectors))]
    lists = search_lists(keys, vector_digests(vectors, present), searched, settings)
    expected = _brute_force(searched, settings.search_cut, settings.k)
    assert [[j for j in row if j >= 0] for row in lists.indices.tolist()] == expected
    assert sum(len(row) == settings.k for row in expected) > 20  # full lists exist: the cap is exercised
    assert 7 not in lists.indices and not (lists.indices[7] >= 0).any()
    pairs = proposed_pairs(lists, vectors, settings)
    assert pairs and all(i < j for i, j in pairs)
    assert all(float(vectors[i] @ vectors[j]) >= settings.cut - 1e-5 for i, j in pairs)


def test_an_update_equals_a_whole_search_and_searches_only_what_changed(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    config = CandidateConfig(embedding_neighbours=4, embedding_projection=128)
    vectors = _clustered(rng, 400, 160)
    keys = [f"key {i:04d}" for i in range(len(vectors))]
    settings = search_settings(config, vectors.shape[1])
    present = np.ones(len(keys), dtype=bool)
    first = search_lists(keys, vector_digests(vectors, present), searched_vectors(vectors, present, settings), settings)
    first.save(tmp_path)
    previous = NeighbourLists.load(tmp_path)
    assert previous is not None and previous.keys == keys

    # The edit: three keys gone, two with another vector, four new (sorted in among the others).
    gone = {11, 150, 151}
    changed = {40, 300}
    edited = {keys[i]: vectors[i] for i in range(len(keys)) if i not in gone}
    for i in changed:
        edited[keys[i]] = vectors[(i + 1) % len(keys)]
    for name, source in (("key 0005a", 5), ("key 0099a", 99), ("key 0250a", 250), ("key 9999", 0)):
        near = vectors[source] + 0.05 * rng.standard_normal(vectors.shape[1]).astype(np.float32)
        edited[name] = near / np.linalg.norm(near)
    new_keys = sorted(edited)
    new_vectors = np.stack([edited[key] for key in new_keys])
    new_present = np.ones(len(new_keys), dtype=bool)
    searched = searched_vectors(new_vectors, new_present, settings)
    digests = vector_digests(new_vectors, new_present)

    update = update_lists(previous, new_keys, digests, searched, settings)
    whole = search_lists(new_keys, digests, searched, settings)
    assert np.array_equal(update.lists.indices, whole.indices)
    assert np.array_equal(update.lists.similarities, whole.similarities)
    assert update.searched + update.kept == len(new_keys)
    assert 6 <= update.searched < 40  # the six new or changed keys, and the few full lists that lost a member
    assert proposed_pairs(update.lists, new_vectors, settings) == proposed_pairs(whole, new_vectors, settings)
    # Given as a function, the searched vectors are made once for the edit, and not at all when no key's vector
    # is new or changed (every list kept).
    calls = []
    lazily = update_lists(previous, new_keys, digests, lambda: calls.append(1) or searched, settings)
    assert calls == [1] and np.array_equal(lazily.lists.indices, whole.indices)

    def never() -> np.ndarray:
        raise AssertionError("nothing to search")

    unchanged = update_lists(update.lists, new_keys, digests, never, settings)
    assert unchanged.kept == len(new_keys) and unchanged.searched == 0
    assert np.array_equal(unchanged.lists.indices, whole.indices)
    assert np.array_equal(unchanged.lists.similarities, whole.similarities)

    # The listed pairs' outcomes, kept from the first run: only pairs with a new or changed vector are compared,
    # and the proposed pairs are those of comparing every pair.
    first_cache = ListCache()
    proposed_pairs(first, vectors, settings, first_cache)
    first_cache.cuts.save(tmp_path)
    cache = ListCache(previous_cuts=PairCuts.load(tmp_path))
    kept = proposed_pairs(update.lists, new_vectors, settings, cache)
    assert kept == proposed_pairs(whole, new_vectors, settings) and kept
    listed = int((update.lists.indices >= 0).sum())
    assert first_cache.cuts.compared == int((first.indices >= 0).sum())
    assert 0 < cache.cuts.compared < listed // 4  # the pairs touching the six new or changed keys, not all
    # A vector changed under the same key is compared again: its old outcome is not reused.
    moved = new_vectors.copy()
    moved[10] = moved[200]
    moved_searched = searched_vectors(moved, new_present, settings)
    moved_lists = search_lists(new_keys, vector_digests(moved, new_present), moved_searched, settings)
    again = ListCache(previous_cuts=cache.cuts)
    assert proposed_pairs(moved_lists, moved, settings, again) == proposed_pairs(moved_lists, moved, settings)
    assert 0 < again.cuts.compared < listed // 4
    # The same lists again: every outcome is kept, taken as it was (nothing compared, sorted or written again).
    same = ListCache(previous_cuts=cache.cuts, update=unchanged)
    assert proposed_pairs(update.lists, new_vectors, settings, same) == kept
    assert same.cuts.compared == 0 and same.cuts.mixed is cache.cuts.mixed and unchanged.unchanged
    saved = tmp_path / "saved"
    same.save(saved)
    assert not saved.exists()  # the lists and outcomes taken as they were are the files' already
    # Another cut: nothing is reused.
    other = ListCache(previous_cuts=cache.cuts)
    proposed_pairs(update.lists, new_vectors, wider_cut := search_settings(CandidateConfig(embedding_floor=0.5,
                   embedding_neighbours=4, embedding_projection=128), 160), other)  # fmt: skip
    assert wider_cut.fingerprint != settings.fingerprint and other.cuts.compared == listed

    # Other settings: nothing is kept.
    wider = search_settings(CandidateConfig(embedding_neighbours=6, embedding_projection=128), 160)
    assert update_lists(previous, new_keys, digests, searched, wider).kept == 0


def test_unreadable_lists_are_searched_afresh(tmp_path: Path) -> None:
    (tmp_path / "embedding_lists.npz").write_bytes(b"not an npz file")
    assert NeighbourLists.load(tmp_path) is None
    assert NeighbourLists.load(tmp_path / "missing") is None


def test_vector_digests_kept_by_key_are_the_digests_computed_afresh() -> None:
    """Issue 16: a run's keys mostly keep their vectors; their digests are kept by key, not hashed again."""
    rng = np.random.default_rng(3)
    keys = [f"key {number:03d}" for number in range(300)]
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    present = np.ones(300, dtype=bool)
    present[7] = False
    first = vector_digests(vectors, present, keys)
    assert first == vector_digests(vectors, present) and first[7] == ""
    # One key changed its vector, one is gone, one is new, one gained a vector; the rows are in another order.
    changed = vectors.copy()
    changed[5] += 1.0
    new_keys = [*keys[1:], "key new"]
    new_vectors = np.vstack([changed[1:], rng.normal(size=(1, 16)).astype(np.float32)])
    new_present = np.ones(300, dtype=bool)
    order = rng.permutation(300)
    new_keys, new_vectors, new_present = [new_keys[i] for i in order], new_vectors[order], new_present[order]
    again = vector_digests(new_vectors, new_present, new_keys)
    assert again == vector_digests(new_vectors, new_present)
    assert again[new_keys.index("key 007")] != "" and again[new_keys.index("key 005")] != first[5]


def test_the_very_read_only_rows_digested_last_keep_their_digests_and_a_writable_matrix_is_digested_again() -> None:
    keys = [f"key {number:03d}" for number in range(50)]
    vectors = np.random.default_rng(4).normal(size=(50, 8)).astype(np.float32)
    present = np.ones(50, dtype=bool)
    writable = vectors.copy()
    first = vector_digests(writable, present, keys)
    writable[3] += 1.0  # a writable matrix changed in place after it was digested
    assert vector_digests(writable, present, keys)[3] != first[3]
    vectors.setflags(write=False)
    second = vector_digests(vectors, present, keys)
    assert vector_digests(vectors, present, keys) == second == vector_digests(vectors.copy(), present)
    fewer = present.copy()
    fewer[9] = False
    assert vector_digests(vectors, fewer, keys)[9] == ""  # the same rows, another presence: not taken as they were
