"""Merge candidates: which stable entity keys might name the same thing.

Entities are document-scoped mentions, joined across documents by their stable key, the normalised label
(``normalise_label``). Different keys can still name one thing ("PostgreSQL" and "Postgres", "박민지" and
"Minji Park"); this module proposes such pairs for the resolution overlay, each with the features that produced
its score, so that a person reviewing it can see why it was proposed.

**Features** of a pair of keys (each in [0, 1]):

- ``alias``: one key is an alias of the other. *declared*: listed in the front matter ``aliases`` of the
  note whose title is the other key, or the other key is that note's file name (the target of ``[[minji-park]]``
  is the note titled "Minji Park"); *written*: written as its display name in the text (``[[kubernetes|k8s]]``,
  glossary brackets); *shared*: both keys have the same alias. ``korean_english`` marks an alias relation
  between a Hangul and a Latin name.
- ``variant``: equal once spaces, hyphens, dots, slashes and underscores are removed ("LanceDB", "Lance DB").
- ``acronym``: one key is the initials ("DCP" for "Document Catalog Platform") or the numeronym ("k8s") of
  the other.
- ``containment``: the words of one key are all words of the other; the share of words covered ("Postgres" in
  "Managed Postgres" is 0.5; the same words reordered, "Park Minji", is 1).
- ``edit``: Levenshtein similarity of the compact forms, counted only at or above ``edit_floor``.
- ``embedding``: cosine of the label vectors, rescaled from ``embedding_floor``..1 to 0..1.
- ``shared_documents``: share of the rarer key's documents that also mention the other key.

Keys that differ in their numbers ("ADR-0001" and "ADR-0002", "2026-03-03" and "2026-03-04") name different things
however alike they look: containment, edit and embedding count 0 for them.

**Score**: a noisy-OR, ``1 - prod(1 - weight_f * f)``, so that each feature alone gives at most its weight,
independent evidence adds up, and the score stays in [0, 1]. Incompatible kinds (``resolve.kinds.compatible``)
veto: the score becomes 0 and the reason is kept, so a person sees the vetoed pair too.

**Automatic merge**: a pair is merged by the machine (unless a person said otherwise) only when it is not vetoed,
its score reaches ``auto_merge_threshold`` and it rests on an exact feature: a declared alias or a variant.
Mere similarity never merges on its own.

**Blocking**: never all pairs. Each feature that can produce a candidate has its own index that finds every pair
where the feature is non-zero: alias and compact-form tables; initials and numeronym tables; words by their rarest
word (containment); character trigrams with a prefix filter derived from the q-gram lemma (edit: a pair within
edit distance d shares at least max(len)+2-3d padded trigrams, so it shares one of the rarest grams of each side);
and, for label vectors, each key's ``embedding_neighbours`` most similar keys above the cosine that could reach
``min_score``. Only ``shared_documents`` has no index, which is why its weight must stay below ``min_score``. The
indexes are exact except where a posting list is longer than ``max_posting`` (a word or trigram common to that many
labels says nothing about identity), for cosine pairs outside the k nearest, and, for vectors longer than
``embedding_projection``, near the cut of the rotated search. At 40,000 keys with 512-dimensional vectors this
takes about 20 s on two busy cores.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from engramrag.extract.builder import DOCUMENT_KEY
from engramrag.extract.textutil import normalise_label, sentences
from engramrag.resolve.kinds import compatible
from engramrag.retrieve.neighbours import BLOCK

COMPACT_DROP = re.compile(r"[\s\-_./·]+")
WORD = re.compile(r"\w+")
DIGITS = re.compile(r"\d+")
HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
LATIN = re.compile(r"[a-z]")
INITIALS_SKIP = frozenset({"of", "the", "and", "for", "a", "an", "to", "in", "on", "&"})
WEAK_KINDS = ("Concept", "Document")  # the default kind and the kind of a bare link target: say little
EXACT_ALIASES = ("declared",)


@dataclass(frozen=True)
class CandidateConfig:
    """How candidate pairs are found and scored. Weights are each feature's contribution on its own."""

    auto_merge_threshold: float = field(
        default=0.95,
        metadata={"help": "Score at or above which a pair resting on a declared alias or a variant is merged by the "
                  "machine unless a person decided otherwise."},
    )
    min_score: float = field(
        default=0.35,
        metadata={"help": "Pairs scoring below this (before a veto) are dropped; half the words of another key alone "
                  "(0.3) is not enough."},
    )
    declared_alias_weight: float = field(
        default=1.0, metadata={"help": "Front-matter alias of the other key's note, or its file name."}
    )
    written_alias_weight: float = field(
        default=0.85, metadata={"help": "Display name written for the other key (link text, glossary brackets)."}
    )
    shared_alias_weight: float = field(default=0.7, metadata={"help": "Both keys have the same alias."})
    variant_weight: float = field(
        default=0.95, metadata={"help": "Equal without spaces, hyphens, dots, slashes and underscores."}
    )
    acronym_weight: float = field(default=0.8, metadata={"help": "Initials or numeronym (k8s) of the other key."})
    containment_weight: float = field(
        default=0.6, metadata={"help": "Times the share of words of the longer key that the shorter one covers."}
    )
    edit_weight: float = field(default=0.7, metadata={"help": "Times the Levenshtein similarity of compact forms."})
    edit_floor: float = field(
        default=0.75,
        metadata={"help": "Levenshtein similarity below which the edit feature is 0 (at least 0.7, which the "
                  "trigram prefix filter needs to stay exact)."},
    )
    embedding_weight: float = field(default=0.5, metadata={"help": "Times the rescaled label-vector cosine."})
    embedding_floor: float = field(
        default=0.6, metadata={"help": "Cosine at which the embedding feature starts (rescaled to 0..1 above it)."}
    )
    embedding_neighbours: int = field(
        default=10, metadata={"help": "Nearest neighbours of each key's vector examined for candidates."}
    )
    embedding_projection: int = field(
        default=128,
        metadata={"help": "Longer vectors are rotated down to this length to find neighbours (the feature uses the "
                  "full vectors)."},
    )
    embedding_projection_margin: float = field(
        default=0.15, metadata={"help": "How far the floor is lowered when neighbours are found on rotated vectors."}
    )
    shared_documents_weight: float = field(
        default=0.15,
        metadata={"help": "Times the share of the rarer key's documents mentioning both; must stay below min_score "
                  "because shared documents alone are not blocked."},
    )
    max_posting: int = field(
        default=200,
        metadata={"help": "Words, trigrams and aliases common to more keys than this are not used for blocking."},
    )
    evidence_per_side: int = field(default=2, metadata={"help": "Sentences quoted for each side of a pair."})

    def __post_init__(self) -> None:
        if not 0.7 <= self.edit_floor <= 1.0:
            raise ValueError(f"edit_floor must be in [0.7, 1], got {self.edit_floor}")
        if self.shared_documents_weight >= self.min_score:
            raise ValueError("shared_documents_weight must stay below min_score: shared documents are not blocked")
        if not 0.0 < self.min_score <= self.auto_merge_threshold <= 1.0:
            raise ValueError("need 0 < min_score <= auto_merge_threshold <= 1")
        if self.embedding_neighbours < 0 or self.max_posting < 2:
            raise ValueError("embedding_neighbours must be >= 0 and max_posting >= 2")


