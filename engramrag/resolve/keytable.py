"""The key table: one row per stable entity key, holding everything the candidate features read.

One job: turn the catalog's document-scoped mention rows (and the notes' front matter and file names) into
per-key columns in sorted key order: the label shown, the kind shown and the kind compared, the compact form,
words, documents, declared and written aliases, acronyms, numbers and the label vector. The kind shown is the
mentions' own (a custom kind stays "Dataset"); the kind compared is a core kind (``resolve.inputs``), so a custom
kind is compared as the core kind it was declared under and an unknown kind as Concept. The blocking and the
scorer then work on row numbers of this table and never look at the mention rows again.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from engramrag.extract.builder import DOCUMENT_KEY
from engramrag.extract.textutil import normalise_label
from engramrag.resolve.inputs import mention_core_kinds
from engramrag.resolve.mention_rows import MentionList, MentionRow, SortedMentions
from engramrag.resolve.surface import (
    COMPACT_DROP,
    DIGITS,
    WORD,
    acronyms_of,
    compact_form,
    front_matter_aliases,
    strings,
)

WEAK_KINDS = ("Concept", "Document")  # the default kind and the kind of a bare link target: say little


@dataclass
class KeyTable:
    """Per stable key, in sorted key order, everything the features read."""

    keys: list[str]
    labels: list[str]
    kinds: list[str]  # shown: the dominant kind, custom kinds as they are
    check_kinds: list[str]  # compared: the dominant specific core kind, or Concept when only Concept/Document is known
    compact: list[str]
    words: list[tuple[str, ...]]  # the key's words in order
    tokens: list[frozenset[str]]
    documents: list[frozenset[str]]
    declared: list[frozenset[str]]  # compact forms of front-matter aliases and note file names
    written: list[frozenset[str]]  # compact forms of aliases written in the text
    names: list[frozenset[str]]  # declared | written, without the generic ones (for the shared-alias feature)
    acronyms: list[frozenset[str]]  # initials and numeronym of each key
    numbers: list[tuple[str, ...]]  # the digit runs of each key
    vectors: np.ndarray | None  # unit rows aligned with keys; zero rows where absent
    has_vector: np.ndarray | None
    # key -> (doc_id, label, first_line, mentions), most mentioned first: every key's when built from all mention
    # rows, only the keys a run quotes evidence for when assembled from stored rows (``resolve.stored_keys``)
    mentions: dict[str, Sequence[MentionRow]]


class KeyRow(NamedTuple):
    """What one stable key's own mention rows (and its notes' front matter) say of it: a function of those rows
    alone, so a key whose rows did not change keeps its row. File-name aliases and the generic aliases depend on
    other keys too and are added when the table is assembled (``assemble_key_table``). A named tuple: a run reads
    every stored row back, and tuples are built several times faster than frozen dataclasses."""

    key: str
    label: str
    kind: str
    check_kind: str
    declared: frozenset[str]  # compact forms of the title rows' and front-matter aliases (file names not included)
    written: frozenset[str]
    documents: frozenset[str]


def build_key_table(
    mentions: pd.DataFrame,
    documents: pd.DataFrame | None,
    vectors: Mapping[str, np.ndarray] | None,
    max_posting: int,
    custom_kinds: Mapping[str, str] | None = None,
) -> KeyTable:
    """The table of the stable keys of ``mentions`` (see ``find_candidates`` for the columns). An alias owned by
    more than ``max_posting`` keys is generic and does not count as a shared alias. ``custom_kinds`` declares custom
    kinds for mention rows that do not carry their ``core_kind``."""
    rows, mention_lists, title_key = key_rows(mentions, documents, custom_kinds)
    titled = []
    if documents is not None and len(documents) and "path" in documents.columns:
        titled = [
            (str(path), title_key[str(doc_id)])
            for doc_id, path in documents[["doc_id", "path"]].itertuples(index=False)
            if str(doc_id) in title_key and path
        ]
    return assemble_key_table(rows, file_name_aliases(titled), vectors, max_posting, mention_lists)


def key_rows(
    mentions: pd.DataFrame, documents: pd.DataFrame | None, custom_kinds: Mapping[str, str] | None = None,
    with_lists: bool = True,
) -> tuple[list[KeyRow], dict[str, Sequence[MentionRow]], dict[str, str]]:
    """The rows of the stable keys of ``mentions`` in sorted key order, each key's mention list (none when not
    ``with_lists``), and the key of each document's title row (doc_id -> key). ``mentions`` must hold every row of
    each of its keys; ``documents`` (doc_id, and ``aliases`` or ``front_matter``) gives the declared aliases of the
    notes titled by those keys."""
    rows = _MentionColumns(mentions, custom_kinds)
    keys = rows.keys
    declared_raw: dict[str, set[str]] = defaultdict(set)
    written_raw: dict[str, set[str]] = defaultdict(set)
    title_key: dict[str, str] = {}
    for i in np.flatnonzero(rows.is_title).tolist():
        key = keys[rows.key_index[i]]
        title_key[rows.doc_ids[i]] = key
        declared_raw[key].update(strings(rows.aliases[i]))
    for i in np.flatnonzero(rows.has_aliases & ~rows.is_title).tolist():
        written_raw[keys[rows.key_index[i]]].update(strings(rows.aliases[i]))
    if documents is not None and len(documents):
        _declare_from_front_matter(documents, title_key, declared_raw)
    labels = rows.display_labels()
    kinds = [dominant_kind(counts) for counts in rows.counters(*rows.kinds)]
    check_kinds = [comparable_kind(counts) for counts in rows.counters(*rows.core_kinds)]
    found = [
        KeyRow(
            key=key,
            label=labels[i],
            kind=kinds[i],
            check_kind=check_kinds[i],
            declared=_compact_set(declared_raw.get(key, ())),
            written=_compact_set(written_raw.get(key, ())),
            documents=documents_of,
        )
        for i, (key, documents_of) in enumerate(zip(keys, rows.documents(), strict=True))
    ]
    return found, rows.mention_lists() if with_lists else {}, title_key


def mention_lists(mentions: pd.DataFrame) -> dict[str, Sequence[MentionRow]]:
    """Per stable key of ``mentions``, its rows (doc_id, label, first_line, mentions), most mentioned first."""
    return _MentionColumns(mentions, None).mention_lists()


def file_name_aliases(titled: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Per key, the file names (stems) of the notes it titles, from (path, title key) of every live note: the
    target of ``[[minji-park]]`` is the note titled "Minji Park". A file name two notes share is ambiguous and
    declares nothing."""
    stems: dict[str, set[str]] = defaultdict(set)
    for path, key in titled:
        stems[PurePosixPath(str(path)).stem].add(key)
    declared: dict[str, set[str]] = defaultdict(set)
    for stem, owners in stems.items():
        if len(owners) == 1:
            declared[next(iter(owners))].add(stem)
    return declared


