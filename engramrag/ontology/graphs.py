"""One document's extraction as RDF: its assertion graph ``<doc>`` and its analysis graph ``<doc>#analysis``.

Each relation appears twice: as the plain triple (subject, relation, object), which graph queries and
PageRank use, and as a Statement node that carries the provenance: the original label, the exact span and
lines, the document it was derived from, the human author (``pav:authoredBy``, assertion graph only) and
the extractor (``pav:createdBy``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    entity_iri,
    extractor_iri,
    relation_iri,
    statement_iri,
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


def build_document_graphs(document: Document, extraction: Extraction) -> DocumentGraphs:
    doc, analysis = document_graphs(document.path)
    graphs = DocumentGraphs(doc, analysis)
    extractor = extractor_iri(extraction.extractor, extraction.version)
    author = agent_iri(document.author) if document.author else None
    add = graphs.assertion.append

    add((doc, RDF.type, ENGRAM.Document))
    add((doc, RDF.type, PROV.Entity))
    add((doc, DCTERMS.title, Literal(document.title)))
    add((doc, ENGRAM.path, Literal(document.path)))
    add((doc, ENGRAM.bodyHash, Literal(document.body_hash)))
    add((doc, ENGRAM.agentAuthored, Literal(document.agent_authored)))
    add((doc, PAV.createdBy, extractor))
    add((extractor, RDF.type, PROV.SoftwareAgent))
    add((extractor, RDFS.label, Literal(f"{extraction.extractor} {extraction.version}")))
    if extraction.model:
        add((extractor, ENGRAM.model, Literal(extraction.model)))
    if author is not None:
        add((doc, PAV.authoredBy, author))
        add((author, RDF.type, PROV.Agent))
        add((author, RDFS.label, Literal(document.author)))

    for entity in extraction.entities:
        node = entity_iri(document.path, entity.key)
        add((node, RDF.type, ENGRAM.Entity))
        add((node, RDF.type, KIND[entity.kind]))
        add((node, RDFS.label, Literal(entity.label)))
        add((node, ENGRAM.mentionedIn, doc))
        add((node, ENGRAM.mentionCount, Literal(len(entity.spans))))
        for alias in entity.aliases:
            add((node, SKOS.altLabel, Literal(alias)))

    for statement in extraction.statements:
        target = graphs.assertion if statement.role == "assertion" else graphs.analysis
        _add_statement(target, document, statement, extractor, author)
    return graphs


def _add_statement(
    target: list[Triple], document: Document, statement: Statement, extractor: URIRef, author: URIRef | None
) -> None:
    doc = document_graphs(document.path)[0]
    subject = entity_iri(document.path, statement.subject)
    relation = relation_iri(statement.predicate)
    if statement.object_is_entity:
        obj: Node = entity_iri(document.path, statement.obj)
    elif statement.datatype == "date":
        obj = Literal(statement.obj, datatype=XSD.date)
    else:
        obj = Literal(statement.obj)
    target.append((subject, relation, obj))

    node = statement_iri(document.path, statement_id(statement))
    target.append((node, RDF.type, ENGRAM.Statement))
    target.append((node, RDF.subject, subject))
    target.append((node, RDF.predicate, relation))
    target.append((node, RDF.object, obj))
    target.append((node, ENGRAM.originalLabel, Literal(statement.label)))
    target.append((node, ENGRAM.role, Literal(statement.role)))
    target.append((node, PROV.wasDerivedFrom, doc))
    target.append((node, PAV.createdBy, extractor))
    if statement.role == "assertion" and author is not None:
        target.append((node, PAV.authoredBy, author))
    span = statement.span
    if span is not None:
        target.append((node, ENGRAM.spanStart, Literal(span.start)))
        target.append((node, ENGRAM.spanEnd, Literal(span.end)))
        target.append((node, ENGRAM.lineStart, Literal(span.line_start)))
        target.append((node, ENGRAM.lineEnd, Literal(span.line_end)))
        target.append((node, ENGRAM.quote, Literal(document.text[span.start : span.end])))


__all__ = ["DocumentGraphs", "build_document_graphs", "statement_id"]