@dataclass(frozen=True)
class Features:
    alias: str | None  # "declared" | "written" | "shared" | None
    korean_english: bool
    variant: bool
    acronym: bool
    containment: float
    edit: float
    embedding: float | None  # raw cosine; None when a side has no vector
    shared_documents: int
    kinds_compatible: bool

    def reasons(self) -> tuple[str, ...]:
        """The features, in words (the cosine whenever both sides have a vector, to show how alike they are)."""
        found = []
        if self.alias:
            found.append(f"{self.alias} alias" + (" (Korean/English names)" if self.korean_english else ""))
        if self.variant:
            found.append("same name without spaces or punctuation")
        if self.acronym:
            found.append("acronym")
        if self.containment:
            found.append(f"word containment {self.containment:.2f}")
        if self.edit:
            found.append(f"edit similarity {self.edit:.2f}")
        if self.embedding is not None:
            found.append(f"embedding cosine {self.embedding:.2f}")
        if self.shared_documents:
            found.append(f"{self.shared_documents} shared documents")
        return tuple(found)


@dataclass(frozen=True)
class Evidence:
    path: str
    line: int
    text: str


@dataclass(frozen=True)
class Candidate:
    left_key: str
    right_key: str
    left_label: str
    right_label: str
    left_kind: str
    right_kind: str
    score: float
    features: Features
    vetoed: bool
    veto_reason: str | None
    auto_merge: bool
    reasons: tuple[str, ...]
    left_evidence: tuple[Evidence, ...] = ()
    right_evidence: tuple[Evidence, ...] = ()


