"""Clusters from automatic pairs and people's verdicts, and the kind-compatibility table."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from engramrag.decisions import MERGE, DecisionsStore, Verdict
from engramrag.resolve.clusters import cluster
from engramrag.resolve.kinds import CORE_KINDS, compatible, core_kind

KEYS = ["a", "b", "c", "d", "e"]


@pytest.fixture
def store(tmp_path: Path) -> DecisionsStore:
    return DecisionsStore(tmp_path / "decisions.sqlite")


def _verdict(id: int, left: str, right: str, verdict: str, operator: str = "minji") -> Verdict:
    left, right = sorted((left, right))
    return Verdict(id, MERGE, left, right, verdict, operator, "2025-01-01T00:00:00+00:00")


def test_a_persons_same_joins_and_singletons_stay(store: DecisionsStore) -> None:
    store.decide(MERGE, "d", "b", "same", "minji")
    result = cluster(KEYS, [], store.current(MERGE), threshold=0.9)
    assert result.cluster_of == {"a": "a", "b": "b", "c": "c", "d": "b", "e": "e"}
    assert result.members("b") == ("b", "d")
    assert result.members("a") == ("a",)
    assert result.blocked == () and result.conflicts == ()
    with pytest.raises(KeyError):
        result.members("d")


def test_automatic_pairs_join_only_at_or_above_the_threshold() -> None:
    result = cluster(KEYS, [("a", "b", 0.9), ("c", "d", 0.89), ("e", "d", 0.95)], [], threshold=0.9)
    assert result.clusters == {"a": ("a", "b"), "c": ("c",), "d": ("d", "e")}


def test_distinct_blocks_a_direct_automatic_merge(store: DecisionsStore) -> None:
    distinct = store.decide(MERGE, "a", "b", "distinct", "minji")
    result = cluster(KEYS, [("a", "b", 0.99)], store.current(MERGE), threshold=0.5)
    assert result.cluster_of["a"] != result.cluster_of["b"]
    # A person's verdict on the exact pair wins before any check: the pair is simply not a merge.
    assert result.blocked == ()
    other = cluster(KEYS, [("a", "b", 0.99)], [], threshold=0.5)
    assert other.cluster_of["b"] == "a"
    assert distinct.verdict == "distinct"


def test_distinct_blocks_a_transitive_automatic_merge(store: DecisionsStore) -> None:
    distinct = store.decide(MERGE, "c", "a", "distinct", "minji")
    result = cluster(KEYS, [("a", "b", 0.9), ("b", "c", 0.8)], store.current(MERGE), threshold=0.5)
    assert result.cluster_of["a"] != result.cluster_of["c"]
    assert result.cluster_of["b"] == result.cluster_of["a"]
    assert len(result.blocked) == 1
    blocked = result.blocked[0]
    assert (blocked.left, blocked.right, blocked.source, blocked.score) == ("b", "c", "automatic", 0.8)
    assert blocked.cause == "distinct" and blocked.cannot_link == ("a", "c")
    assert blocked.distinct_id == distinct.id and blocked.distinct_operator == "minji"
    assert "'a' and 'c'" in blocked.reason and "minji" in blocked.reason
    assert result.conflicts == ()


def test_the_higher_score_wins_the_join_that_a_distinct_allows(store: DecisionsStore) -> None:
    store.decide(MERGE, "a", "c", "distinct", "minji")
    result = cluster(KEYS, [("a", "b", 0.8), ("b", "c", 0.9)], store.current(MERGE), threshold=0.5)
    assert result.members("b") == ("b", "c") and result.members("a") == ("a",)
    assert [(b.left, b.right) for b in result.blocked] == [("a", "b")]


def test_a_persons_same_through_a_distinct_pair_is_a_conflict(store: DecisionsStore) -> None:
    distinct = store.decide(MERGE, "a", "c", "distinct", "minji")
    store.decide(MERGE, "a", "b", "same", "jisoo")
    refused = store.decide(MERGE, "b", "c", "same", "hana")
    result = cluster(KEYS, [], store.current(MERGE), threshold=0.5)
    assert result.members("a") == ("a", "b") and result.cluster_of["c"] == "c"
    assert len(result.conflicts) == 1 and result.conflicts == result.blocked
    conflict = result.conflicts[0]
    assert (conflict.left, conflict.right, conflict.source, conflict.verdict_id) == ("b", "c", "person", refused.id)
    assert conflict.distinct_id == distinct.id and conflict.cannot_link == ("a", "c")


def test_people_sames_are_applied_before_automatic_pairs(store: DecisionsStore) -> None:
    store.decide(MERGE, "a", "c", "distinct", "minji")
    store.decide(MERGE, "b", "c", "same", "jisoo")
    result = cluster(KEYS, [("a", "b", 0.99)], store.current(MERGE), threshold=0.5)
    assert result.members("b") == ("b", "c")
    assert [(b.left, b.right, b.source) for b in result.blocked] == [("a", "b", "automatic")]
    assert result.conflicts == ()


@pytest.mark.parametrize("verdict", ["related", "broader", "narrower"])
def test_a_persons_non_merge_verdict_vetoes_the_automatic_merge(store: DecisionsStore, verdict: str) -> None:
    made = store.decide(MERGE, "b", "a", verdict, "minji")
    result = cluster(KEYS, [("a", "b", 0.99), ("b", "e", 0.7)], store.current(MERGE), threshold=0.5)
    assert result.cluster_of["a"] == "a" and result.members("b") == ("b", "e")
    assert result.blocked == ()
    assert [(e.left, e.right, e.relation, e.verdict_id) for e in result.related] == [("a", "b", made.verdict, made.id)]
    assert made.verdict == {"related": "related", "broader": "narrower", "narrower": "broader"}[verdict]


def test_undo_gives_exactly_the_previous_clustering(store: DecisionsStore) -> None:
    automatic = [("a", "b", 0.9), ("b", "c", 0.8), ("d", "e", 0.7)]
    store.decide(MERGE, "c", "d", "same", "minji")
    store.decide(MERGE, "a", "e", "related", "minji")
    before = cluster(KEYS, automatic, store.current(MERGE), threshold=0.5)

    store.decide(MERGE, "a", "d", "distinct", "jisoo")
    after = cluster(KEYS, automatic, store.current(MERGE), threshold=0.5)
    assert after != before and after.cluster_of["a"] != after.cluster_of["d"]
    assert before.cluster_of["a"] == before.cluster_of["d"]

    store.undo(MERGE, "d", "a", "hana")
    assert cluster(KEYS, automatic, store.current(MERGE), threshold=0.5) == before

    # A replaced verdict that is undone brings the replaced one back, clusters included.
    store.decide(MERGE, "c", "d", "distinct", "jisoo")
    assert cluster(KEYS, automatic, store.current(MERGE), threshold=0.5) != before
    store.undo(MERGE, "c", "d", "hana")
    assert cluster(KEYS, automatic, store.current(MERGE), threshold=0.5) == before


def test_the_result_does_not_depend_on_input_order() -> None:
    rng = random.Random(7)
    keys = [f"k{n:03d}" for n in range(120)]
    automatic = [(rng.choice(keys), rng.choice(keys), round(rng.uniform(0.3, 1.0), 2)) for _ in range(300)]
    automatic += [("k001", "k002", 0.8), ("k002", "k001", 0.8), ("k003", "k004", 0.8)]  # ties and duplicates
    people = []
    for number in range(40):
        left, right = rng.sample(keys, 2)
        people.append(_verdict(number + 1, left, right, rng.choice(["same", "distinct", "distinct", "related"])))
    expected = cluster(keys, automatic, people, threshold=0.6)
    assert expected.blocked, "the generated case should exercise refused joins"
    assert any(len(members) > 2 for members in expected.clusters.values())
    for _ in range(5):
        shuffled = [(r, left, s) if rng.random() < 0.5 else (left, r, s) for left, r, s in automatic]
        rng.shuffle(shuffled)
        verdicts, shuffled_keys = people[:], keys[:]
        rng.shuffle(verdicts)
        rng.shuffle(shuffled_keys)
        assert cluster(shuffled_keys, shuffled, verdicts, threshold=0.6) == expected


def test_no_cluster_ever_holds_a_distinct_pair_in_a_large_case() -> None:
    rng = random.Random(11)
    keys = [f"e{n:06d}" for n in range(100_000)]
    automatic = [(rng.choice(keys), rng.choice(keys), rng.random()) for _ in range(100_000)]
    people = [_verdict(n + 1, *rng.sample(keys, 2), "distinct") for n in range(2_000)]
    people += [_verdict(n + 3_000, *rng.sample(keys, 2), "same") for n in range(2_000)]
    result = cluster(keys, automatic, people, threshold=0.2)

    assert len(result.cluster_of) == len(keys)
    for verdict in people:
        same_cluster = result.cluster_of[verdict.left_key] == result.cluster_of[verdict.right_key]
        if verdict.verdict == "distinct":
            assert not same_cluster
    refused_people = {b.verdict_id for b in result.conflicts}
    for verdict in people:
        if verdict.verdict == "same" and verdict.id not in refused_people:
            assert result.cluster_of[verdict.left_key] == result.cluster_of[verdict.right_key]
    judged = {v.pair for v in people}
    refused_auto = {(b.left, b.right) for b in result.blocked if b.source == "automatic"}
    for left, right, score in automatic:
        pair = (min(left, right), max(left, right))
        if score >= 0.2 and pair not in judged and pair not in refused_auto:
            assert result.cluster_of[left] == result.cluster_of[right]
    for cluster_id, members in result.clusters.items():
        assert cluster_id == min(members)
        assert all(result.cluster_of[key] == cluster_id for key in members)
    assert sum(len(members) for members in result.clusters.values()) == len(keys)


def test_verdicts_on_absent_keys_are_ignored_but_automatic_pairs_must_be_known() -> None:
    gone = [_verdict(1, "a", "zz-gone", "same"), _verdict(2, "b", "zz-gone", "same")]
    result = cluster(KEYS, [], gone, threshold=0.5)
    assert set(result.cluster_of) == set(KEYS) and result.cluster_of["b"] == "b"
    with pytest.raises(ValueError, match="names 'zz', which is not among the keys"):
        cluster(KEYS, [("a", "zz", 0.9)], [], threshold=0.5)
    with pytest.raises(ValueError, match="no usable score"):
        cluster(KEYS, [("a", "b", float("nan"))], [], threshold=0.5)


def test_kinds_refuse_automatic_chains_through_a_concept_but_not_a_person(store: DecisionsStore) -> None:
    kinds = {"a": "Person", "b": "Concept", "c": "Place", "d": "Engineer", "e": "Place"}
    custom = {"Engineer": "Person"}
    automatic = [("a", "b", 0.9), ("b", "c", 0.8), ("d", "e", 0.7)]
    result = cluster(KEYS, automatic, [], threshold=0.5, kinds=kinds, custom_kinds=custom)
    assert result.members("a") == ("a", "b") and result.cluster_of["c"] == "c" and result.cluster_of["e"] == "e"
    assert [(b.left, b.right, b.cause, b.kinds) for b in result.blocked] == [
        ("b", "c", "kinds", ("Person", "Place")),
        ("d", "e", "kinds", ("Person", "Place")),
    ]
    assert "a Person and a Place" in result.blocked[0].reason
    store.decide(MERGE, "d", "e", "same", "minji")
    overruled = cluster(KEYS, automatic, store.current(MERGE), threshold=0.5, kinds=kinds, custom_kinds=custom)
    assert overruled.members("d") == ("d", "e") and overruled.conflicts == ()
    assert cluster(KEYS, automatic, [], threshold=0.5).members("a") == ("a", "b", "c")


def test_kind_table() -> None:
    assert len(CORE_KINDS) == 11
    assert not compatible("Person", "Place") and not compatible("Place", "Person")
    assert compatible("Concept", "Person") and compatible("Person", "Concept")
    assert compatible("Quantity", "Quantity")
    assert [kind for kind in CORE_KINDS if compatible("Quantity", kind)] == ["Quantity"]
    assert [kind for kind in CORE_KINDS if compatible("Concept", kind)] == [k for k in CORE_KINDS if k != "Quantity"]
    assert sorted(kind for kind in CORE_KINDS if compatible("Person", kind)) == ["Concept", "Person"]
    for other in ("Person", "Organization", "Artifact", "Project"):
        assert not compatible("Place", other)
    assert all(compatible(kind, kind) for kind in CORE_KINDS)
    assert all(compatible(a, b) == compatible(b, a) for a in CORE_KINDS for b in CORE_KINDS)


def test_a_custom_kind_behaves_like_its_core_kind() -> None:
    custom = {"Engineer": "Person", "Library": "Artifact"}
    for kind in CORE_KINDS:
        assert compatible("Engineer", kind, custom) == compatible("Person", kind)
    assert compatible("Engineer", "Engineer", custom) and not compatible("Engineer", "Library", custom)
    assert core_kind("Library", custom) == "Artifact"


def test_unknown_kinds_are_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown kind 'Human'; the core kinds are Person, Organization"):
        compatible("Human", "Person")
    with pytest.raises(ValueError, match="'Engineer' is declared under 'Human'"):
        compatible("Engineer", "Person", {"Engineer": "Human"})
