"""Clusters of entity keys from machine candidates and people's merge verdicts (pure functions).

The rules, in the order they are applied:

1. A person's ``same`` joins the two clusters, in decision order (verdict id).
2. Automatic pairs with a score at or above the threshold join clusters in descending score order (ties by
   keys), unless a person gave any verdict on that exact pair: the person's verdict wins, and only ``same``
   is a merge.
3. A person's ``distinct`` is a cannot-link: no join may ever put the two keys into one cluster, neither an
   automatic one nor a person's ``same`` through a third key. Every join checks the two clusters for a
   distinct pair and is refused when it finds one; the refusal is recorded in ``blocked``, and a refused
   ``same`` of a person is also a ``conflict`` for the dashboard to show.
4. Optionally (``kinds``), an automatic join is refused when the two clusters hold kinds that cannot be one
   thing. Concept is compatible with nearly every kind, so a chain Person ~ Concept ~ Place would otherwise
   put a person and a place together although no single candidate pair was incompatible. A person's
   ``same`` is not refused for kinds: the extractor's kind is a guess and the person may know better. A custom
   kind counts as its core kind; a kind nothing declares counts as Concept and is listed in ``unknown_kinds``.

The result depends only on the inputs as sets: they are sorted before use, and a cluster's id is its
smallest member key, which is stable across rebuilds because keys are normalised labels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from engramrag.decisions.store import MERGE, Verdict
from engramrag.resolve.kinds import compatible, core_kind_or_concept, is_known

HIERARCHY_VERDICTS = ("broader", "narrower", "related")


@dataclass(frozen=True)
class BlockedJoin:
    """A join that was refused, and why: a person's distinct verdict (``cause="distinct"``) or kinds."""

    left: str
    right: str
    source: Literal["person", "automatic"]
    cause: Literal["distinct", "kinds"]
    score: float | None = None
    verdict_id: int | None = None
    cannot_link: tuple[str, str] | None = None
    distinct_id: int | None = None
    distinct_operator: str | None = None
    kinds: tuple[str, str] | None = None

    @property
    def reason(self) -> str:
        joined = f"joining {self.left!r} and {self.right!r}"
        if self.cause == "distinct" and self.cannot_link:
            a, b = self.cannot_link
            return (
                f"{joined} would put {a!r} and {b!r} in one cluster, "
                f"but {self.distinct_operator} marked them distinct (verdict {self.distinct_id})"
            )
        a, b = self.kinds or ("?", "?")
        return f"{joined} would put a {a} and a {b} in one cluster, and those kinds cannot be the same thing"


@dataclass(frozen=True)
class RelatedEdge:
    """A person's broader/narrower/related verdict: ``left`` is ``relation`` of/than ``right``."""

    left: str
    right: str
    relation: str
    verdict_id: int


@dataclass(frozen=True)
class Clustering:
    """Every key's cluster id (singletons included), the refused joins, and people's non-merge relations."""

    cluster_of: dict[str, str]
    blocked: tuple[BlockedJoin, ...]
    related: tuple[RelatedEdge, ...]
    _members: dict[str, tuple[str, ...]] = field(repr=False)
    unknown_kinds: tuple[str, ...] = ()  # kinds of ``kinds`` that nothing declares, compared as Concept

    def members(self, cluster_id: str) -> tuple[str, ...]:
        """The sorted member keys of a cluster; KeyError for an id that is not a cluster."""
        return self._members[cluster_id]

    @property
    def clusters(self) -> dict[str, tuple[str, ...]]:
        return dict(self._members)

    @property
    def conflicts(self) -> tuple[BlockedJoin, ...]:
        """People's ``same`` verdicts that contradict people's ``distinct`` verdicts through other keys."""
        return tuple(blocked for blocked in self.blocked if blocked.source == "person")