@dataclass
class _Keys:
    """Per stable key, in sorted key order, everything the features read."""

    keys: list[str]
    labels: list[str]
    kinds: list[str]  # shown: the dominant kind
    check_kinds: list[str]  # compared: the dominant specific kind, or Concept when only Concept/Document is known
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


def find_candidates(
    mentions: pd.DataFrame,
    documents: pd.DataFrame | None = None,
    vectors: Mapping[str, np.ndarray] | None = None,
    config: CandidateConfig | None = None,
    custom_kinds: Mapping[str, str] | None = None,
) -> list[Candidate]:
    """Candidate pairs of different stable keys, best first.

    ``mentions``: the catalog's ``entities`` rows (doc_id, entity_key, label, kind, aliases, mentions, first_line).
    ``documents``: doc_id, path, and optionally ``aliases`` (list) or ``front_matter`` (JSON or dict) for the
    declared aliases, and ``text`` for the evidence sentences. ``vectors``: one unit vector per stable key.
    """
    config = config or CandidateConfig()
    table = _build_keys(mentions, documents, vectors, config)
    scorer = _Scorer(table, config, custom_kinds)
    found = []
    for (i, j), edit in sorted(_blocked_pairs(table, config).items()):
        candidate = scorer.score(i, j, edit)
        if candidate is not None:
            found.append(candidate)
    texts = _texts(documents)
    if texts:
        finder = _EvidenceFinder(table, texts, config.evidence_per_side)
        found = [finder.attach(candidate) for candidate in found]
    return sorted(found, key=lambda c: (-c.score, c.vetoed, c.left_key, c.right_key))


def all_pair_candidates(
    mentions: pd.DataFrame,
    documents: pd.DataFrame | None = None,
    vectors: Mapping[str, np.ndarray] | None = None,
    config: CandidateConfig | None = None,
    custom_kinds: Mapping[str, str] | None = None,
) -> list[Candidate]:
    """The same scoring over every pair, without blocking: quadratic, for checking the blocking on small inputs."""
    config = config or CandidateConfig()
    table = _build_keys(mentions, documents, vectors, config)
    scorer, n = _Scorer(table, config, custom_kinds), len(table.keys)
    found = [scorer.score(i, j) for i in range(n) for j in range(i + 1, n)]
    return sorted(
        (c for c in found if c is not None), key=lambda c: (-c.score, c.vetoed, c.left_key, c.right_key)
    )


def candidates_frame(candidates: Iterable[Candidate]) -> pd.DataFrame:
    """One row per candidate with the features as columns and the evidence as lists of dicts."""
    rows = []
    for candidate in candidates:
        row = {k: v for k, v in asdict(candidate).items() if k not in ("features",)}
        row.update(asdict(candidate.features))
        row["reasons"] = list(candidate.reasons)
        rows.append(row)
    columns = [f.name for f in Candidate.__dataclass_fields__.values() if f.name != "features"]
    columns += list(Features.__dataclass_fields__)
    return pd.DataFrame(rows, columns=columns)


