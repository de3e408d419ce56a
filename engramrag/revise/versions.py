"""Versions of changing facts: who owns a service, a price, a vendor, a deadline, who leads on-call.

Statements with the same subject and a single-valued property, from documents of different dates, form a
version chain per (subject, property): the values in date order, a new version wherever the value changes. The
latest version is current; every document holding an older value is proposed as superseded (``reason``
``later_value``) by the next version with another value and by the current version, each stood for by its first
and its latest document, with both quotes and the date the later version starts (a document holding the current
value that an intermediate version once replaced keeps that edge for questions about the dates between, and is
marked current). So the pairs grow with the documents, not with the square of a chain. A person can reject a
proposal (decisions store, topic ``supersession``, keys :func:`value_pair`), and the rejection wins.

- **Which properties are single-valued**: a declared table (:class:`VersionConfig`, extendable with
  ``extra_properties``), matched at the end of a key as written ("Billing service owner", "결제 서비스 담당자"),
  plus keys the data shows are single-valued (in several documents, rarely two values in one).
- **The subject**: the statement's own subject when it is an entity; for a key-value line about the document,
  the words of the key before the property ("Billing service" of "Billing service owner"), else the document's
  title. Subjects and values are joined through the notes' declared aliases (front matter ``aliases``), the
  entities' aliases and the resolution overlay, so "MJ" and "김민지" are one person.
- **Restatements**: a document written by an agent, or one that links to an earlier document holding the same
  value, repeats a fact rather than stating it anew: it never starts a version (a learned note that repeats an
  old owner does not make that owner current again), and holding a stale value it is superseded like the rest.
- **Dates**: the document's date (``vault.dates``), or the date its line states ("From 2024-06-01 ...").
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import defaultdict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import groupby
from typing import NamedTuple

import numpy as np
import pandas as pd

from engramrag.extract.builder import DOCUMENT_KEY
from engramrag.extract.decision_fields import WIKI_LINK
from engramrag.extract.properties import SINGLE_VALUED, property_finder
from engramrag.extract.textutil import normalise_label
from engramrag.revise.declarations import VALUE_PREFIX
from engramrag.revise.observations import Observation, ObservedNotes, gathered_observations, subject_title
from engramrag.revise.references import ReferenceIndex
from engramrag.run_memo import LastKept, RunMemo
from engramrag.vault.dates import find_date

NOT_PROPERTIES = frozenset({
    "links_to", "has_section", "dated", "tagged", "mentions", "date", "created", "updated", "title", "aliases",
    "alias", "tags", "tag", "has_tag", "type", "kind", "author", "records_decision", "checkbox", "task",
    "decided_on", "decided", "has_status",
})  # fmt: skip


@dataclass(frozen=True)
class VersionConfig:
    """Which facts have versions and how a chain is read."""

    properties: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(SINGLE_VALUED),
        metadata={"help": "Single-valued properties: name -> the key words (at the end of a key) that name it."},
    )
    extra_properties: tuple[str, ...] = field(
        default=(),
        metadata={"help": "More single-valued properties, each 'name=word|word' ('sla=sla|응답 시간')."},
    )
    learn_from_data: bool = field(
        default=True,
        metadata={"help": "Also treat as single-valued a key that the data shows holds one value per document."},
    )
    learned_min_documents: int = field(
        default=3, metadata={"help": "Documents a key must appear in before the data can make it single-valued."}
    )
    max_value_words: int = field(
        default=6, metadata={"help": "A longer value is a sentence (an update), not the value of a property."}
    )
    learned_max_multi_share: float = field(
        default=0.1,
        metadata={"help": "Largest share of (document, subject) pairs holding two values of a learned key."},
    )

    def table(self) -> dict[str, tuple[str, ...]]:
        table = {name: tuple(words) for name, words in self.properties.items()}
        for entry in self.extra_properties:
            name, _, words = entry.partition("=")
            if not name.strip():
                raise ValueError(f"extra property {entry!r}: write it as name=word|word")
            table[name.strip()] = tuple(w.strip() for w in (words or name).split("|") if w.strip())
        return table


class ValueRow(NamedTuple):
    """One document's value of one property of one subject (a row of ``property_values``). A named tuple: the
    table's columns are then one ``zip`` of the rows (reading 16 attributes of 131,000 dataclasses took 1.4 s of a
    timeline run at 100,000 notes)."""

    subject_key: str
    subject: str
    property: str
    value_key: str
    value: str
    doc_id: str
    path: str
    doc_date: str | None
    date_source: str | None
    line_start: int | None
    line_end: int | None
    quote: str
    version: int
    current: bool
    restated: bool
    why: str


@dataclass(frozen=True)
class ValueSupersession:
    """``earlier`` holds a value that ``later`` replaced (a row of ``document_supersessions``)."""

    earlier: ValueRow
    later: ValueRow
    since: str | None  # the date the later version starts

    @property
    def keys(self) -> tuple[str, str]:
        return value_pair(self.earlier.path, self.later.path, self.earlier.subject_key, self.earlier.property)


def value_pair(earlier_path: str, later_path: str, subject_key: str, prop: str) -> tuple[str, str]:
    """The decisions store keys (left, right) of "the later note's value of this property replaces the earlier"."""
    suffix = f"#{subject_key}/{prop}"
    return VALUE_PREFIX + earlier_path + suffix, VALUE_PREFIX + later_path + suffix


class Names:
    """Union of labels that name one thing: a note's title and its declared aliases, an entity's label and its
    aliases, the resolution overlay's clusters."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.labels: set[str] = set()
        self._base: object | None = None  # see ``edition``
        self._changes: list[tuple[str, ...]] = []

    def seal(self, base: object) -> None:
        """From now on the names are ``base`` and the changes made after this call (``edition``): the caller gives the
        same ``base`` only to names of the same content (``lifecycle.timeline_names`` does, for names it kept)."""
        self._base, self._changes = base, []

    def edition(self) -> tuple[object, tuple[tuple[str, ...], ...]] | None:
        """What these names are, as something to compare: the sealed base and every change since, in order (equal
        editions are equal names); None for names never sealed."""
        return None if self._base is None else (self._base, tuple(self._changes))

    def add(self, label: str) -> None:
        if key := normalise_label(label):
            self.labels.add(key)
            if self._base is not None:
                self._changes.append(("add", key))

    def known(self, label: str) -> bool:
        """Whether a note title, an alias or an entity has this name."""
        return normalise_label(label) in self.labels

    def find(self, label: str) -> str:
        key = normalise_label(label)
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def join(self, labels: Iterable[str]) -> None:
        """One name for all of ``labels``: their sets are joined under the least of their roots, so a set's root is
        always its least key, whatever order the joins came in (``aliased`` is a set, whose order differs between
        processes: a subject's key, part of the decisions store's keys of its value pairs, must not)."""
        labels = [label for label in labels if normalise_label(label)]
        if self._base is not None:
            self._changes.append(("join", *labels))
        for label in labels:
            self.add(label)
        roots = {self.find(label) for label in labels}
        least = min(roots, default="")
        for root in roots:
            if root != least:
                self.parent[root] = least