class _Forest:
    """Union-find whose roots carry the cluster's smallest key, its distinct constraints and its kinds."""

    def __init__(self, keys: list[str], kinds: dict[str, str] | None) -> None:
        self.index = {key: position for position, key in enumerate(keys)}
        self.keys = keys
        self.parent = list(range(len(keys)))
        self.size = [1] * len(keys)
        # root -> [(member, partner, verdict)] for every distinct verdict with one side in the cluster
        self.cannot: dict[int, list[tuple[int, int, Verdict]]] = {}
        self.kinds: dict[int, frozenset[str]] | None = (
            {self.index[key]: frozenset((kind,)) for key, kind in kinds.items()} if kinds is not None else None
        )

    def find(self, node: int) -> int:
        root = node
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[node] != root:
            self.parent[node], node = root, self.parent[node]
        return root

    def add_cannot_link(self, verdict: Verdict) -> None:
        a, b = self.index[verdict.left_key], self.index[verdict.right_key]
        self.cannot.setdefault(a, []).append((a, b, verdict))
        self.cannot.setdefault(b, []).append((b, a, verdict))

    def distinct_between(self, root_a: int, root_b: int) -> Verdict | None:
        """The earliest distinct verdict with one side in each cluster, if any."""
        side_a, side_b = self.cannot.get(root_a, ()), self.cannot.get(root_b, ())
        smaller, other = (side_a, root_b) if len(side_a) <= len(side_b) else (side_b, root_a)
        found = [verdict for _, partner, verdict in smaller if self.find(partner) == other]
        return min(found, key=lambda verdict: (verdict.id, verdict.left_key, verdict.right_key), default=None)

    def incompatible_kinds(self, root_a: int, root_b: int) -> tuple[str, str] | None:
        if self.kinds is None:
            return None
        for kind_a in sorted(self.kinds.get(root_a, ())):
            for kind_b in sorted(self.kinds.get(root_b, ())):
                if not compatible(kind_a, kind_b):
                    return (kind_a, kind_b)
        return None

    def union(self, root_a: int, root_b: int) -> None:
        if self.size[root_a] < self.size[root_b]:
            root_a, root_b = root_b, root_a
        self.parent[root_b] = root_a
        self.size[root_a] += self.size[root_b]
        moved = self.cannot.pop(root_b, None)
        if moved:
            self.cannot.setdefault(root_a, []).extend(moved)
        if self.kinds is not None:
            self.kinds[root_a] = self.kinds.get(root_a, frozenset()) | self.kinds.pop(root_b, frozenset())


def cluster(
    keys: Iterable[str],
    automatic: Iterable[tuple[str, str, float]],
    verdicts: Iterable[Verdict],
    threshold: float,
    *,
    kinds: Mapping[str, str] | None = None,
    custom_kinds: Mapping[str, str] | None = None,
) -> Clustering:
    """Cluster ``keys`` from automatic candidate pairs and people's current merge verdicts.

    ``verdicts`` is ``DecisionsStore.current("merge")`` (or any state of it, such as the state before an undo).
    Verdicts that name a key not in ``keys`` are ignored: they outlive the entities they were about when the
    vault changes, and come back into force when the entity does. An automatic pair naming an unknown key is
    a caller's error. ``kinds`` maps keys to their (core or custom) kind and enables rule 4.
    """
    ordered = sorted(set(keys))
    known = set(ordered)
    given = {key: kinds[key] for key in ordered if key in kinds} if kinds is not None else {}
    core_kinds = (
        {key: core_kind_or_concept(kind, custom_kinds) for key, kind in given.items()} if kinds is not None else None
    )
    unknown = tuple(sorted({kind for kind in given.values() if not is_known(kind, custom_kinds)}))
    forest = _Forest(ordered, core_kinds)
    people = _people_verdicts(verdicts, known)
    judged = {(verdict.left_key, verdict.right_key) for verdict in people}
    blocked: list[BlockedJoin] = []

    for verdict in people:
        if verdict.verdict == "distinct":
            forest.add_cannot_link(verdict)
    for verdict in people:
        if verdict.verdict == "same":
            refusal = _join(forest, verdict.left_key, verdict.right_key, check_kinds=False)
            if refusal:
                blocked.append(_blocked(refusal, verdict.left_key, verdict.right_key, "person", verdict_id=verdict.id))
    for left, right, score in _automatic_pairs(automatic, known, threshold):
        if (left, right) in judged:
            continue
        refusal = _join(forest, left, right, check_kinds=True)
        if refusal:
            blocked.append(_blocked(refusal, left, right, "automatic", score=score))

    cluster_of, members = _assignments(forest)
    related = tuple(
        RelatedEdge(verdict.left_key, verdict.right_key, verdict.verdict, verdict.id)
        for verdict in sorted(people, key=lambda verdict: (verdict.left_key, verdict.right_key))
        if verdict.verdict in HIERARCHY_VERDICTS
    )
    return Clustering(
        cluster_of=cluster_of, blocked=tuple(blocked), related=related, _members=members, unknown_kinds=unknown
    )