def front_matter_aliases(front_matter: Any) -> list[str]:
    """The ``aliases`` (or ``alias``) of a note's front matter, given as the catalog's JSON text or a dict."""
    if isinstance(front_matter, str):
        try:
            front_matter = json.loads(front_matter)
        except ValueError:
            return []
    if not isinstance(front_matter, dict):
        return []
    return _strings(front_matter.get("aliases", front_matter.get("alias")))


def compact_form(text: str) -> str:
    """The normalised label without spaces, hyphens, dots, slashes and underscores."""
    return COMPACT_DROP.sub("", normalise_label(text))


# --- the key table -----------------------------------------------------------------------------------------


def _build_keys(
    mentions: pd.DataFrame,
    documents: pd.DataFrame | None,
    vectors: Mapping[str, np.ndarray] | None,
    config: CandidateConfig,
) -> _Keys:
    labels: dict[str, Counter[str]] = defaultdict(Counter)
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    docs: dict[str, set[str]] = defaultdict(set)
    declared_raw: dict[str, set[str]] = defaultdict(set)
    written_raw: dict[str, set[str]] = defaultdict(set)
    rows: dict[str, list[tuple[str, str, int | None, int]]] = defaultdict(list)
    title_key: dict[str, str] = {}
    columns = ["doc_id", "entity_key", "label", "kind", "aliases", "mentions", "first_line"]
    for doc_id, entity_key, label, kind, aliases, count, first_line in mentions[columns].itertuples(index=False):
        key = normalise_label(str(label))
        if not key:
            continue
        labels[key][str(label)] += 1
        kinds[key][str(kind)] += 1
        docs[key].add(str(doc_id))
        rows[key].append((str(doc_id), str(label), _int_or_none(first_line), int(count)))
        if entity_key == DOCUMENT_KEY:
            title_key[str(doc_id)] = key
            declared_raw[key].update(_strings(aliases))
        else:
            written_raw[key].update(_strings(aliases))

    if documents is not None and len(documents):
        _declare_from_documents(documents, title_key, declared_raw)

    keys = sorted(labels)
    compact = [COMPACT_DROP.sub("", key) for key in keys]
    declared = [{c for c in map(compact_form, declared_raw.get(key, ())) if c} for key in keys]
    written = [{c for c in map(compact_form, written_raw.get(key, ())) if c} for key in keys]
    owners = Counter(alias for i in range(len(keys)) for alias in declared[i] | written[i])
    generic = {alias for alias, count in owners.items() if count > config.max_posting}
    words = [tuple(WORD.findall(key)) for key in keys]
    matrix, present = _vector_matrix(keys, vectors)
    return _Keys(
        keys=keys,
        labels=[_display_label(labels[key]) for key in keys],
        kinds=[dominant_kind(kinds[key]) for key in keys],
        check_kinds=[comparable_kind(kinds[key]) for key in keys],
        compact=compact,
        words=words,
        tokens=[frozenset(w) for w in words],
        documents=[frozenset(docs[key]) for key in keys],
        declared=declared,
        written=written,
        names=[frozenset((declared[i] | written[i]) - generic) for i in range(len(keys))],
        acronyms=[frozenset(_acronyms_of(words[i], compact[i])) for i in range(len(keys))],
        numbers=[tuple(DIGITS.findall(form)) for form in compact],
        vectors=matrix,
        has_vector=present,
        mentions={key: sorted(rows[key], key=lambda r: (-r[3], r[0])) for key in keys},
    )


def _declare_from_documents(documents: pd.DataFrame, title_key: dict[str, str], declared: dict[str, set[str]]):
    """Front-matter aliases and file names of notes, declared for the key of the note's title."""
    stems: dict[str, set[str]] = defaultdict(set)
    for record in documents.to_dict("records"):
        doc_id = str(record["doc_id"])
        key = title_key.get(doc_id)
        if key is None:
            continue
        if "aliases" in record:
            declared[key].update(_strings(record["aliases"]))
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