def assemble_key_table(
    rows: Sequence[KeyRow],
    file_names: Mapping[str, set[str]],
    vectors: Mapping[str, np.ndarray] | None,
    max_posting: int,
    mentions: dict[str, Sequence[MentionRow]] | None = None,
) -> KeyTable:
    """The key table of ``rows`` (sorted by key) with each key's file-name aliases, the generic aliases (owned by
    more than ``max_posting`` keys) left out of the shared-alias names, and the label vectors."""
    table = KeyAssembly.of(rows, file_names, vectors, max_posting).table
    return table if mentions is None else dataclasses.replace(table, mentions=mentions)


MOST_PATCHED = 0.25  # above this share of changed rows, a table is assembled whole


@dataclass(frozen=True)
class KeyAssembly:
    """A key table with what it was assembled from, and how many keys own each alias (the generic ones own more
    than ``max_posting``): what the next table can be patched from."""

    rows: Sequence[KeyRow]
    file_names: Mapping[str, set[str]]
    vectors: Mapping[str, np.ndarray] | None
    max_posting: int
    owners: Counter
    generic: frozenset[str]
    table: KeyTable

    @classmethod
    def of(
        cls, rows: Sequence[KeyRow], file_names: Mapping[str, set[str]], vectors: Mapping[str, np.ndarray] | None,
        max_posting: int, last: KeyAssembly | None = None,
    ) -> KeyAssembly:  # fmt: skip
        """The table of ``rows``, patched from ``last`` where that gives the same table (``_patched``), else
        assembled whole."""
        patched = last._patched(rows, file_names, vectors, max_posting) if last is not None else None
        return patched if patched is not None else cls._whole(rows, file_names, vectors, max_posting)

    @classmethod
    def _whole(
        cls, rows: Sequence[KeyRow], file_names: Mapping[str, set[str]], vectors: Mapping[str, np.ndarray] | None,
        max_posting: int,
    ) -> KeyAssembly:  # fmt: skip
        keys = [row.key for row in rows]
        forms = [key_forms(key) for key in keys]
        # The rows' own frozensets where a key has no file name (most keys; copying every set: 0.35 s of a profiled
        # edit).
        declared = [_declared(row, file_names) for row in rows]
        written = [row.written for row in rows]
        owners = Counter(alias for i in range(len(keys)) for alias in declared[i] | written[i])
        generic = frozenset(alias for alias, count in owners.items() if count > max_posting)
        matrix, present = _vector_matrix(keys, vectors)
        table = KeyTable(
            keys=keys,
            labels=[row.label for row in rows],
            kinds=[row.kind for row in rows],
            check_kinds=[row.check_kind for row in rows],
            compact=[form.compact for form in forms],
            words=[form.words for form in forms],
            tokens=[form.tokens for form in forms],
            documents=[row.documents for row in rows],
            declared=declared,
            written=written,
            names=[frozenset((declared[i] | written[i]) - generic) for i in range(len(keys))],
            acronyms=[form.acronyms for form in forms],
            numbers=[form.numbers for form in forms],
            vectors=matrix,
            has_vector=present,
            mentions={},
        )
        return cls(list(rows), file_names, vectors, max_posting, owners, generic, table)

    def _patched(
        self, rows: Sequence[KeyRow], file_names: Mapping[str, set[str]], vectors: Mapping[str, np.ndarray] | None,
        max_posting: int,
    ) -> KeyAssembly | None:  # fmt: skip
        """The table of ``rows`` from this one, when the keys are the same and few rows are other objects (a resident
        build's edit: every other row is the one it stored), the file names and vectors are the same objects and no
        alias becomes or stops being generic; else None. Only the other rows' columns are made again: assembling
        every key was 0.17 s of each edit at 10,000 notes."""
        before = self.rows
        if (len(rows) != len(before) or file_names is not self.file_names or vectors is not self.vectors
                or max_posting != self.max_posting):  # fmt: skip
            return None
        changed = [i for i, (row, old) in enumerate(zip(rows, before, strict=True)) if row is not old]
        if len(changed) > MOST_PATCHED * len(rows) or any(rows[i].key != before[i].key for i in changed):
            return None
        old = self.table
        declared = {i: _declared(rows[i], file_names) for i in changed}
        owners = self.owners.copy()
        touched: set[str] = set()
        for i in changed:
            gone, now = old.declared[i] | old.written[i], declared[i] | rows[i].written
            owners.subtract(gone)
            owners.update(now)
            touched |= gone | now
        if any((owners[alias] > max_posting) != (alias in self.generic) for alias in touched):
            return None  # an alias became or stopped being generic: the names of keys not changed here change
        names = {i: frozenset((declared[i] | rows[i].written) - self.generic) for i in changed}
        table = dataclasses.replace(
            old,
            labels=_replaced(old.labels, {i: rows[i].label for i in changed}),
            kinds=_replaced(old.kinds, {i: rows[i].kind for i in changed}),
            check_kinds=_replaced(old.check_kinds, {i: rows[i].check_kind for i in changed}),
            documents=_replaced(old.documents, {i: rows[i].documents for i in changed}),
            declared=_replaced(old.declared, declared),
            written=_replaced(old.written, {i: rows[i].written for i in changed}),
            names=_replaced(old.names, names),
            mentions={},
        )
        return KeyAssembly(list(rows), file_names, vectors, max_posting, owners, self.generic, table)