def version_chains(
    documents: pd.DataFrame,
    statements: pd.DataFrame,
    entities: pd.DataFrame,
    clusters: pd.DataFrame,
    config: VersionConfig | None = None,
    replaced_notes: Iterable[tuple[str, str]] = (),
) -> tuple[list[ValueRow], list[ValueSupersession]]:
    """Every value of a single-valued property (``property_values`` rows) and the supersessions they imply.

    ``documents``: doc_id, path, title, doc_date, date_source, agent_authored, text, front_matter (JSON);
    ``statements``: doc_id, subject, predicate, label, object, object_is_entity, role, line_start, line_end;
    ``entities``: doc_id, entity_key, label, aliases; ``clusters``: entity_key, cluster_key. ``replaced_notes``:
    (earlier, later) doc ids of notes declared replaced: a note that replaces another is about the same thing
    ("Datadog renewal 2024" replaces "Datadog")."""
    config = config or VersionConfig()
    table = config.table()
    stated = stated_values_by_note(documents, statements, entities, table, config)
    names = names_of(
        zip(documents["title"], [note_aliases(matter) for matter in documents["front_matter"]], strict=True),
        entities["label"], entity_aliases(entities), label_clusters(entities["label"].drop_duplicates(), clusters),
    )
    targets = {str(path): link_targets(str(text)) for path, text in zip(documents["path"], documents["text"],
                                                                        strict=True)}  # fmt: skip
    return chains_of(documents, stated, names, targets, config, replaced_notes)