def _display_label(labels: Counter[str]) -> str:
    return min(labels, key=lambda label: (-labels[label], label))


# --- blocking ----------------------------------------------------------------------------------------------


def _blocked_pairs(table: _Keys, config: CandidateConfig) -> dict[tuple[int, int], float | None]:
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


def _acronyms_of(words: tuple[str, ...], compact: str) -> set[str]:
    """Initials, with and without small words ("bill of lading" -> "bol", "bl"), and the numeronym
    ("kubernetes" -> "k8s") of a key."""
    forms = set()
    latin = [w for w in words if LATIN.match(w[0]) or w[0].isdigit()]
    if len(latin) == len(words) >= 2:
        forms.add("".join(w[0] for w in words))
        content = [w for w in words if w not in INITIALS_SKIP]
        if len(content) >= 2:
            forms.add("".join(w[0] for w in content))
    if len(compact) >= 5 and compact.isascii() and compact.isalpha():
        forms.add(f"{compact[0]}{len(compact) - 2}{compact[-1]}")
    forms.discard(compact)
    return forms


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


def _edit_pairs(table: _Keys, floor: float, max_posting: int) -> dict[tuple[int, int], float]:
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
        similarity = _edit_feature(compact[x], compact[y], floor)
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


# --- scoring -----------------------------------------------------------------------------------------------


class _Scorer:
    """Scores pairs of the key table; kind compatibility is looked up once per pair of kinds."""

    def __init__(self, table: _Keys, config: CandidateConfig, custom_kinds: Mapping[str, str] | None) -> None:
        self.table, self.config, self.custom_kinds = table, config, custom_kinds
        self.compatible: dict[tuple[str, str], bool] = {}
        self.alias_weights = {
            "declared": config.declared_alias_weight,
            "written": config.written_alias_weight,
            "shared": config.shared_alias_weight,
            None: 0.0,
        }

    def score(self, i: int, j: int, edit: float | None = None) -> Candidate | None:
        """The candidate for keys ``i`` and ``j``, or None below ``min_score``. ``edit``: the edit feature when
        the blocking already computed it."""
        table, config = self.table, self.config
        alias = _alias_relation(table, i, j)
        variant = table.compact[i] == table.compact[j]
        acronym = _is_acronym(table, i, j) or _is_acronym(table, j, i)
        # Labels that differ in their numbers name different things (ADR-0001 and ADR-0002, 2026-03-03 and
        # 2026-03-04) however alike they look: no similarity feature counts for them.
        same_numbers = table.numbers[i] == table.numbers[j]
        containment = _containment(table.tokens[i], table.tokens[j]) if same_numbers else 0.0
        if edit is None:
            edit = _edit_feature(table.compact[i], table.compact[j], config.edit_floor) if same_numbers else 0.0
        cosine = None
        if same_numbers and table.vectors is not None and table.has_vector[i] and table.has_vector[j]:
            cosine = round(float(table.vectors[i] @ table.vectors[j]), 6)
        shared = table.documents[i] & table.documents[j]
        remaining = 1.0
        for part in (
            self.alias_weights[alias],
            config.variant_weight if variant else 0.0,
            config.acronym_weight if acronym else 0.0,
            config.containment_weight * containment,
            config.edit_weight * edit,
            config.embedding_weight * _rescaled(cosine, config.embedding_floor),
            config.shared_documents_weight * _share(table.documents[i], table.documents[j], len(shared)),
        ):
            remaining *= 1.0 - min(1.0, max(0.0, part))
        score = round(1.0 - remaining, 6)
        if score < config.min_score:
            return None
        features = Features(
            alias=alias,
            korean_english=alias is not None and _scripts_differ(table.keys[i], table.keys[j]),
            variant=variant,
            acronym=acronym,
            containment=containment,
            edit=edit,
            embedding=cosine,
            shared_documents=len(shared),
            kinds_compatible=self._compatible(table.check_kinds[i], table.check_kinds[j]),
        )
        reasons, veto_reason = features.reasons(), None
        if not features.kinds_compatible:
            veto_reason = f"kinds {_kind_shown(table, i)} and {_kind_shown(table, j)} cannot be the same thing"
            reasons = (*reasons, veto_reason)
        exact = alias in EXACT_ALIASES or variant
        return Candidate(
            left_key=table.keys[i],
            right_key=table.keys[j],
            left_label=table.labels[i],
            right_label=table.labels[j],
            left_kind=table.kinds[i],
            right_kind=table.kinds[j],
            score=score if features.kinds_compatible else 0.0,
            features=features,
            vetoed=not features.kinds_compatible,
            veto_reason=veto_reason,
            auto_merge=features.kinds_compatible and exact and score >= config.auto_merge_threshold,
            reasons=reasons,
        )

    def _compatible(self, a: str, b: str) -> bool:
        if (a, b) not in self.compatible:
            self.compatible[(a, b)] = compatible(a, b, self.custom_kinds)
        return self.compatible[(a, b)]


