"""What each note's values say once the vault's names are known, gathered per (subject key, property): the
observations a version chain is made of (``versions.chains_of``).

A note's observations are a function of its row, its stated values (``versions.StatedValue``), its title and the
vault's names; which keys hold a chain also depends on every note (the properties the data shows are single-valued,
the properties some note declares). A resident process (``engram watch``) keeps what its last run gathered
(``_Kept``): while the names, the settings, the set of notes and their paths and titles are the same, the next run
takes away the observations of the notes whose row or values changed, adds their new ones and works out again only
what depends on them: the single-valued properties those keys have, and the keys whose observations or standing
moved. What it gives is what gathering every note gives (``tests/test_timeline_notes.py`` compares them); observing
every note and gathering them took 0.16 s of each timeline run whose facts moved at 10,000 notes.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from engramrag.extract.properties import KEY_SEPARATORS
from engramrag.extract.textutil import normalise_label
from engramrag.run_memo import LastKept, RunMemo

if TYPE_CHECKING:
    from engramrag.revise.versions import Names, StatedValue, VersionConfig

DATE_VALUED = frozenset({"deadline"})


class Observation(NamedTuple):
    """One note's value of one property of one subject, as a chain reads it. A tuple: a chain's observations key its
    kept result (``versions._CHAINS``), and tuples are hashed and compared in C (a dataclass's ``__eq__`` builds two
    tuples per comparison)."""

    subject: str
    value_key: str
    value: str
    doc_id: str
    path: str
    date: str | None
    date_source: str | None
    line_start: int | None
    line_end: int | None
    quote: str
    agent: bool



_NOTE_OBSERVATIONS: RunMemo[tuple, list[Entry]] = RunMemo()


@dataclass
class _NamesToken:
    """A small number per edition of the names (``Names.edition``), the same while the editions are equal: what a
    note's kept observations are keyed by (the edition itself is long to hash once per note)."""

    edition: object = None
    token: int = 0

    def of(self, edition: object) -> int:
        if edition != self.edition:
            self.edition, self.token = edition, self.token + 1
        return self.token


_NAMES_TOKEN = _NamesToken()


@dataclass
class ObservedNotes:
    """How many notes with values a run read (``notes``), and of them how many it observed anew (``observed``; the
    others' observations were kept from the last run, whose names were the same)."""

    notes: int = 0
    observed: int = 0


class _Asked:
    """What the names say of keys' words, asked once per run (keys and their words repeat across notes)."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self.observed = 0  # notes observed
        self.heads: dict[str, tuple[str, str | None] | None] = {}
        self.learned: dict[str, tuple[str | None, str]] = {}

    def head(self, prefix: str) -> tuple[str, str | None] | None:
        if prefix not in self.heads:
            # "Billing service owner": the billing service's owner; "Figma contract owner": Figma's
            self.heads[prefix] = (prefix, None) if self.names.known(prefix) else _known_head(prefix, self.names)
        return self.heads[prefix]

    def learned_key(self, key: str) -> tuple[str | None, str]:
        if key not in self.learned:
            self.learned[key] = _learned_key(key, self.names)
        return self.learned[key]




def _note_observations(
    doc_id: str, doc: object, title: str, values: Sequence[StatedValue], asked: _Asked
) -> list[Entry]:
    """One note's observations, in its line order: (of a declared property, (subject key, property), observation)."""
    names = asked.names
    asked.observed += 1
    found = []
    for value in values:
        if value.prop is not None:
            prop, prefix = value.prop, value.prefix
            if value.own:
                subject = value.own
            elif prefix and (head := asked.head(prefix)):
                subject, rest = head
                prop = f"{prop}:{rest}" if rest is not None else prop
            else:
                subject = title
                prop = f"{prop}:{prefix}" if prefix else prop  # "Tech lead" on a project page
            is_declared = True
        else:
            named, prop = asked.learned_key(value.key)
            subject = named if named is not None else value.own or title
            is_declared = False
        if not subject:
            continue
        observation = _observe(subject, value, doc_id, doc, prop, names)
        found.append((is_declared, (names.find(subject), prop), observation))
    return found


