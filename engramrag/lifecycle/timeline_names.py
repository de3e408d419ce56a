"""The vault's names (``revise.versions.Names``) as a resident process (``engram watch``) last built them, grown by
what was added since rather than built again.

Names join every note title with its aliases, every entity label with its aliases, and the labels the resolution
overlay clustered: about 660,000 additions and 256,000 joins at 100,000 notes, 4 s of every timeline run. An edit
mostly adds (a new label, a new alias), and a union's roots do not depend on the order of its joins (a root is the
least key of its set: ``Names.join``), so names grown by the additions are the names built from everything. When
anything was taken away (a label no note mentions any more, an alias removed, a title renamed, a cluster split or
rearranged), a join cannot be undone and the names are built whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

from engramrag.revise.versions import Names, names_of


@dataclass(frozen=True)
class NameSources:
    """What the names are made of, as sets: each note's (title, aliases), every label, each label with its aliases,
    and each cluster as the joins of its least label with every other."""

    titles: frozenset[tuple[str, tuple[str, ...]]]
    labels: frozenset[str]
    aliased: frozenset[tuple[str, tuple[str, ...]]]
    clustered: frozenset[tuple[str, str]]

    @classmethod
    def of(
        cls, titles: Iterable[tuple[object, Sequence[str]]], labels: Iterable[object],
        aliased: Iterable[tuple[str, tuple[str, ...]]], clusters: Iterable[Sequence[str]],
    ) -> NameSources:  # fmt: skip
        joins = set()
        for cluster in clusters:
            ordered = sorted(set(cluster))
            joins.update((ordered[0], other) for other in ordered[1:])
        return cls(
            frozenset((title, tuple(aliases)) for title, aliases in titles if isinstance(title, str)),
            frozenset(str(label) for label in labels), frozenset(aliased), frozenset(joins),
        )  # fmt: skip

    def grows(self, earlier: NameSources) -> bool:
        """Whether these sources hold everything ``earlier`` held."""
        return all(getattr(self, f.name) >= getattr(earlier, f.name) for f in fields(self))

    def names(self, since: NameSources | None = None, grown: Names | None = None) -> Names:
        """The names of these sources: ``grown`` (the names of ``since``, left unchanged) with only what was added
        since, or built from nothing."""
        if since is None or grown is None:
            return names_of(self.titles, self.labels, self.aliased, [list(pair) for pair in self.clustered])
        names = _copied(grown)
        added = NameSources(*(getattr(self, f.name) - getattr(since, f.name) for f in fields(self)))
        # The order names_of adds in: titles, labels, aliases, clusters (the roots do not depend on it).
        more = names_of(added.titles, added.labels, added.aliased, [list(pair) for pair in added.clustered])
        for label in more.labels:
            names.add(label)
        for key in more.parent:
            names.join([key, more.find(key)])
        return names


def _copied(names: Names) -> Names:
    """Names that later joins into either leave the other's unchanged."""
    twin = Names()
    twin.parent, twin.labels = dict(names.parent), set(names.labels)
    return twin


@dataclass
class _Last:
    sources: NameSources | None = None
    names: Names | None = None
    base: object = None  # what the names of these sources were sealed with (``Names.seal``)


_last = _Last()


def vault_names(
    titles: Iterable[tuple[object, Sequence[str]]], labels: Iterable[object],
    aliased: Iterable[tuple[str, tuple[str, ...]]], clusters: Iterable[Sequence[str]],
) -> Names:  # fmt: skip
    """``revise.versions.names_of`` of these sources, grown from this process's last names when nothing was taken
    away since. The caller may join more into what it is given (the chains join replaced notes' titles): the names
    kept for the next run are a copy. The names are sealed (``Names.seal``) with the base of the last run's when their
    sources are the same, so what was computed from those names can be kept."""
    sources = NameSources.of(titles, labels, aliased, clusters)
    grows = _last.sources is not None and sources.grows(_last.sources)
    names = sources.names(_last.sources, _last.names) if grows else sources.names()
    base = _last.base if grows and sources == _last.sources else object()
    _last.sources, _last.names, _last.base = sources, _copied(names), base
    names.seal(base)
    return names
