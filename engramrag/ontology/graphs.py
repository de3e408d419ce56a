"""One document's extraction as RDF: its assertion graph ``<doc>``.

Provenance is stated once per graph, not once per statement (issue 16, the lean store): the document node of
the assertion graph names the extractor (``pav:createdBy``) and the human author (``pav:authoredBy``). A statement
belongs to the document whose graph holds it, so it carries only what is its own.

An author's relation appears twice: as the plain triple (subject, relation, object), which graph queries use, and
as a Statement node with where its span starts (``engram:spanStart``, a character offset) and its quote, the
exact text of the span. Its original label (the words the note used: "Owner", "link", "담당자") is stated once per
graph for each relation, as the relation's ``engram:originalLabel`` inside that graph (the label most of the
graph's statements of that relation carry), and on a Statement node only where it differs, so a statement's label
is ``COALESCE(its own, its relation's in its graph)`` (:data:`STATEMENT_LABEL_SPARQL`); one label per statement
was 400,000 quads at 10,000 notes, most of them "link" and "tag". The quote fixes where the span ends, so the
end is not stated again: the span ends at ``spanStart + STRLEN(quote)``. Nor are its lines: they follow from the
start and the note's text (``vault.document.span_of``; the catalog's ``statements.line_start`` and ``line_end``
hold them for every reader), and a ``lineStart`` on each statement was 400,000 quads (8.5% of the store) at
10,000 notes. A statement that says otherwise (a
reviewed supersession, a later value) names its own ``prov:wasDerivedFrom`` and ``pav:createdBy``, which win.

What the catalog holds and no graph reader asks for stays out of the store (issue 16; Oxigraph spends about 290
bytes a quad once RocksDB has compacted it): the machine's co-occurrence pairs (role ``analysis``, most of all
statements) are catalog rows and retrieval-index edges, not quads, as they did not earn their place in retrieval
(README, "Co-occurrence edges do not earn their place"); an entity's number of mentions is the catalog's
``entities.mentions``. The analysis graph ``<doc>#analysis`` holds what later steps propose about the document
(supersessions, later values).

An entity is typed with its kind's class only, and the graph declares the classes it uses: ``kind:Core
rdfs:subClassOf engram:Entity`` for each core kind, and a custom kind ``kind:Custom rdfs:subClassOf kind:Core`` as
the extraction declared it, so the declarations are replaced with the document's graphs and never depend on the
configuration of a later run. Every entity of a graph answers ``?e a/rdfs:subClassOf* engram:Entity`` inside that
graph (a kind neither core nor declared keeps ``a engram:Entity`` itself); typing each entity twice cost a quad
per mention.

The vocabulary is rdflib's (``vocab.py``); the terms are built directly as the quad store's own
(pyoxigraph) terms. Measured on the synthetic vault, building rdflib terms and converting them cost 13 ms
of a document's 23 ms of RDF work; native terms cost under 3 ms, and the store takes them as they are.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import pyoxigraph as ox

from engramrag.extract.base import Extraction, Statement
from engramrag.ontology.vocab import (
    DCTERMS,
    ENGRAM,
    ENTITY_FRAGMENT,
    PAV,
    PROV,
    RDF,
    RDFS,
    SKOS,
    STATEMENT_FRAGMENT,
    XSD,
    agent_iri,
    document_iri,
    extractor_iri,
    kind_iri,
    relation_iri,
)
from engramrag.vault.dates import DocumentDate
from engramrag.vault.document import Document
from engramrag.vault.ids import short_hash

Term = ox.NamedNode | ox.Literal | ox.BlankNode
Triple = tuple[Term, Term, Term]


def _iri(term: str) -> ox.NamedNode:
    return ox.NamedNode(str(term))


TYPE, LABEL, ALT_LABEL = _iri(RDF.type), _iri(RDFS.label), _iri(SKOS.altLabel)
SUBCLASS_OF = _iri(RDFS.subClassOf)
STATEMENT, ENTITY, DOCUMENT = _iri(ENGRAM.Statement), _iri(ENGRAM.Entity), _iri(ENGRAM.Document)
PROV_ENTITY, SOFTWARE_AGENT, AGENT = _iri(PROV.Entity), _iri(PROV.SoftwareAgent), _iri(PROV.Agent)
TITLE, PATH, BODY_HASH, AGENT_AUTHORED, MODEL = (
    _iri(DCTERMS.title),
    _iri(ENGRAM.path),
    _iri(ENGRAM.bodyHash),
    _iri(ENGRAM.agentAuthored),
    _iri(ENGRAM.model),
)
SUBJECT, PREDICATE, OBJECT = _iri(RDF.subject), _iri(RDF.predicate), _iri(RDF.object)
ORIGINAL_LABEL, QUOTE = _iri(ENGRAM.originalLabel), _iri(ENGRAM.quote)
SPAN_START, LINE_START = _iri(ENGRAM.spanStart), _iri(ENGRAM.lineStart)
DERIVED_FROM, CREATED_BY, AUTHORED_BY = _iri(PROV.wasDerivedFrom), _iri(PAV.createdBy), _iri(PAV.authoredBy)
XSD_DATE, XSD_INTEGER, XSD_BOOLEAN = _iri(XSD.date), _iri(XSD.integer), _iri(XSD.boolean)
DATE, DATE_SOURCE = _iri(DCTERMS.date), _iri(ENGRAM.dateSource)


@dataclass
class DocumentGraphs:
    """What extraction writes for a document: its assertion graph. Replacing a document drops its analysis graph
    too (``QuadStore.replace_document``), where later steps wrote their proposals about the old text."""

    assertion_iri: ox.NamedNode
    assertion: list[Triple] = field(default_factory=list)

    @property
    def quad_count(self) -> int:
        return len(self.assertion)

    def quads(self) -> list[ox.Quad]:
        return [ox.Quad(s, p, o, self.assertion_iri) for s, p, o in self.assertion]

    def encoded(self) -> EncodedGraphs:
        """The graphs as N-Quads bytes: cheap to send from an extraction worker to the process that writes."""
        return EncodedGraphs(self.quad_count, ox.serialize(self.quads(), format=ox.RdfFormat.N_QUADS) or b"")


@dataclass(frozen=True)
class EncodedGraphs:
    """A document's graphs, serialised as N-Quads (what the quad store loads)."""

    quad_count: int
    nquads: bytes

    def quads(self) -> list[ox.Quad]:
        return list(ox.parse(self.nquads, format=ox.RdfFormat.N_QUADS)) if self.nquads else []


