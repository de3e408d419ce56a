"""Namespaces and IRIs. PROV-O and PAV for provenance; the project's own terms under ``ENGRAM``."""

from __future__ import annotations

from urllib.parse import quote, unquote

from rdflib import Namespace, URIRef
from rdflib.namespace import DCTERMS, PROV, RDF, RDFS, SKOS, XSD

from engramrag.vault.ids import path_segment

ENGRAM = Namespace("https://engramrag.org/ns#")
REL = Namespace("https://engramrag.org/rel/")
KIND = Namespace("https://engramrag.org/kind/")
PAV = Namespace("http://purl.org/pav/")
VAULT_BASE = "https://engramrag.org/vault/"
AGENT_BASE = "https://engramrag.org/agent/"
EXTRACTOR_BASE = "https://engramrag.org/extractor/"
ANALYSIS_SUFFIX = "#analysis"
ENTITY_FRAGMENT = "#e-"  # <doc>#e-<entity key>
STATEMENT_FRAGMENT = "#s-"  # <doc>#s-<statement id>

__all__ = ["DCTERMS", "ENGRAM", "KIND", "PAV", "PROV", "RDF", "RDFS", "REL", "SKOS", "XSD"]


def document_iri(relative_path: str) -> URIRef:
    """The document node, which is also the name of its assertion graph."""
    return URIRef(VAULT_BASE + path_segment(relative_path))


def analysis_graph_iri(relative_path: str) -> URIRef:
    return URIRef(VAULT_BASE + path_segment(relative_path) + ANALYSIS_SUFFIX)


def document_graphs(relative_path: str) -> tuple[URIRef, URIRef]:
    return document_iri(relative_path), analysis_graph_iri(relative_path)


def path_of_graph(graph_iri: str) -> str | None:
    """The vault-relative path a graph belongs to, or None for a graph that is not a document's."""
    if not graph_iri.startswith(VAULT_BASE):
        return None
    segment = graph_iri[len(VAULT_BASE) :]
    if segment.endswith(ANALYSIS_SUFFIX):
        segment = segment[: -len(ANALYSIS_SUFFIX)]
    return unquote(segment)


def entity_iri(relative_path: str, entity_key: str) -> URIRef:
    return URIRef(f"{document_iri(relative_path)}{ENTITY_FRAGMENT}{entity_key}")


def statement_iri(relative_path: str, statement_id: str) -> URIRef:
    return URIRef(f"{document_iri(relative_path)}{STATEMENT_FRAGMENT}{statement_id}")


def agent_iri(name: str) -> URIRef:
    return URIRef(AGENT_BASE + quote(name.strip(), safe=""))


def extractor_iri(name: str, version: str) -> URIRef:
    return URIRef(f"{EXTRACTOR_BASE}{quote(name, safe='')}/{quote(version, safe='')}")


def relation_iri(predicate: str) -> URIRef:
    return REL[quote(predicate, safe="")]


def kind_iri(kind: str) -> URIRef:
    """The class of a kind: a core kind (``kind:Person``) or a custom kind from configuration (``kind:Dataset``),
    which a document graph that uses it declares ``rdfs:subClassOf`` its core kind."""
    return KIND[quote(kind, safe="")]