def chains_of(
    documents: pd.DataFrame,
    stated: Mapping[str, Sequence[StatedValue]],
    names: Names,
    link_targets_of: Mapping[str, Sequence[str]],
    config: VersionConfig,
    replaced_notes: Iterable[tuple[str, str]] = (),
    resolved_links: dict[tuple[str, str], set[str]] | None = None,
    counts: ObservedNotes | None = None,
    stated_keys: Mapping[str, Hashable] | None = None,
) -> tuple[list[ValueRow], list[ValueSupersession]]:
    """:func:`version_chains` from what each note says alone (``stated``: doc id -> its :class:`StatedValue` rows,
    ``link_targets_of``: path -> the targets of its wiki links) and the names of the whole vault. ``documents``:
    doc_id, path, title, doc_date, date_source, agent_authored. ``resolved_links``: the wiki links already resolved
    against these notes' paths and titles ((target, folder) -> paths), filled in with the ones resolved here.
    ``stated_keys``: per doc id, a key equal between runs only when the note's ``stated`` values are (the digest its
    facts were derived at, with their settings): a note's kept observations are then found by it instead of by
    comparing every value of every note."""
    table = config.table()
    titles = dict(zip(documents["doc_id"].astype(str), documents["title"], strict=True))
    for earlier, later in replaced_notes:
        if isinstance(titles.get(earlier), str) and isinstance(titles.get(later), str):
            names.join([subject_title(titles[earlier]), subject_title(titles[later])])
    docs = {str(row.doc_id): row for row in documents.itertuples(index=False)}
    gathered = gathered_observations(stated, docs, table, config, names, counts, stated_keys)
    observed = gathered.found
    kept = _kept_chains.pop(_LAST)
    if gathered.changed is not None and kept is not None and kept.token is gathered.since:
        # The chains of the keys whose observations did not change are the last run's (their notes' links too: a
        # gathering is patched only while no note was renamed or retitled).
        chains = kept.chains
        redo = sorted(gathered.changed)
        links = _links(documents, link_targets_of, {o.path for key in redo if len(observed.get(key, ())) > 1
                                                    for o in observed[key]}, resolved_links)  # fmt: skip
        for key in redo:
            if key in observed:
                chains[key] = _chain(*key, observed[key], links)
            else:
                chains.pop(key, None)
    else:
        # Only a chain of several notes asks whether one links to another.
        links = _links(documents, link_targets_of,
                       {o.path for found in observed.values() if len(found) > 1 for o in found}, resolved_links)
        linked = {path: frozenset(targets) for path, targets in links.items()}
        chains = {}
        with _CHAINS.run() as made:
            for (subject_key, prop), found in observed.items():
                # A chain is a function of its observations and of the links of their notes (rebuilding 9,341 chains
                # took 6 s of every run at 100,000 notes).
                inputs = (subject_key, prop, tuple(found), tuple(linked.get(o.path) for o in found))
                chains[subject_key, prop] = made(inputs, lambda: _chain(subject_key, prop, found, links))  # noqa: B023
    rows: list[ValueRow] = []
    replaced: list[ValueSupersession] = []
    for key in sorted(chains):
        chain_rows, chain_replaced = chains[key]
        rows += chain_rows
        replaced += chain_replaced
    _kept_chains.put(_LAST, _KeptChains(gathered.token, chains))
    return rows, replaced


@dataclass
class _KeptChains:
    token: object  # the gathering of observations the chains were made from (``observations.Gathered.token``)
    chains: dict[tuple[str, str], tuple[list[ValueRow], list[ValueSupersession]]]


