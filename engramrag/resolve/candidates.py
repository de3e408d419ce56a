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

**Blocking** (``resolve.blocking``): never all pairs; every feature but ``shared_documents`` has an index that finds
every pair where it is non-zero, so only those pairs are scored.

The work is split by concern: ``resolve.surface`` (label forms and string similarity), ``resolve.keytable`` (one
row per stable key), ``resolve.blocking`` (which pairs to score), ``resolve.evidence`` (the sentences shown) and
``resolve.candidate_config`` (the knobs). This module scores pairs and is the public entry point; it re-exports the
names other modules import from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from engramrag.progress import Progress
from engramrag.resolve.blocking import blocked_pairs
from engramrag.resolve.candidate_config import CandidateConfig
from engramrag.resolve.embedding_lists import ListCache
from engramrag.resolve.evidence import Evidence, EvidenceFinder, document_texts, mention_evidence
from engramrag.resolve.keytable import WEAK_KINDS, KeyTable, build_key_table, comparable_kind, dominant_kind
from engramrag.resolve.kinds import compatible
from engramrag.resolve.surface import (
    compact_form,
    edit_similarity,
    front_matter_aliases,
    scripts_differ,
    word_containment,
)

EXACT_ALIASES = ("declared",)


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


def find_candidates(
    mentions: pd.DataFrame,
    documents: pd.DataFrame | None = None,
    vectors: Mapping[str, np.ndarray] | None = None,
    config: CandidateConfig | None = None,
    custom_kinds: Mapping[str, str] | None = None,
    known_evidence: Mapping[str, tuple[str, tuple[Evidence, ...]]] | None = None,
    quoted: dict[str, tuple[str, tuple[Evidence, ...]]] | None = None,
    lists: ListCache | None = None,
) -> list[Candidate]:
    """Candidate pairs of different stable keys, best first.

    ``mentions``: the catalog's ``entities`` rows (doc_id, entity_key, label, kind, aliases, mentions, first_line,
    and optionally core_kind: the core kind a custom kind was declared under when it was extracted).
    ``documents``: doc_id, path, and optionally ``aliases`` (list) or ``front_matter`` (JSON or dict) for the
    declared aliases, and ``text`` for the evidence sentences. ``vectors``: one unit vector per stable key.
    ``custom_kinds`` declares custom kinds for rows without a ``core_kind``; a kind nothing declares is compared as
    Concept (``resolve.inputs.unknown_kinds`` lists them), never an error. ``known_evidence``: evidence an earlier
    run quoted, per key with its signature (``EvidenceFinder``); ``quoted``, when given, receives every evidence
    this run used, for the next. ``lists``: the embedding lists of an earlier run to start from, and where this
    run's are left (``resolve.embedding_lists``).
    """
    config = config or CandidateConfig()
    table = build_key_table(mentions, documents, vectors, config.max_posting, custom_kinds)
    pairs = sorted(blocked_pairs(table, config, lists).items())
    return score_pairs(table, pairs, config, documents, known_evidence, quoted)


def score_pairs(
    table: KeyTable,
    pairs: Sequence[tuple[tuple[int, int], float | None]],
    config: CandidateConfig,
    documents: pd.DataFrame | None = None,
    known_evidence: Mapping[str, tuple[str, tuple[Evidence, ...]]] | None = None,
    quoted: dict[str, tuple[str, tuple[Evidence, ...]]] | None = None,
    evidence: EvidenceFinder | None = None,
) -> list[Candidate]:
    """The candidates among ``pairs`` of key-table rows (each with its edit feature when the blocking computed it),
    with their evidence, best first (see ``find_candidates`` for the other arguments). ``evidence``: the finder
    to quote with, instead of one made from ``documents``' texts, ``table.mentions`` and ``known_evidence``."""
    scorer = _Scorer(table, config)
    found = []
    progress = Progress("resolve entities", len(pairs), every=500)
    for (i, j), edit in pairs:
        candidate = scorer.score(i, j, edit)
        if candidate is not None:
            found.append(candidate)
        progress.advance()
    finder = evidence
    if finder is None:
        texts = document_texts(documents)
        finder = EvidenceFinder(table.mentions, texts, config.evidence_per_side, known_evidence) if texts else None
    if finder is not None:
        found = [
            replace(c, left_evidence=finder.of(c.left_key), right_evidence=finder.of(c.right_key)) for c in found
        ]
        if quoted is not None:
            quoted.update(finder.quoted)
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
    table = build_key_table(mentions, documents, vectors, config.max_posting, custom_kinds)
    scorer, n = _Scorer(table, config), len(table.keys)
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



# --- scoring -----------------------------------------------------------------------------------------------


class _Scorer:
    """Scores pairs of the key table; kind compatibility is looked up once per pair of (core) kinds."""

    def __init__(self, table: KeyTable, config: CandidateConfig) -> None:
        self.table, self.config = table, config
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
        containment = word_containment(table.tokens[i], table.tokens[j]) if same_numbers else 0.0
        if edit is None:
            edit = edit_similarity(table.compact[i], table.compact[j], config.edit_floor) if same_numbers else 0.0
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
            korean_english=alias is not None and scripts_differ(table.keys[i], table.keys[j]),
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
            self.compatible[(a, b)] = compatible(a, b)  # the key table compares core kinds only
        return self.compatible[(a, b)]


def _kind_shown(table: KeyTable, i: int) -> str:
    shown, compared = table.kinds[i], table.check_kinds[i]
    return shown if shown == compared else f"{shown} (compared as {compared})"


def _alias_relation(table: KeyTable, i: int, j: int) -> str | None:
    ci, cj = table.compact[i], table.compact[j]
    if cj in table.declared[i] or ci in table.declared[j]:
        return "declared"
    if cj in table.written[i] or ci in table.written[j]:
        return "written"
    if not table.names[i].isdisjoint(table.names[j]):
        return "shared"
    return None


def _is_acronym(table: KeyTable, long: int, short: int) -> bool:
    return len(table.compact[short]) >= 2 and table.compact[short] in table.acronyms[long]


def _rescaled(cosine: float | None, floor: float) -> float:
    if cosine is None or cosine <= floor:
        return 0.0
    return (cosine - floor) / (1.0 - floor) if floor < 1.0 else 0.0


def _share(a: frozenset[str], b: frozenset[str], common: int) -> float:
    smaller = min(len(a), len(b))
    return common / smaller if smaller else 0.0


__all__ = [
    "WEAK_KINDS",
    "Candidate",
    "CandidateConfig",
    "Evidence",
    "Features",
    "all_pair_candidates",
    "candidates_frame",
    "compact_form",
    "comparable_kind",
    "dominant_kind",
    "find_candidates",
    "front_matter_aliases",
    "mention_evidence",
    "score_pairs",
]
