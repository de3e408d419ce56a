"""One document's extraction as RDF: its assertion graph ``<doc>`` and its analysis graph ``<doc>#analysis``.

Each relation appears twice: as the plain triple (subject, relation, object), which graph queries and
PageRank use, and as a Statement node that carries the provenance: the original label, the exact span and
lines, the document it was derived from, the human author (``pav:authoredBy``, assertion graph only) and
the extractor (``pav:createdBy``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from rdflib import Literal, URIRef
from rdflib.term import Node

from engramrag.extract.base import Extraction, Statement
from engramrag.ontology.vocab import (
    DCTERMS,
    ENGRAM,
    KIND,
    PAV,
    PROV,
    RDF,
    RDFS,
    SKOS,
    XSD,
    agent_iri,
    document_graphs,
    extractor_iri,
    relation_iri,
)
from engramrag.vault.document import Document
from engramrag.vault.ids import short_hash

Triple = tuple[Node, Node, Node]


@dataclass
class DocumentGraphs:
    assertion_iri: URIRef
    analysis_iri: URIRef
    assertion: list[Triple] = field(default_factory=list)
    analysis: list[Triple] = field(default_factory=list)

    @property
    def quad_count(self) -> int:
        return len(self.assertion) + len(self.analysis)


def statement_id(statement: Statement) -> str:
    """Content-hash id: the same statement at the same place keeps its id across re-extractions."""
    span = statement.span
    where = f"{span.start}:{span.end}" if span else "-"
    return short_hash(statement.role, statement.subject, statement.predicate, statement.obj, where)


# Terms used for every statement, resolved once: rdflib validates an IRI each time a namespace attribute is read.
TYPE, LABEL, ALT_LABEL = RDF.type, RDFS.label, SKOS.altLabel
STATEMENT, ENTITY, DOCUMENT = ENGRAM.Statement, ENGRAM.Entity, ENGRAM.Document
SUBJECT, PREDICATE, OBJECT = RDF.subject, RDF.predicate, RDF.object
ORIGINAL_LABEL, QUOTE, MENTIONED_IN, MENTION_COUNT = (
    ENGRAM.originalLabel,
    ENGRAM.quote,
    ENGRAM.mentionedIn,
    ENGRAM.mentionCount,
)
SPAN_START, SPAN_END, LINE_START, LINE_END = ENGRAM.spanStart, ENGRAM.spanEnd, ENGRAM.lineStart, ENGRAM.lineEnd
DERIVED_FROM, CREATED_BY, AUTHORED_BY = PROV.wasDerivedFrom, PAV.createdBy, PAV.authoredBy


def build_document_graphs(document: Document, extraction: Extraction) -> DocumentGraphs:
    doc, analysis = document_graphs(document.path)
    graphs = DocumentGraphs(doc, analysis)
    extractor = extractor_iri(extraction.extractor, extraction.version)
    author = agent_iri(document.author) if document.author else None
    add = graphs.assertion.append

    add((doc, TYPE, DOCUMENT))
    add((doc, TYPE, PROV.Entity))
    add((doc, DCTERMS.title, Literal(document.title)))
    add((doc, ENGRAM.path, Literal(document.path)))
    add((doc, ENGRAM.bodyHash, Literal(document.body_hash)))
    add((doc, ENGRAM.agentAuthored, Literal(document.agent_authored)))
    add((doc, CREATED_BY, extractor))
    add((extractor, TYPE, PROV.SoftwareAgent))
    add((extractor, LABEL, Literal(f"{extraction.extractor} {extraction.version}")))
    if extraction.model:
        add((extractor, ENGRAM.model, Literal(extraction.model)))
    if author is not None:
        add((doc, AUTHORED_BY, author))
        add((author, TYPE, PROV.Agent))
        add((author, LABEL, Literal(document.author)))

    entity_prefix = f"{doc}#e-"
    for entity in extraction.entities:
        node = URIRef(entity_prefix + entity.key)
        add((node, TYPE, ENTITY))
        add((node, TYPE, KIND[entity.kind]))
        add((node, LABEL, Literal(entity.label)))
        add((node, MENTIONED_IN, doc))
        add((node, MENTION_COUNT, _integer(len(entity.spans))))
        for alias in entity.aliases:
            add((node, ALT_LABEL, Literal(alias)))

    context = _StatementContext(document, doc, entity_prefix, f"{doc}#s-", extractor, author)
    for statement in extraction.statements:
        target = graphs.assertion if statement.role == "assertion" else graphs.analysis
        context.add(target, statement)
    return graphs


class _StatementContext:
    """What every statement of one document shares, so each statement costs only its own terms."""

    def __init__(self, document: Document, doc: URIRef, entity_prefix: str, statement_prefix: str,
                 extractor: URIRef, author: URIRef | None) -> None:
        self.document, self.doc, self.extractor, self.author = document, doc, extractor, author
        self.entity_prefix, self.statement_prefix = entity_prefix, statement_prefix
        self.relations: dict[str, URIRef] = {}

    def add(self, target: list[Triple], statement: Statement) -> None:
        subject = URIRef(self.entity_prefix + statement.subject)
        relation = self.relations.get(statement.predicate)
        if relation is None:
            relation = self.relations[statement.predicate] = relation_iri(statement.predicate)
        if statement.object_is_entity:
            obj: Node = URIRef(self.entity_prefix + statement.obj)
        elif statement.datatype == "date":
            obj = Literal(statement.obj, datatype=XSD.date)
        else:
            obj = Literal(statement.obj)
        node = URIRef(self.statement_prefix + statement_id(statement))
        target += [
            (subject, relation, obj),
            (node, TYPE, STATEMENT),
            (node, SUBJECT, subject),
            (node, PREDICATE, relation),
            (node, OBJECT, obj),
            (node, ORIGINAL_LABEL, Literal(statement.label)),
            (node, DERIVED_FROM, self.doc),
            (node, CREATED_BY, self.extractor),
        ]
        if statement.role == "assertion" and self.author is not None:
            target.append((node, AUTHORED_BY, self.author))
        span = statement.span
        if span is not None:
            target += [
                (node, SPAN_START, _integer(span.start)),
                (node, SPAN_END, _integer(span.end)),
                (node, LINE_START, _integer(span.line_start)),
                (node, LINE_END, _integer(span.line_end)),
                (node, QUOTE, Literal(self.document.text[span.start : span.end])),
            ]


@lru_cache(maxsize=65536)
def _integer(value: int) -> Literal:
    return Literal(value)


__all__ = ["DocumentGraphs", "build_document_graphs", "statement_id"]
