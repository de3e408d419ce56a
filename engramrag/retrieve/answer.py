"""What a search returns: ranked documents with their provenance and per-leg scores, and the context."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

LEGS = ("lexical", "entity", "triple", "chunk", "bm25", "notes", "ppr")


@dataclass
class Hit:
    doc: str  # vault-relative path
    title: str
    score: float
    snippet: str
    legs: dict[str, float]
    provenance: dict[str, Any]  # graph IRI, statement ids, source lines
    doc_id: str = ""
    # What replaced this note, when something did (engramrag/retrieve/replacements.py): [{"by_doc", "by_date",
    # "reason": "declared" | "accepted" | "later_value", "decided_by", "detail", ...}] plus, for a decision,
    # "decision"/"by_decision"/"decided_on"/"by_decided_on", for a property "subject"/"property"/"value"/
    # "by_value"/"since". The note still answers for the period it covered.
    superseded_by: list[dict[str, Any]] = field(default_factory=list)
    # The note's date and where it came from: {"date": "2025-03-04", "source": "front_matter:date" | "file_name" |
    # "heading" | "mtime"} (engramrag/vault/dates.py); None when nothing gives one.
    valid_from: dict[str, str] | None = None


@dataclass
class Fact:
    """One statement put in the context: who said what, where."""

    subject: str
    relation: str
    object: str
    doc: str
    statement: str
    lines: tuple[int | None, int | None]
    reason: str  # "top entity" or "bridge"
    score: float


@dataclass
class SearchAnswer:
    query: str
    mode: str
    results: list[Hit]
    context: str
    warnings: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    bridges: list[dict[str, Any]] = field(default_factory=list)
    seeds: list[dict[str, Any]] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    # How sure the search is that the vault holds something relevant, in [0, 1]; below the configured
    # threshold ``no_relevant_memory`` is set (and auto_turn returns only a notice).
    confidence: float = 0.0
    no_relevant_memory: bool = False
    ranking: dict[str, float] = field(default_factory=dict)  # the fusion's weights for this question
    # The temporal reading used: {"intent": "current" | "as_of" | "none", "as_of": ISO date or None, "cue": ...}
    temporal: dict[str, Any] = field(default_factory=lambda: {"intent": "none", "as_of": None, "cue": None})

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "confidence": self.confidence,
            "no_relevant_memory": self.no_relevant_memory,
            "results": [
                {key: value for key, value in asdict(hit).items() if key != "doc_id"} for hit in self.results
            ],
            "context": self.context,
            "warnings": self.warnings,
            "facts": [asdict(fact) for fact in self.facts],
            "bridges": self.bridges,
            "seeds": self.seeds,
            "ranking": self.ranking,
            "temporal": self.temporal,
            "timings_ms": self.timings_ms,
        }