def _kind_shown(table: _Keys, i: int) -> str:
    shown, compared = table.kinds[i], table.check_kinds[i]
    return shown if shown == compared else f"{shown} (compared as {compared})"


def _alias_relation(table: _Keys, i: int, j: int) -> str | None:
    ci, cj = table.compact[i], table.compact[j]
    if cj in table.declared[i] or ci in table.declared[j]:
        return "declared"
    if cj in table.written[i] or ci in table.written[j]:
        return "written"
    if not table.names[i].isdisjoint(table.names[j]):
        return "shared"
    return None


def _is_acronym(table: _Keys, long: int, short: int) -> bool:
    return len(table.compact[short]) >= 2 and table.compact[short] in table.acronyms[long]


def _containment(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    if a < b:
        return round(len(a) / len(b), 6)
    if b < a:
        return round(len(b) / len(a), 6)
    return 0.0


def _edit_feature(a: str, b: str, floor: float) -> float:
    longest = max(len(a), len(b))
    if not longest or a == b:
        return 0.0  # equal compact forms are the variant feature
    budget = int((1 - floor) * longest + 1e-9)
    distance = _levenshtein(a, b, budget)
    if distance > budget:
        return 0.0
    similarity = 1.0 - distance / longest
    return round(similarity, 6) if similarity >= floor else 0.0


def _levenshtein(a: str, b: str, budget: int) -> int:
    """Edit distance, or ``budget + 1`` as soon as it must exceed ``budget``."""
    if abs(len(a) - len(b)) > budget:
        return budget + 1
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for x, char_a in enumerate(a, 1):
        current = [x] + [0] * len(b)
        best = x
        for y, char_b in enumerate(b, 1):
            value = min(previous[y] + 1, current[y - 1] + 1, previous[y - 1] + (char_a != char_b))
            current[y] = value
            best = min(best, value)
        if best > budget:
            return budget + 1
        previous = current
    return previous[-1]


def _rescaled(cosine: float | None, floor: float) -> float:
    if cosine is None or cosine <= floor:
        return 0.0
    return (cosine - floor) / (1.0 - floor) if floor < 1.0 else 0.0


def _share(a: frozenset[str], b: frozenset[str], common: int) -> float:
    smaller = min(len(a), len(b))
    return common / smaller if smaller else 0.0


def _scripts_differ(a: str, b: str) -> bool:
    def script(text: str) -> str:
        hangul, latin = bool(HANGUL.search(text)), bool(LATIN.search(text))
        return "hangul" if hangul and not latin else "latin" if latin and not hangul else "mixed"

    return {script(a), script(b)} == {"hangul", "latin"}


# --- evidence ----------------------------------------------------------------------------------------------


def _texts(documents: pd.DataFrame | None) -> dict[str, tuple[str, str]]:
    if documents is None or "text" not in documents.columns:
        return {}
    return {
        str(doc_id): (str(path), str(text))
        for doc_id, path, text in documents[["doc_id", "path", "text"]].itertuples(index=False)
        if isinstance(text, str)
    }


class _EvidenceFinder:
    """Evidence per key, computed once per key and with each document's line offsets computed once."""

    def __init__(self, table: _Keys, texts: Mapping[str, tuple[str, str]], limit: int) -> None:
        self.table, self.texts, self.limit = table, texts, limit
        self.offsets: dict[str, list[int]] = {}
        self.found: dict[str, tuple[Evidence, ...]] = {}

    def attach(self, candidate: Candidate) -> Candidate:
        left, right = self.of(candidate.left_key), self.of(candidate.right_key)
        return replace(candidate, left_evidence=left, right_evidence=right)

    def of(self, key: str) -> tuple[Evidence, ...]:
        if key not in self.found:
            self.found[key] = mention_evidence(self.table.mentions.get(key, []), self.texts, self.limit, self.offsets)
        return self.found[key]


def mention_evidence(
    rows: list[tuple[str, str, int | None, int]],
    texts: Mapping[str, tuple[str, str]],
    limit: int = 2,
    line_offsets: dict[str, list[int]] | None = None,
) -> tuple[Evidence, ...]:
    """Up to ``limit`` sentences, from different documents, where a key is mentioned: each row is (doc_id,
    label, first_line, mentions), most mentioned first. The sentence holds the label as written.
    ``line_offsets`` caches each document's line start offsets between calls."""
    cache = {} if line_offsets is None else line_offsets
    found: list[Evidence] = []
    used: set[str] = set()
    for doc_id, label, first_line, _count in rows:
        if len(found) >= limit:
            break
        if doc_id not in texts or doc_id in used:
            continue
        path, text = texts[doc_id]
        if doc_id not in cache:
            cache[doc_id] = [0, *(m.end() for m in re.finditer("\n", text))]
        evidence = _sentence_with(text, cache[doc_id], label, first_line)
        if evidence is not None:
            found.append(Evidence(path, *evidence))
            used.add(doc_id)
    return tuple(found)


def _sentence_with(text: str, offsets: list[int], label: str, first_line: int | None) -> tuple[int, str] | None:
    words = label.split()
    if not words:
        return None
    pattern = r"\s+".join(map(re.escape, words))
    if words[0][0].isascii() and words[0][0].isalnum():
        pattern = r"(?<!\w)" + pattern
    if words[-1][-1].isascii() and words[-1][-1].isalnum():  # Korean particles attach to a name: 박민지는
        pattern += r"(?!\w)"
    regex = re.compile(pattern, re.IGNORECASE)
    body = _body_start(text)
    start = offsets[first_line - 1] if first_line and 0 < first_line <= len(offsets) else 0
    match = regex.search(text, max(start, body)) or regex.search(text, body) or regex.search(text)
    if match is None:
        return None
    line = bisect_right(offsets, match.start())
    line_start = offsets[line - 1]
    line_end = text.find("\n", match.start())
    line_end = len(text) if line_end < 0 else line_end
    for s, e in sentences(text, line_start, line_end):
        if s <= match.start() and match.end() <= e:
            return line, text[s:e]
    return line, text[line_start:line_end].strip()


def _body_start(text: str) -> int:
    """Where the body begins after YAML front matter: a sentence of prose is better evidence than ``title:``."""
    if not text.startswith("---"):
        return 0
    end = re.search(r"^(?:---|\.\.\.)[ \t]*$", text[3:], re.MULTILINE)
    return 3 + end.end() if end else 0


# --- small helpers -----------------------------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    try:
        return [str(item) for item in value if item is not None and str(item).strip()]
    except TypeError:
        return [str(value)]


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or pd.isna(value) else int(value)
    except (TypeError, ValueError):
        return None


__all__ = [
    "Candidate",
    "CandidateConfig",
    "Evidence",
    "Features",
    "all_pair_candidates",
    "candidates_frame",
    "compact_form",
    "find_candidates",
    "front_matter_aliases",
    "mention_evidence",
]
