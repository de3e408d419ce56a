"""The key table: one row per stable entity key, holding everything the candidate features read.

One job: turn the catalog's document-scoped mention rows (and the notes' front matter and file names) into
per-key columns in sorted key order: the label shown, the kind shown and the kind compared, the compact form,
words, documents, declared and written aliases, acronyms, numbers and the label vector. The kind shown is the
mentions' own (a custom kind stays "Dataset"); the kind compared is a core kind (``resolve.inputs``), so a custom
kind is compared as the core kind it was declared under and an unknown kind as Concept. The blocking and the
scorer then work on row numbers of this table and never look at the mention rows again.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from engramrag.extract.builder import DOCUMENT_KEY
from engramrag.extract.textutil import normalise_label
from engramrag.resolve.inputs import mention_core_kinds
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
    declared: list[set[str]]  # compact forms of front-matter aliases and note file names
    written: list[set[str]]  # compact forms of aliases written in the text
    names: list[frozenset[str]]  # declared | written, without the generic ones (for the shared-alias feature)
    acronyms: list[frozenset[str]]  # initials and numeronym of each key
    numbers: list[tuple[str, ...]]  # the digit runs of each key
    vectors: np.ndarray | None  # unit rows aligned with keys; zero rows where absent
    has_vector: np.ndarray | None
    mentions: dict[str, list[tuple[str, str, int | None, int]]]  # key -> (doc_id, label, first_line, mentions)


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
    labels: dict[str, Counter[str]] = defaultdict(Counter)
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    core_kinds: dict[str, Counter[str]] = defaultdict(Counter)
    docs: dict[str, set[str]] = defaultdict(set)
    declared_raw: dict[str, set[str]] = defaultdict(set)
    written_raw: dict[str, set[str]] = defaultdict(set)
    rows: dict[str, list[tuple[str, str, int | None, int]]] = defaultdict(list)
    title_key: dict[str, str] = {}
    columns = ["doc_id", "entity_key", "label", "kind", "aliases", "mentions", "first_line"]
    cores = mention_core_kinds(mentions, custom_kinds)
    for row, core in zip(mentions[columns].itertuples(index=False), cores, strict=True):
        doc_id, entity_key, label, kind, aliases, count, first_line = row
        key = normalise_label(str(label))
        if not key:
            continue
        labels[key][str(label)] += 1
        kinds[key][str(kind)] += 1
        core_kinds[key][core or "Concept"] += 1
        docs[key].add(str(doc_id))
        rows[key].append((str(doc_id), str(label), _int_or_none(first_line), int(count)))
        if entity_key == DOCUMENT_KEY:
            title_key[str(doc_id)] = key
            declared_raw[key].update(strings(aliases))
        else:
            written_raw[key].update(strings(aliases))

    if documents is not None and len(documents):
        _declare_from_documents(documents, title_key, declared_raw)

    keys = sorted(labels)
    compact = [COMPACT_DROP.sub("", key) for key in keys]
    declared = [{c for c in map(compact_form, declared_raw.get(key, ())) if c} for key in keys]
    written = [{c for c in map(compact_form, written_raw.get(key, ())) if c} for key in keys]
    owners = Counter(alias for i in range(len(keys)) for alias in declared[i] | written[i])
    generic = {alias for alias, count in owners.items() if count > max_posting}
    words = [tuple(WORD.findall(key)) for key in keys]
    matrix, present = _vector_matrix(keys, vectors)
    return KeyTable(
        keys=keys,
        labels=[_display_label(labels[key]) for key in keys],
        kinds=[dominant_kind(kinds[key]) for key in keys],
        check_kinds=[comparable_kind(core_kinds[key]) for key in keys],
        compact=compact,
        words=words,
        tokens=[frozenset(w) for w in words],
        documents=[frozenset(docs[key]) for key in keys],
        declared=declared,
        written=written,
        names=[frozenset((declared[i] | written[i]) - generic) for i in range(len(keys))],
        acronyms=[frozenset(acronyms_of(words[i], compact[i])) for i in range(len(keys))],
        numbers=[tuple(DIGITS.findall(form)) for form in compact],
        vectors=matrix,
        has_vector=present,
        mentions={key: sorted(rows[key], key=lambda r: (-r[3], r[0])) for key in keys},
    )


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


def key_kinds(mentions: pd.DataFrame, custom_kinds: Mapping[str, str] | None = None) -> dict[str, str]:
    """Per stable key, the core kind it is compared by, as the candidates compare it (for the clusters' kind
    check): a custom kind as its declared core kind, an unknown kind as Concept. ``mentions`` may be grouped, with
    the number of mention rows each row stands for in ``rows`` (``resolve.inputs.live_kind_counts``)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    cores = mention_core_kinds(mentions, custom_kinds)
    weights = mentions["rows"].tolist() if "rows" in mentions.columns else [1] * len(mentions)
    for label, core, weight in zip(mentions["label"], cores, weights, strict=True):
        key = normalise_label(str(label))
        if key:
            counts[key][core or "Concept"] += weight
    return {key: comparable_kind(counts[key]) for key in sorted(counts)}


def _declare_from_documents(documents: pd.DataFrame, title_key: dict[str, str], declared: dict[str, set[str]]):
    """Front-matter aliases and file names of notes, declared for the key of the note's title."""
    stems: dict[str, set[str]] = defaultdict(set)
    for record in documents.to_dict("records"):
        doc_id = str(record["doc_id"])
        key = title_key.get(doc_id)
        if key is None:
            continue
        if "aliases" in record:
            declared[key].update(strings(record["aliases"]))
        elif "front_matter" in record:
            declared[key].update(front_matter_aliases(record["front_matter"]))
        if record.get("path"):
            stems[PurePosixPath(str(record["path"])).stem].add(key)
    for stem, owners in stems.items():
        if len(owners) == 1:  # two notes with one file name: the link target is ambiguous
            declared[next(iter(owners))].add(stem)


def _vector_matrix(keys: list[str], vectors: Mapping[str, np.ndarray] | None):
    if not vectors:
        return None, None
    dimension = len(next(iter(vectors.values())))
    matrix = np.zeros((len(keys), dimension), dtype=np.float32)
    present = np.zeros(len(keys), dtype=bool)
    for i, key in enumerate(keys):
        vector = vectors.get(key)
        if vector is not None:
            matrix[i] = vector
            present[i] = True
    return matrix, present


def _display_label(labels: Counter[str]) -> str:
    return min(labels, key=lambda label: (-labels[label], label))


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or pd.isna(value) else int(value)
    except (TypeError, ValueError):
        return None