def statement_id(statement: Statement) -> str:
    """Content-hash id: the same statement at the same place keeps its id across re-extractions."""
    span = statement.span
    where = f"{span.start}:{span.end}" if span else "-"
    return short_hash(statement.role, statement.subject, statement.predicate, statement.obj, where)


def build_document_graphs(
    document: Document, extraction: Extraction, dated: DocumentDate | None = None
) -> DocumentGraphs:
    """The document's assertion graph; ``dated`` (the catalog's date of the document) becomes ``dcterms:date``
    with ``engram:dateSource`` naming where it came from."""
    doc_iri = document_iri(document.path)
    doc = _iri(doc_iri)
    graphs = DocumentGraphs(doc)
    extractor = _iri(extractor_iri(extraction.extractor, extraction.version))
    author = _iri(agent_iri(document.author)) if document.author else None
    add = graphs.assertion.append

    add((doc, TYPE, DOCUMENT))
    add((doc, TYPE, PROV_ENTITY))
    add((doc, TITLE, ox.Literal(document.title)))
    add((doc, PATH, ox.Literal(document.path)))
    add((doc, BODY_HASH, ox.Literal(document.body_hash)))
    add((doc, AGENT_AUTHORED, ox.Literal(str(document.agent_authored).lower(), datatype=XSD_BOOLEAN)))
    if dated is not None:
        add((doc, DATE, ox.Literal(dated.value, datatype=XSD_DATE)))
        add((doc, DATE_SOURCE, ox.Literal(dated.source)))
    add((doc, CREATED_BY, extractor))
    add((extractor, TYPE, SOFTWARE_AGENT))
    add((extractor, LABEL, ox.Literal(f"{extraction.extractor} {extraction.version}")))
    if extraction.model:
        add((extractor, MODEL, ox.Literal(extraction.model)))
    if author is not None:
        add((doc, AUTHORED_BY, author))
        add((author, TYPE, AGENT))
        add((author, LABEL, ox.Literal(document.author)))

    entity_prefix = f"{doc_iri}{ENTITY_FRAGMENT}"
    core_kinds: set[str] = set()
    for entity in extraction.entities:
        # No engram:mentionedIn: the entity's IRI and its graph are the document's.
        node = ox.NamedNode(entity_prefix + entity.key)
        add((node, TYPE, _kind(entity.kind)))
        if (core := extraction.core_kind_of(entity.kind)) is not None:
            core_kinds.add(core)  # an engram:Entity through its kind's class, declared below
        else:
            add((node, TYPE, ENTITY))  # a kind nothing declares: typed as an entity directly
        add((node, LABEL, ox.Literal(entity.label)))
        for alias in entity.aliases:
            add((node, ALT_LABEL, ox.Literal(alias)))

    for kind, parent in sorted(extraction.custom_kinds.items()):
        add((_kind(kind), SUBCLASS_OF, _kind(parent)))
    for core in sorted(core_kinds):
        add((_kind(core), SUBCLASS_OF, ENTITY))

    asserted = [statement for statement in extraction.statements if statement.role == "assertion"]
    wordings = relation_wordings(asserted)
    for predicate, label in wordings.items():
        add((_relation(predicate), ORIGINAL_LABEL, ox.Literal(label)))
    context = _StatementContext(document, entity_prefix, f"{doc_iri}{STATEMENT_FRAGMENT}", wordings)
    for statement in asserted:
        context.add(graphs.assertion, statement)
    # A relation stated on two lines is one plain triple in the store: count what the store holds.
    graphs.assertion = list(dict.fromkeys(graphs.assertion))
    return graphs