def _declared(row: KeyRow, file_names: Mapping[str, set[str]]) -> frozenset[str]:
    named = file_names.get(row.key)
    return row.declared | _compact_set(named) if named else row.declared


def _replaced(values: list, at: Mapping[int, Any]) -> list:
    """A copy of ``values`` with the items at the positions of ``at`` replaced (tables share the unchanged lists)."""
    if not at:
        return values
    copied = list(values)
    for i, value in at.items():
        copied[i] = value
    return copied


class KeyForms(NamedTuple):
    """What the features read from a key's own text."""

    compact: str
    words: tuple[str, ...]  # in order
    tokens: frozenset[str]
    acronyms: frozenset[str]  # initials and numeronym
    numbers: tuple[str, ...]  # digit runs of the compact form


@functools.lru_cache(maxsize=1 << 20)
def key_forms(key: str) -> KeyForms:
    """The forms of one stable key. Kept per key for the life of the process: a resident build (``engram watch``)
    assembles the table at every edit, and cutting every key again was 4 s of an edit at 100,000 notes."""
    compact = COMPACT_DROP.sub("", key)
    words = tuple(WORD.findall(key))
    return KeyForms(compact, words, frozenset(words), frozenset(acronyms_of(words, compact)),
                    tuple(DIGITS.findall(compact)))  # fmt: skip