def _people_verdicts(verdicts: Iterable[Verdict], known: set[str]) -> list[Verdict]:
    chosen = []
    for verdict in verdicts:
        if verdict.topic != MERGE:
            raise ValueError(f"cluster() takes merge verdicts, got a {verdict.topic!r} verdict (id {verdict.id})")
        if verdict.undone_at is None and verdict.left_key in known and verdict.right_key in known:
            chosen.append(verdict)
    return sorted(chosen, key=lambda verdict: (verdict.id, verdict.left_key, verdict.right_key))


def _automatic_pairs(
    automatic: Iterable[tuple[str, str, float]], known: set[str], threshold: float
) -> list[tuple[str, str, float]]:
    pairs = []
    for left, right, score in automatic:
        for key in (left, right):
            if key not in known:
                raise ValueError(f"automatic pair ({left!r}, {right!r}) names {key!r}, which is not among the keys")
        try:
            value = float(score)
        except (TypeError, ValueError):
            value = math.nan
        if math.isnan(value):
            raise ValueError(f"automatic pair ({left!r}, {right!r}) has no usable score: {score!r}")
        if left != right and value >= threshold:
            pairs.append((min(left, right), max(left, right), value))
    return sorted(pairs, key=lambda pair: (-pair[2], pair[0], pair[1]))


def _join(forest: _Forest, left: str, right: str, check_kinds: bool) -> Verdict | tuple[str, str] | None:
    """Join the clusters of two keys; return what refused the join (a distinct verdict or two kinds), if any."""
    root_a, root_b = forest.find(forest.index[left]), forest.find(forest.index[right])
    if root_a == root_b:
        return None
    distinct = forest.distinct_between(root_a, root_b)
    if distinct is not None:
        return distinct
    if check_kinds:
        clash = forest.incompatible_kinds(root_a, root_b)
        if clash is not None:
            return clash
    forest.union(root_a, root_b)
    return None


def _blocked(
    refusal: Verdict | tuple[str, str],
    left: str,
    right: str,
    source: Literal["person", "automatic"],
    score: float | None = None,
    verdict_id: int | None = None,
) -> BlockedJoin:
    if isinstance(refusal, Verdict):
        return BlockedJoin(
            left, right, source, "distinct", score=score, verdict_id=verdict_id,
            cannot_link=refusal.pair, distinct_id=refusal.id, distinct_operator=refusal.operator,
        )  # fmt: skip
    return BlockedJoin(left, right, source, "kinds", score=score, verdict_id=verdict_id, kinds=refusal)


def _assignments(forest: _Forest) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    grouped: dict[int, list[str]] = {}
    for position, key in enumerate(forest.keys):
        grouped.setdefault(forest.find(position), []).append(key)
    cluster_of: dict[str, str] = {}
    members: dict[str, tuple[str, ...]] = {}
    for keys in grouped.values():
        # forest.keys is sorted, so each group is too and its first key is the smallest.
        members[keys[0]] = tuple(keys)
        for key in keys:
            cluster_of[key] = keys[0]
    return cluster_of, members


__all__ = ["BlockedJoin", "Clustering", "RelatedEdge", "cluster"]