_LAST = "last"
_kept_chains: LastKept[_KeptChains] = LastKept(size=1)  # this process's last chains, for the next run to patch
_CHAINS: RunMemo[tuple, tuple[list[ValueRow], list[ValueSupersession]]] = RunMemo()


class StatedValue(NamedTuple):
    """A statement that may give a property its value, as far as its note alone says: which subject it is about and
    whether its key is a property depend on the names of the whole vault (:func:`chains_of`)."""

    key: str  # the statement's label as written (else its predicate)
    own: str  # the label of the entity the statement is about; "" when it is about the note
    prop: str | None  # the declared property the key ends with; None when it ends with none
    prefix: str  # the key's words before that property
    value: str
    line_start: int | None
    line_end: int | None
    quote: str  # the statement's line
    stated: str | None  # the date the line states, the value left out


def stated_values_by_note(
    documents: pd.DataFrame, statements: pd.DataFrame, entities: pd.DataFrame, table: Mapping[str, tuple[str, ...]],
    config: VersionConfig,
) -> dict[str, list[StatedValue]]:  # fmt: skip
    """Per doc id of ``documents`` (with ``text``), :func:`stated_values` of its statements (one note's or many)."""
    texts = dict(zip(documents["doc_id"].astype(str), documents["text"], strict=True))
    labelled = _with_labels(statements, entities)
    order = ["doc_id", "line_start", *[c for c in ("char_start", "statement_id") if c in labelled.columns]]
    # object columns: iterating Arrow-backed strings row by row costs more than the whole loop body
    ordered = labelled.sort_values(order, na_position="first", kind="stable").astype(object)
    found: dict[str, list[StatedValue]] = {doc_id: [] for doc_id in texts}
    for doc_id, rows in groupby(ordered.itertuples(index=False), key=lambda row: str(row.doc_id)):
        if doc_id in found:
            found[doc_id] = stated_values(str(texts[doc_id]), rows, table, config)
    return found


def stated_values(text: str, statements: Iterable, table: Mapping[str, tuple[str, ...]], config: VersionConfig
                  ) -> list[StatedValue]:  # fmt: skip
    """The statements of one note (``text``) that may be the value of a property, in the order given (the note's
    line order: the last line of a note wins). ``statements``: rows as :func:`version_chains` reads them, with
    ``subject_label`` and ``object_label``."""
    lines = text.split("\n")
    property_in = property_finder(table)
    found = []
    for row in statements:
        if row.role != "assertion" or row.predicate in NOT_PROPERTIES:
            continue
        value = str(row.object_label) if row.object_is_entity and isinstance(row.object_label, str) else str(row.object)
        value = _plain_value(value)
        words = len(value.split())
        if not value or words > config.max_value_words or (words >= 3 and value.endswith((".", "!", "다", "음"))):
            continue  # a sentence after a colon is an update, not the value of a property
        key = str(row.label or row.predicate)
        own = str(row.subject_label) if row.subject != DOCUMENT_KEY and isinstance(row.subject_label, str) else ""
        prop, prefix = property_in(key) or (None, "")
        line = _line(lines, row.line_start)
        found.append(StatedValue(
            key, own, prop, prefix, value, _int(row.line_start), _int(row.line_end), line.strip(),
            find_date(line.replace(value, " ")),
        ))  # fmt: skip
    return found


def _with_labels(statements: pd.DataFrame, entities: pd.DataFrame) -> pd.DataFrame:
    """The statements with ``subject_label`` and ``object_label``: the label of the entity of the same document the
    subject or object names (None when it names none). A join, not a dict of every entity of the vault."""
    labels = entities[["doc_id", "entity_key", "label"]].drop_duplicates(["doc_id", "entity_key"], keep="last")
    labels = labels.astype(object).assign(label=labels["label"].map(str))
    frame = statements.reset_index(drop=True)
    for column in ("subject", "object"):
        named = labels.rename(columns={"entity_key": column, "label": f"{column}_label"})
        found = frame[["doc_id", column]].astype(object).merge(named, on=["doc_id", column], how="left")
        frame[f"{column}_label"] = found[f"{column}_label"].to_numpy()
    return frame