def _compact_set(aliases: Iterable[str]) -> frozenset[str]:
    return frozenset(c for c in map(compact_form, aliases) if c)


class _MentionColumns:
    """The mention rows with a stable key, as columns: each row's key (a row of the sorted ``keys``), and codes for
    its label, kind, core kind and document, so that the per-key counts are array operations, not a loop."""

    def __init__(self, mentions: pd.DataFrame, custom_kinds: Mapping[str, str] | None) -> None:
        label_codes, label_names = pd.factorize(mentions["label"].astype(str).to_numpy(dtype=object))
        label_keys = [normalise_label(label) for label in label_names]
        self.keys = sorted({key for key in label_keys if key})
        position = {key: i for i, key in enumerate(self.keys)}
        key_of_label = np.array([position.get(key, -1) for key in label_keys], dtype=np.int64)
        keep = key_of_label[label_codes] >= 0 if len(label_codes) else np.zeros(0, dtype=bool)
        self.kept, self.custom_kinds = mentions[keep], custom_kinds
        self.key_index = key_of_label[label_codes[keep]]
        self.label_codes, self.label_names = label_codes[keep], label_names
        self.doc_ids = self.kept["doc_id"].astype(str).to_numpy(dtype=object)

    # The columns below are made when first read: the mention lists need none of them.
    @functools.cached_property
    def kinds(self) -> tuple[np.ndarray, Any]:
        return pd.factorize(self.kept["kind"].astype(str).to_numpy(dtype=object))

    @functools.cached_property
    def core_kinds(self) -> tuple[np.ndarray, list[str]]:
        return _core_codes(self.kept, self.kinds[0], self.custom_kinds)

    @functools.cached_property
    def aliases(self) -> np.ndarray:
        return self.kept["aliases"].to_numpy(dtype=object)

    @functools.cached_property
    def has_aliases(self) -> np.ndarray:
        """A cheap first look: ``strings`` then reads just these rows."""
        return np.array(
            [value is not None and (not hasattr(value, "__len__") or len(value) > 0) for value in self.aliases],
            dtype=bool,
        )

    @functools.cached_property
    def is_title(self) -> np.ndarray:
        return (self.kept["entity_key"].to_numpy(dtype=object) == DOCUMENT_KEY).astype(bool)

    def _counts(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(key row, code, rows) for every (key, code) present."""
        width = np.int64(max(1, int(codes.max()) + 1 if len(codes) else 1))
        combined, counts = np.unique(self.key_index * width + codes, return_counts=True)
        return combined // width, combined % width, counts

    def display_labels(self) -> list[str]:
        """Per key, its most frequent label as written (the smallest string among equals)."""
        key_rows, codes, counts = self._counts(self.label_codes)
        best: dict[int, tuple[int, str]] = {}
        for key_row, code, count in zip(key_rows.tolist(), codes.tolist(), counts.tolist(), strict=True):
            label = self.label_names[code]
            if key_row not in best or (-count, label) < best[key_row]:
                best[key_row] = (-count, label)
        return [best[i][1] for i in range(len(self.keys))]

    def counters(self, codes: np.ndarray, names) -> list[Counter[str]]:
        """Per key, how many of its rows have each of ``names`` (kinds or core kinds), as ``codes`` say."""
        key_rows, kind_codes, counts = self._counts(codes)
        found: list[Counter[str]] = [Counter() for _ in self.keys]
        for key_row, code, count in zip(key_rows.tolist(), kind_codes.tolist(), counts.tolist(), strict=True):
            found[key_row][names[code]] += count
        return found

    def documents(self) -> list[frozenset[str]]:
        order = np.argsort(self.key_index, kind="stable")
        bounds = np.searchsorted(self.key_index[order], np.arange(len(self.keys) + 1))
        docs = self.doc_ids[order]
        return [frozenset(docs[bounds[i] : bounds[i + 1]].tolist()) for i in range(len(self.keys))]

    def mention_lists(self) -> dict[str, MentionList]:
        """Per key, its rows (doc_id, label, first_line, mentions), most mentioned first, then by document, then
        in the order given."""
        return SortedMentions(
            self.keys, self.key_index, self.doc_ids, self.label_names[self.label_codes],
            self.kept["first_line"].to_numpy(dtype=object), self.kept["mentions"].astype(np.int64).to_numpy(),
        ).lists()  # fmt: skip


def _core_codes(mentions: pd.DataFrame, kind_codes: np.ndarray, custom_kinds: Mapping[str, str] | None
                ) -> tuple[np.ndarray, list[str]]:  # fmt: skip
    """Per row, a code of the core kind it is compared as ("Concept" when unknown), computed once per distinct
    (kind, recorded core kind): the pairs are numbered from the two columns' codes, not from joined strings."""
    recorded = mentions["core_kind"] if "core_kind" in mentions.columns else pd.Series([None] * len(mentions))
    recorded_codes, recorded_names = pd.factorize(recorded.to_numpy(dtype=object))  # not a string: -1
    codes, _ = pd.factorize(kind_codes * (len(recorded_names) + 1) + recorded_codes + 1)
    first = np.unique(codes, return_index=True)[1] if len(codes) else np.zeros(0, dtype=np.int64)
    cores = [core or "Concept" for core in mention_core_kinds(mentions.iloc[first], custom_kinds)]
    core_codes, core_names = pd.factorize(np.array(cores, dtype=object))
    return (core_codes[codes] if len(codes) else codes), list(core_names)


def dominant_kind(kinds: Counter[str]) -> str:
    """The most frequent specific kind; Concept (the default) and Document (a bare link target) only when
    nothing more specific was ever said of the key."""
    for pool in ([k for k in kinds if k not in WEAK_KINDS], ["Document"], ["Concept"], list(kinds)):
        present = [k for k in pool if k in kinds]
        if present:
            return min(present, key=lambda k: (-kinds[k], k))
    return "Concept"


def comparable_kind(kinds: Counter[str]) -> str:
    """The kind a key is compared by. A key known only as a link target or a note title (Document) or by default
    (Concept) has no kind of its own yet: ``[[minji-park]]`` is the note about a Person, so it must not be vetoed
    against "Minji Park" the Person. It is compared as Concept, the kind the table keeps open."""
    kind = dominant_kind(kinds)
    return "Concept" if kind in WEAK_KINDS else kind


def _declare_from_front_matter(documents: pd.DataFrame, title_key: dict[str, str], declared: dict[str, set[str]]):
    """Front-matter aliases of notes, declared for the key of the note's title."""
    present = [name for name in ("aliases", "front_matter") if name in documents.columns]
    if not present:
        return
    column = present[0]
    for doc_id, value in documents[["doc_id", column]].itertuples(index=False):
        key = title_key.get(str(doc_id))
        if key is not None:
            declared[key].update(strings(value) if column == "aliases" else front_matter_aliases(value))


class KeyVectors(Mapping[str, np.ndarray]):
    """Unit label vectors of stable keys as the rows of one matrix (``matrix[i]`` is ``keys[i]``'s): the key table
    takes its rows in one gather, where a dict of 200,000 vectors copied row by row took 2 s at 100,000 notes."""

    def __init__(self, keys: list[str], matrix: np.ndarray) -> None:
        self.listed, self.matrix = keys, matrix  # not ``keys``: that is the Mapping's method
        self.index = pd.Index(keys)

    def __getitem__(self, key: str) -> np.ndarray:
        row = self.index.get_indexer([key])[0]
        if row < 0:
            raise KeyError(key)
        return self.matrix[row]

    def __iter__(self):
        return iter(self.listed)

    def __len__(self) -> int:
        return len(self.listed)

    def rows(self, keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of ``keys`` as rows (zero rows for keys without one) and which keys have one: the matrix itself
        (read-only) when ``keys`` are its keys in its order (the key table's, sorted, as ``_key_vectors`` lists
        them), else a gathered copy (a second 400 MB matrix at 100,000 notes, 1.8 s)."""
        if keys == self.listed:
            self.matrix.setflags(write=False)
            return self.matrix, np.ones(len(keys), dtype=bool)
        found = self.index.get_indexer(keys)
        present = found >= 0
        matrix = self.matrix[np.where(present, found, 0)] if len(self.listed) else np.zeros((len(keys), 0), np.float32)
        matrix[~present] = 0
        return matrix, present


def _vector_matrix(keys: list[str], vectors: Mapping[str, np.ndarray] | None):
    if not vectors:
        return None, None
    if isinstance(vectors, KeyVectors):
        return vectors.rows(keys)
    dimension = len(next(iter(vectors.values())))
    matrix = np.zeros((len(keys), dimension), dtype=np.float32)
    present = np.zeros(len(keys), dtype=bool)
    for i, key in enumerate(keys):
        vector = vectors.get(key)
        if vector is not None:
            matrix[i] = vector
            present[i] = True
    return matrix, present