def _known_head(words: str, names: Names) -> tuple[str, str] | None:
    """(a known name the words start with, the words after it), longest name first."""
    parts = words.split(" ")
    for cut in range(len(parts) - 1, 0, -1):
        head = " ".join(parts[:cut])
        if names.known(head):
            return head, " ".join(parts[cut:])
    return None


def _learned_key(key: str, names: Names) -> tuple[str | None, str]:
    """(subject, property) of a key no declared property ends: a known name at the start of the key is the
    subject ("Ledger service nightly reconciliation jobs"); a key that is a known name is that thing's status
    ("Project Atlas: on track"); otherwise the key is a property of what the statement is about (subject None)."""
    words = KEY_SEPARATORS.sub(" ", normalise_label(key)).strip()
    if names.known(words):
        return words, "status"
    if found := _known_head(words, names):
        return found[0], found[1].replace(" ", "_")
    return None, words.replace(" ", "_")


def _single_valued_by_data(
    candidates: Mapping[tuple[str, str], Mapping[str, list[Observation]]], config: VersionConfig
) -> list[str]:
    """Properties the data shows are single-valued: stated in enough documents, with more than one value over
    time, and rarely two values in one document."""
    if not config.learn_from_data:
        return []
    documents: dict[str, set[str]] = defaultdict(set)
    values: dict[str, set[str]] = defaultdict(set)
    pairs: dict[str, list[int]] = defaultdict(list)
    for (_, prop), by_doc in candidates.items():
        for doc, observed in by_doc.items():
            documents[prop].add(doc)
            values[prop].update(o.value_key for o in observed)
            pairs[prop].append(len({o.value_key for o in observed}))
    return sorted(
        prop for prop in documents
        if len(documents[prop]) >= config.learned_min_documents and len(values[prop]) > 1
        and sum(count > 1 for count in pairs[prop]) / len(pairs[prop]) <= config.learned_max_multi_share
    )  # fmt: skip


def _observe(subject: str, value: StatedValue, doc_id: str, doc: object, prop: str, names: Names) -> Observation:
    date, source = doc.doc_date if isinstance(doc.doc_date, str) else None, doc.date_source
    stated = value.stated if prop.split(":", 1)[0] not in DATE_VALUED else None
    if stated and (date is None or stated != date):
        date, source = stated, "statement"
    return Observation(
        subject, names.find(value.value), value.value.strip(), doc_id, str(doc.path), date,
        source if isinstance(source, str) else None, value.line_start, value.line_end, value.quote,
        bool(doc.agent_authored),
    )


def _series_titles(docs: Mapping[str, object]) -> set[str]:
    """Titles (without their dates) that several notes share: a meeting series, not the name of one thing."""
    counts: dict[str, int] = defaultdict(int)
    for doc in docs.values():
        counts[normalise_label(subject_title(str(doc.title or doc.path)))] += 1
    return {title for title, count in counts.items() if count > 1}


Key = tuple[str, str]  # (subject key, property)
Entry = tuple[bool, Key, Observation]  # (of a declared property, its key, the observation)


@dataclass(frozen=True)
class Gathered:
    """Per key, the observations of its chain; the keys whose observations may differ from those of the gathering
    ``since`` names (None: any key may differ); and this gathering, for the next one to name."""

    found: dict[Key, list[Observation]]
    changed: set[Key] | None
    since: object | None
    token: object = field(default_factory=object)