def _chain(
    subject_key: str, prop: str, found: list[Observation], links: Mapping[str, set[str]]
) -> tuple[list[ValueRow], list[ValueSupersession]]:
    by_path = {o.path: o for o in found}
    dated = sorted(found, key=lambda o: (o.date or "", o.path))
    restated = set()
    for o in dated:
        if o.agent or any(
            (source := by_path[target]).value_key == o.value_key and (source.date or "") <= (o.date or "")
            and source.path != o.path
            for target in _within(links.get(o.path, ()), by_path)
        ):
            restated.add(o.path)
    # versions: runs of one value among the documents that state it anew
    versions: list[list[Observation]] = []
    for o in dated:
        if o.path in restated:
            continue
        if versions and versions[-1][0].value_key == o.value_key:
            versions[-1].append(o)
        else:
            versions.append([o])
    if not versions:
        versions = [[dated[-1]]]
    version_of: dict[str, int] = {}
    for number, run in enumerate(versions):
        for o in run:
            version_of[o.path] = number
    last_of_value = {run[0].value_key: number for number, run in enumerate(versions)}
    for path in restated:
        value = by_path[path].value_key
        version_of[path] = last_of_value.get(value, -1)
    current_value = versions[-1][0].value_key
    start = [run[0].date for run in versions]
    rows = {}
    for o in found:
        number = version_of[o.path]
        is_current = o.value_key == current_value
        if o.path in restated:
            why = "repeats a value it links to" if not o.agent else "written by an agent: repeats, never changes"
        elif is_current:
            why = "latest version" if len(versions) > 1 else "the only version"
        else:
            why = f"replaced on {start[number + 1] or 'an undated note'}" if number + 1 < len(versions) else "older"
        rows[o.path] = ValueRow(
            subject_key, o.subject, prop, o.value_key, o.value, o.doc_id, o.path, o.date, o.date_source,
            o.line_start, o.line_end, o.quote, number, is_current, o.path in restated, why,
        )
    replaced = []
    for o in found:
        for later_number in _successor_versions(versions, version_of[o.path], o.value_key):
            for successor in _version_ends(versions[later_number]):
                replaced.append(ValueSupersession(rows[o.path], rows[successor.path], start[later_number]))
    return sorted(rows.values(), key=lambda r: (r.doc_date or "", r.path)), replaced


def _within(targets: Collection[str], by_path: Mapping[str, Observation]) -> Iterable[str]:
    """The link targets that are notes of the chain, looked up from whichever side is smaller (a note can link to
    hundreds of others, a chain can hold hundreds of notes)."""
    if len(targets) <= len(by_path):
        return (target for target in targets if target in by_path)
    return (path for path in by_path if path in targets)


def _successor_versions(versions: list[list[Observation]], number: int, value_key: str) -> list[int]:
    """The later versions a document of version ``number`` holding ``value_key`` is superseded by: the first one
    with another value (what replaced it) and the last one with another value (the current version, unless the
    document holds the current value again). Every version between is reached through the chain; linking each
    document to all of them grew with the square of the chain (54,501 pairs at 10,000 generated notes, 3,889
    now)."""
    later = [n for n in range(max(number + 1, 0), len(versions)) if versions[n][0].value_key != value_key]
    return list(dict.fromkeys(later[:1] + later[-1:]))


def _version_ends(run: list[Observation]) -> list[Observation]:
    """The documents that stand for a version: the first (where the value starts) and the latest (where it was
    last stated). The notes between restate it."""
    return list({o.path: o for o in (run[0], run[-1])}.values())


def names_of(
    titles: Iterable[tuple[object, Sequence[str]]],
    labels: Iterable[object],
    aliased: Iterable[tuple[str, tuple[str, ...]]],
    clusters: Iterable[Sequence[str]],
) -> Names:
    """The names of the vault: each note's title with its declared aliases (``titles``: (title, aliases)), every
    entity label (``labels``), each label with its aliases (``aliased``), and the labels the resolution overlay put
    in one cluster (``clusters``)."""
    names = Names()
    for title, aliases in titles:
        if isinstance(title, str):
            names.join([subject_title(title), *aliases])
    for label in labels:
        names.add(str(label))
    # The union's roots do not depend on the order of joins: each distinct (label, aliases) is joined once.
    for label, aliases in aliased:
        names.join([label, *aliases])
    for cluster in clusters:
        names.join(cluster)
    return names