class _StatementContext:
    """What every statement of one document shares, so each statement costs only its own terms."""

    def __init__(self, document: Document, entity_prefix: str, statement_prefix: str, wordings: dict[str, str]
                 ) -> None:  # fmt: skip
        self.document, self.entity_prefix, self.statement_prefix = document, entity_prefix, statement_prefix
        self.wordings = wordings

    def triple(self, statement: Statement) -> Triple:
        subject = ox.NamedNode(self.entity_prefix + statement.subject)
        if statement.object_is_entity:
            obj: Term = ox.NamedNode(self.entity_prefix + statement.obj)
        elif statement.datatype == "date":
            obj = ox.Literal(statement.obj, datatype=XSD_DATE)
        else:
            obj = ox.Literal(statement.obj)
        return subject, _relation(statement.predicate), obj

    def add(self, target: list[Triple], statement: Statement) -> None:
        subject, relation, obj = self.triple(statement)
        node = ox.NamedNode(self.statement_prefix + statement_id(statement))
        target += [
            (subject, relation, obj),
            (node, TYPE, STATEMENT),
            (node, SUBJECT, subject),
            (node, PREDICATE, relation),
            (node, OBJECT, obj),
        ]
        if statement.label != self.wordings[statement.predicate]:
            target.append((node, ORIGINAL_LABEL, ox.Literal(statement.label)))
        span = statement.span
        if span is not None:
            target += [
                (node, SPAN_START, _integer(span.start)),
                (node, QUOTE, ox.Literal(self.document.text[span.start : span.end])),
            ]


def relation_wordings(statements: list[Statement]) -> dict[str, str]:
    """Per relation, the label most of ``statements`` of it carry (the first seen among equals): the original
    label the graph states once for the relation."""
    counts: dict[str, Counter[str]] = {}
    for statement in statements:
        counts.setdefault(statement.predicate, Counter())[statement.label] += 1
    return {predicate: counted.most_common(1)[0][0] for predicate, counted in counts.items()}


# A statement node's original label in SPARQL: its own, else its relation's in the same graph. Bind ?statement
# (and ?g, its graph) before using it.
STATEMENT_LABEL_SPARQL = f"""
    OPTIONAL {{ ?statement <{ENGRAM.originalLabel}> ?ownLabel }}
    OPTIONAL {{
        ?statement <{RDF.predicate}> ?labelledRelation . ?labelledRelation <{ENGRAM.originalLabel}> ?graphLabel
    }}
    BIND(COALESCE(?ownLabel, ?graphLabel) AS ?label)
"""


@lru_cache(maxsize=65536)
def _integer(value: int) -> ox.Literal:
    return ox.Literal(str(value), datatype=XSD_INTEGER)


@lru_cache(maxsize=4096)
def _relation(predicate: str) -> ox.NamedNode:
    return _iri(relation_iri(predicate))


@lru_cache(maxsize=256)
def _kind(kind: str) -> ox.NamedNode:
    return _iri(kind_iri(kind))


__all__ = ["STATEMENT_LABEL_SPARQL", "DocumentGraphs", "EncodedGraphs", "build_document_graphs", "relation_wordings",
           "statement_id"]