def gathered_observations(
    stated: Mapping[str, Sequence[StatedValue]],
    docs: Mapping[str, tuple],
    table: Mapping[str, tuple[str, ...]],
    config: VersionConfig,
    names: Names,
    counts: ObservedNotes | None = None,
    stated_keys: Mapping[str, Hashable] | None = None,
) -> Gathered:
    """The observations of the notes ``docs`` (doc id -> its row: doc_id, path, title, doc_date, date_source,
    agent_authored, ...), each one's ``stated`` values read with ``names``, per key. ``stated_keys``: per doc id, a key
    equal between runs only when the note's values are (else its values are compared)."""
    series = _series_titles(docs)
    edition = names.edition()
    names_token = _NAMES_TOKEN.of(edition) if edition is not None else None
    kept = _kept.pop(_LAST)  # put back only once this run has gathered
    asked = _Asked(names)
    rows = {doc_id: _comparable(doc) for doc_id, doc in docs.items()}
    places = {doc_id: _comparable((doc.path, doc.title)) for doc_id, doc in docs.items()}  # type: ignore[attr-defined]
    keys = {doc_id: stated_keys[doc_id] if stated_keys is not None else tuple(stated.get(doc_id, ()))
            for doc_id in docs}  # fmt: skip
    same_vault = (
        kept is not None and names_token is not None and kept.names_token == names_token and kept.series == series
        and kept.config == config and kept.rows.keys() == rows.keys()
    )  # fmt: skip
    moved = [doc_id for doc_id in sorted(rows) if rows[doc_id] != kept.rows[doc_id] or keys[doc_id] != kept.keys[doc_id]
             ] if same_vault else []  # fmt: skip
    # A note renamed or retitled can change where other notes' links lead, and so chains none of whose notes moved.
    if same_vault and all(places[doc_id] == kept.places[doc_id] for doc_id in moved):
        assert kept is not None
        since = kept.token
        changed = kept.patch(moved, {doc_id: _entries(doc_id, docs, stated, series, asked) for doc_id in moved}, table,
                             config)  # fmt: skip
    else:
        kept, since, changed = _Kept(names_token, series, config), None, None
        with _NOTE_OBSERVATIONS.run() if names_token is not None else nullcontext() as made:
            entries = {}
            for doc_id in sorted(docs):
                if made is None or not stated.get(doc_id):
                    entries[doc_id] = _entries(doc_id, docs, stated, series, asked)
                    continue
                title = _title(docs[doc_id], series)
                inputs = (names_token, tuple(docs[doc_id]), title, keys[doc_id])
                entries[doc_id] = made(inputs, lambda: _entries(doc_id, docs, stated, series, asked))  # noqa: B023
        kept.patch(list(entries), entries, table, config)
    kept.rows, kept.keys, kept.places = rows, keys, places
    gathered = Gathered(kept.found, changed, since)
    kept.token = gathered.token
    _kept.put(_LAST, kept)
    if counts is not None:
        counts.notes += kept.notes
        counts.observed = asked.observed
    return gathered


def _entries(
    doc_id: str, docs: Mapping[str, tuple], stated: Mapping[str, Sequence[StatedValue]], series: set[str],
    asked: _Asked,
) -> list[Entry] | None:  # fmt: skip
    """A note's observations, or None for a note without values."""
    values = stated.get(doc_id)
    if doc_id not in docs or not values:
        return None
    return _note_observations(doc_id, docs[doc_id], _title(docs[doc_id], series), values, asked)


def _title(doc: tuple, series: set[str]) -> str:
    title = subject_title(str(doc.title or doc.path))  # type: ignore[attr-defined]
    return "" if normalise_label(title) in series else title  # "Weekly sync" names a series, not a thing


def _comparable(row: tuple) -> tuple:
    """A row as a tuple equal to the same row read again (a missing value read as NaN is not equal to itself)."""
    return tuple(None if isinstance(value, float) and value != value else value for value in row)