def note_aliases(front_matter: object) -> tuple[str, ...]:
    """The aliases a note's front matter (JSON) declares."""
    front = json.loads(front_matter) if isinstance(front_matter, str) and front_matter else {}
    aliases = front.get("aliases") or front.get("alias") or [] if isinstance(front, dict) else []
    return (aliases,) if isinstance(aliases, str) else tuple(a for a in aliases if isinstance(a, str))


def entity_aliases(entities: pd.DataFrame) -> set[tuple[str, tuple[str, ...]]]:
    """Each distinct (label, aliases) of ``entities`` (label, aliases) that has aliases."""
    has_aliases = [aliases is not None and len(aliases) > 0 for aliases in entities["aliases"]]
    aliased = entities.loc[np.asarray(has_aliases, dtype=bool)]
    return {(str(label), tuple(map(str, aliases)))
            for label, aliases in zip(aliased["label"], aliased["aliases"], strict=True)}  # fmt: skip


def label_clusters(labels: Iterable[object], clusters: pd.DataFrame) -> list[list[str]]:
    """The distinct entity ``labels`` grouped by the resolution overlay's cluster of their key (``clusters``:
    entity_key, cluster_key): keyed by a label's stable key, its normalised form, as the key table and the index key
    it (not the hashed key of a mention, which no cluster has)."""
    by_cluster: dict[str, list[str]] = defaultdict(list)
    cluster_of = dict(zip(clusters["entity_key"], clusters["cluster_key"], strict=True))
    for label in labels:
        cluster = cluster_of.get(normalise_label(str(label)))
        if cluster is not None:
            by_cluster[cluster].append(str(label))
    return list(by_cluster.values())


def link_targets(text: str) -> tuple[str, ...]:
    """The targets of a note's wiki links, each once."""
    return tuple(sorted({m.group("target").strip() for m in WIKI_LINK.finditer(text)}))


def _links(
    documents: pd.DataFrame,
    targets_of: Mapping[str, Sequence[str]],
    paths: set[str],
    resolved: dict[tuple[str, str], set[str]] | None = None,
) -> dict[str, set[str]]:
    """Document path -> the paths of the notes its wiki links name, for the documents of ``paths``. A link resolves
    the same from every note of one folder: ``resolved`` ((target, folder) -> paths, filled in here) may hold the
    resolutions of an earlier run over the same notes and titles."""
    resolved = {} if resolved is None else resolved
    index: ReferenceIndex | None = None  # built only when a link is not resolved yet
    links: dict[str, set[str]] = {}
    for path in sorted(paths):
        folder = posixpath.dirname(path)
        found: set[str] = set()
        for target in targets_of.get(path, ()):
            if (target, folder) not in resolved:
                if index is None:
                    index = ReferenceIndex()
                    for note, title in zip(documents["path"], documents["title"], strict=True):
                        index.add_version(str(note), [(str(note), str(title or note), None)])
                resolved[target, folder] = index.resolve(target, path)
            found |= resolved[target, folder]
        links[path] = found - {path}
    return links


@lru_cache(maxsize=65536)
def _plain_value(value: str) -> str:
    """The value without what qualifies it: "Minji Park (from [[Billing service]])" is "Minji Park"."""
    text = re.sub(r"\[\[([^\]|]+)(?:\|([^\]]+))?\]\]", lambda m: m.group(2) or m.group(1), value)
    text = re.sub(r"\s*\([^()]*\)\s*$", "", text)
    return text.strip().strip("*_").strip()


def _line(lines: list[str], line: object) -> str:
    number = _int(line)
    if number is None:
        return ""
    return lines[number - 1] if 0 < number <= len(lines) else ""


def _int(value: object) -> int | None:
    try:
        return None if value is None or pd.isna(value) else int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
