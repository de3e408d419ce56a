"""The Extractor protocol and what an extraction is made of.

Entities are document-scoped mentions: two documents that both name "Dagster" produce two entities.
Identity across documents is decided later by resolution, never here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from engramrag.vault.document import Document, Span

if TYPE_CHECKING:
    from engramrag.extract.llm.calls import CallRecord

# The eleven core kinds of DESIGN.md. Custom kinds from configuration are declared under one of these.
CORE_KINDS: tuple[str, ...] = (
    "Person",
    "Organization",
    "Place",
    "Project",
    "Artifact",
    "Concept",
    "Event",
    "Decision",
    "Task",
    "Document",
    "Quantity",
)

GraphRole = Literal["assertion", "analysis"]


@dataclass(frozen=True)
class Entity:
    """A mention of something in one document. ``key`` is unique within the document."""

    key: str
    label: str
    kind: str
    spans: tuple[Span, ...] = ()
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Statement:
    """One relation as found in the document, with where it was found.

    ``obj`` is an entity key when ``object_is_entity`` and a literal value otherwise.
    ``span`` is the exact source span, or None when it honestly cannot be located.
    ``role`` is "assertion" for what the author wrote (headings, links, front matter, key–value lines,
    decision records) and "analysis" for what the machine infers (co-occurrence).
    """

    subject: str
    predicate: str  # a snake_case relation id, e.g. "links_to", "has_status", "co_occurs_with"
    label: str  # the relation as worded in the source, e.g. "decided", "상태"
    obj: str
    object_is_entity: bool
    span: Span | None
    role: GraphRole = "assertion"
    datatype: str | None = None  # "date" for ISO dates, None for plain literals


@dataclass(frozen=True)
class DecisionRecord:
    """A dated decision from DECISIONS.md, an ADR file or a model's answer. ``entity_key`` names its Decision entity.

    ``span`` is where the record is written, or None when it honestly cannot be located (a model reported the
    decision with a quote that is not verbatim in the document): the decision is kept, a position is never invented.
    """

    entity_key: str
    title: str
    date: str | None  # ISO yyyy-mm-dd when known
    status: str | None  # normalised lower-case status: accepted, proposed, superseded, deprecated, ...
    span: Span | None
    supersedes: tuple[str, ...] = ()  # references as written: "ADR-0001", "0001-use-sqlite.md"
    superseded_by: tuple[str, ...] = ()


@dataclass
class Extraction:
    extractor: str
    version: str
    model: str | None = None
    entities: list[Entity] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)
    decisions: list[DecisionRecord] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    unlocated_quotes: int = 0  # model quotes not found in the text: their items (decisions too) have no span
    calls: list[CallRecord] = field(default_factory=list)  # model calls made for it (model extractors only)
    # The custom kinds its entities use, each with the core kind it was declared under when it was extracted. It
    # travels with the extraction (into the document graph and the catalog) so that resolution, run later, does not
    # depend on the configuration still declaring it.
    custom_kinds: dict[str, str] = field(default_factory=dict)

    def core_kind_of(self, kind: str) -> str | None:
        """The core kind ``kind`` stands for in this extraction: itself when core, its declared parent when a
        custom kind, None when it is neither (resolution then treats it as Concept, and says so)."""
        if kind in CORE_KINDS:
            return kind
        parent = self.custom_kinds.get(kind)
        return parent if parent in CORE_KINDS else None


class Extractor(Protocol):
    name: str
    version: str

    def extract(self, document: Document) -> Extraction: ...