@dataclass
class _Kept:
    """What a gathering holds, kept for the next one: per note its observations, per key the notes' observations
    (in doc id order, as a gathering of every note adds them), the keys of each property, and the found chains."""

    names_token: int | None
    series: set[str]
    config: VersionConfig
    rows: dict[str, tuple] = field(default_factory=dict)
    keys: dict[str, Hashable] = field(default_factory=dict)
    places: dict[str, tuple] = field(default_factory=dict)  # per note, its path and title
    token: object = None
    entries: dict[str, list[Entry]] = field(default_factory=dict)
    declared: dict[Key, dict[str, Observation]] = field(default_factory=dict)
    candidates: dict[Key, dict[str, list[Observation]]] = field(default_factory=dict)
    by_property: dict[str, set[Key]] = field(default_factory=lambda: defaultdict(set))  # candidate keys
    by_base: dict[str, set[Key]] = field(default_factory=lambda: defaultdict(set))  # candidate keys, by base name
    declared_bases: Counter[str] = field(default_factory=Counter)  # declared keys per base name
    single_by_data: set[str] = field(default_factory=set)
    single: set[str] = field(default_factory=set)
    found: dict[Key, list[Observation]] = field(default_factory=dict)

    @property
    def notes(self) -> int:
        return len(self.entries)

    def patch(self, doc_ids: list[str], entries: Mapping[str, list[Entry] | None], table: Mapping[str, tuple[str, ...]],
              config: VersionConfig) -> set[Key]:  # fmt: skip
        """Replace the observations of ``doc_ids`` (sorted) by ``entries``; the keys whose chain may have changed."""
        touched: set[Key] = set()
        for doc_id in doc_ids:
            for is_declared, key, _ in self.entries.pop(doc_id, None) or ():
                touched.add(key)
                held = self.declared if is_declared else self.candidates
                if held.get(key, {}).pop(doc_id, None) is not None and not held[key]:
                    del held[key]
                    self._indexed(key, is_declared, -1)
        for doc_id in doc_ids:
            found_here = entries.get(doc_id)
            if found_here is None:
                continue
            self.entries[doc_id] = found_here
            for is_declared, key, observation in found_here:
                touched.add(key)
                held = self.declared if is_declared else self.candidates
                if key not in held:
                    held[key] = {}
                    self._indexed(key, is_declared, 1)
                if is_declared:
                    self.declared[key][doc_id] = observation  # the last line of a document wins
                else:
                    self.candidates[key].setdefault(doc_id, []).append(observation)
        for key in touched:  # a note added again goes where a gathering of every note puts it: in doc id order
            for held in (self.declared, self.candidates):
                if key in held and list(held[key]) != sorted(held[key]):
                    held[key] = dict(sorted(held[key].items()))
        properties = {key[1] for key in touched}
        learned = set(_single_valued_by_data(
            {key: self.candidates[key] for prop in properties for key in self.by_property.get(prop, ())}, config
        ))  # fmt: skip
        self.single_by_data = (self.single_by_data - properties) | learned
        single = self.single_by_data | {base for base, count in self.declared_bases.items() if count > 0}
        flipped, self.single = single ^ self.single, single
        redo = touched | {key for base in flipped for key in self.by_base.get(base, ())}
        for key in redo:
            chain = self._chain_of(key, table)
            if chain is None:
                self.found.pop(key, None)
            else:
                self.found[key] = chain
        return redo

    def _indexed(self, key: Key, is_declared: bool, step: int) -> None:
        base = key[1].split(":", 1)[0]
        if is_declared:
            self.declared_bases[base] += step
        elif step > 0:
            self.by_property[key[1]].add(key)
            self.by_base[base].add(key)
        else:
            self.by_property[key[1]].discard(key)
            self.by_base[base].discard(key)

    def _chain_of(self, key: Key, table: Mapping[str, tuple[str, ...]]) -> list[Observation] | None:
        """The observations of ``key``'s chain: its notes' declared ones, and when its property is single-valued
        (declared in the table, by some note or learned from the data) the last candidate of each other note."""
        held = list(self.declared[key].values()) if key in self.declared else None
        name = key[1]
        if key in self.candidates and (name.split(":", 1)[0] in self.single or name in table):
            held = held or []
            held_docs = {o.doc_id for o in held}
            held += [observed[-1] for doc, observed in self.candidates[key].items() if doc not in held_docs]
        return held


_LAST = "last"
_kept: LastKept[_Kept] = LastKept(size=1)  # one gathering per process: the timeline's of the home it builds


@lru_cache(maxsize=1 << 18)  # every note's title, twice per timeline run
def subject_title(title: str) -> str:
    """A note's title as the name of what it is about: without a leading or trailing date."""
    text = re.sub(r"^\s*\d{4}[-.]\d{2}[-.]\d{2}\s*[:\-–—]?\s*|\s*[:\-–—(]?\s*\d{4}[-.]\d{2}[-.]\d{2}\)?\s*$", "",
                  title)  # fmt: skip
    return text.strip() or title


