"""The knobs of merge-candidate finding: feature weights, floors, the thresholds and the blocking limits.

One job: hold the settings that the key table, the blocking and the scorer all read, and refuse combinations the
blocking's exactness relies on (an edit floor the trigram filter can bound, a shared-documents weight that cannot
reach ``min_score`` on its own because shared documents have no index). It lives apart from
``resolve.candidates`` so that the blocking can read it without importing the module that calls the blocking.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
