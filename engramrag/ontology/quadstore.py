"""The quad store: per-document named graphs on disk.

rdflib's in-memory store holds a million quads in several GB of Python objects and must be reloaded in
every process, so the data lives in an Oxigraph store (RocksDB on disk) instead. Graphs are built with
rdflib terms and handed to Oxigraph as one SPARQL update per document, which Oxigraph applies in a single
transaction: a document's graphs are replaced whole or not at all. ``rdflib_dataset`` gives an rdflib view
of the same store through oxrdflib for callers that want rdflib's API.
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from rdflib import Dataset, URIRef

from engramrag.ontology.graphs import DocumentGraphs, EncodedGraphs
from engramrag.ontology.vocab import document_graphs

EXPORT_FORMATS = {"nquads": ox.RdfFormat.N_QUADS, "trig": ox.RdfFormat.TRIG}


@dataclass(frozen=True)
class QuadSwap:
    """What ``QuadStore.swap_quads`` did: the step's own quads now, and the changes to its record of them."""

    mine: list[ox.Quad]
    released: list[str]  # recorded lines the step no longer adds: removed from the store and from the record
    claimed: list[str]  # lines the step owns from now on: add them to the record
    inserted: int  # quads written (the claimed ones and owned ones a re-extraction had dropped)
    owned: list[str] = field(default_factory=list)  # the lines of ``mine``: the record once changed as above


def lined(quads: Iterable[ox.Quad]) -> dict[str, ox.Quad]:
    """Each of ``quads`` once, by its N-Quads line (``str(quad)``), in the order given: what a step's record holds."""
    return {str(quad): quad for quad in quads}


class QuadStore:
    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        if read_only:
            self._store = ox.Store.read_only(str(path))
        else:
            path.mkdir(parents=True, exist_ok=True)
            self._store = ox.Store(str(path))

    @classmethod
    @contextmanager
    def opened(cls, path: Path, read_only: bool = False) -> Iterator[QuadStore]:
        store = cls(path, read_only=read_only)
        try:
            yield store
        finally:
            store.close()

    def close(self) -> None:
        """Let go of the store. A write is kept from the moment its transaction committed (RocksDB writes it to its
        log first, and a later open, read-only ones included, replays the log: a killed process loses nothing it
        committed), so closing does not ask RocksDB to flush its memory tables to table files: that call waits while
        a compaction runs (it will not cause a write stall), and it made one resident edit in fifteen at 10,000 notes
        take 10-18 s instead of 6-8 s (the timeline step's close waited 5-12 s). The next open writes them out."""
        del self._store

    def replace_document(self, relative_path: str, graphs: DocumentGraphs | EncodedGraphs | None) -> None:
        """Atomically drop a document's graphs and insert the new ones (None: only drop), in one SPARQL update
        that Oxigraph applies as a single transaction."""
        assertion, analysis = document_graphs(relative_path)
        parts = [f"DROP SILENT GRAPH <{assertion}> ;", f"DROP SILENT GRAPH <{analysis}> ;"]
        by_graph: dict[str, list[str]] = {}
        for quad in graphs.quads() if graphs is not None else []:
            by_graph.setdefault(str(quad.graph_name), []).append(f"{quad.subject} {quad.predicate} {quad.object} .")
        if by_graph:
            parts.append("INSERT DATA {")
            for name, triples in by_graph.items():  # an ox.NamedNode prints as <iri>
                parts += [f"GRAPH {name} {{", *triples, "}"]
            parts.append("}")
        self._store.update("\n".join(parts))

    def replace_documents(self, batch: list[tuple[str, DocumentGraphs | EncodedGraphs]]) -> None:
        """Replace the graphs of several documents. A document that has graphs already is replaced in its own
        transaction; documents that have none (a first build) are written together through the bulk loader,
        several times faster. The bulk load is not one transaction, which is safe here: writers hold the home's
        exclusive lock, so no reader sees it half done, and a killed load leaves its documents unmarked in the
        catalog, so the next build replaces them again."""
        fresh: list[bytes] = []
        for relative_path, graphs in batch:
            if any(self.has_graph(graph) for graph in document_graphs(relative_path)):
                self.replace_document(relative_path, graphs)
            elif isinstance(graphs, EncodedGraphs):
                fresh.append(graphs.nquads)
            else:
                self._store.bulk_extend(graphs.quads())
        if fresh:
            self._store.bulk_load(b"".join(fresh), format=ox.RdfFormat.N_QUADS)

    def swap_quads(
        self, recorded: Collection[str], add: Iterable[ox.Quad] | Mapping[str, ox.Quad],
        rewritten: Container[ox.NamedNode] | None = None,
    ) -> QuadSwap:  # fmt: skip
        """Replace the quads a step added last time (``recorded``: their N-Quads lines, ``str(quad)``) by the ones
        it adds now, in one transaction, and say which quads are now the step's own: those of ``add`` it owned
        already or that were not in the store.

        For machine additions that live beside a document's extraction, such as accepted supersessions. A quad
        the extraction (or another step) holds too, an author's label say, is left alone and not owned, so that
        the step removing its own quads later never deletes someone else's. Only the difference is written and
        only the lines that left are parsed: at 10,000 notes a step owns about 700,000 quads, nearly all
        unchanged. An owned quad is missing when its note was re-extracted, which drops and rewrites the note's
        graphs whole, so each graph's owned quads are looked up only when the first of them is missing.
        ``rewritten``: when the caller knows which graphs can have been rewritten since its last swap (the graphs of
        the notes extracted since), only those are looked at; every other graph is taken to hold its owned quads
        still (at 100,000 notes a lookup per graph read a cold store: 10 s of every timeline run). ``add`` may come
        with its lines already made (``lined``): a caller that keeps its quads between runs keeps their lines too
        (making them was 1 s of a timeline run at 100,000 notes)."""
        by_line = add if isinstance(add, Mapping) else lined(add)
        wanted, lines = list(by_line.values()), list(by_line)
        owned = recorded if isinstance(recorded, (set, frozenset)) else set(recorded)
        released = list(dict.fromkeys(line for line in recorded if line not in by_line))
        dropped: dict[ox.NamedNode | ox.BlankNode | ox.DefaultGraph, bool] = {}
        missing: list[ox.Quad] = []
        mine: list[ox.Quad] = []
        mine_lines: list[str] = []
        claimed: list[str] = []
        for quad, line in zip(wanted, lines, strict=True):
            if line in owned:
                graph = quad.graph_name
                if graph not in dropped:
                    # The graph's first owned quad: is it still there?
                    may_be = rewritten is None or graph in rewritten
                    dropped[graph] = may_be and quad not in self._store
                if dropped[graph] and quad not in self._store:
                    missing.append(quad)
                mine.append(quad)
                mine_lines.append(line)
            elif quad not in self._store:
                missing.append(quad)
                mine.append(quad)
                mine_lines.append(line)
                claimed.append(line)
        parts = []
        for keyword, quads in (("DELETE DATA", parse_nquads(released)), ("INSERT DATA", missing)):
            if quads:
                body = "\n".join(
                    f"GRAPH {quad.graph_name} {{ {quad.subject} {quad.predicate} {quad.object} }}" for quad in quads
                )
                parts.append(f"{keyword} {{\n{body}\n}}")
        if parts:
            self._store.update(" ;\n".join(parts))
        return QuadSwap(mine, released, claimed, len(missing), mine_lines)

    def count_document(self, relative_path: str) -> int:
        return sum(self.count_graph(graph) for graph in document_graphs(relative_path))

    def count_graph(self, graph: URIRef | str) -> int:
        return sum(1 for _ in self._store.quads_for_pattern(None, None, None, ox.NamedNode(str(graph))))

    def has_graph(self, graph: URIRef | str) -> bool:
        return self._store.contains_named_graph(ox.NamedNode(str(graph)))

    def named_graphs(self) -> list[str]:
        return [graph.value for graph in self._store.named_graphs() if isinstance(graph, ox.NamedNode)]

    def quad_count(self) -> int:
        return len(self._store)

    def matching(
        self, predicate: str, obj: str | None = None, graphs: Sequence[str] | None = None
    ) -> Iterator[ox.Quad]:
        """The quads of the named graphs (or of ``graphs``) with this predicate IRI (and object IRI): one index
        range in Oxigraph, without a query plan (a SPARQL join of two such patterns took 9.6 s where each pattern
        alone takes 0.3 s at 10,000 notes)."""
        pattern = (None, ox.NamedNode(predicate), ox.NamedNode(obj) if obj is not None else None)
        if graphs is None:
            for quad in self._store.quads_for_pattern(*pattern, None):
                if isinstance(quad.graph_name, ox.NamedNode):
                    yield quad
            return
        for graph in graphs:
            yield from self._store.quads_for_pattern(*pattern, ox.NamedNode(graph))

    def contains(self, quad: ox.Quad) -> bool:
        return quad in self._store

    def query(self, sparql: str, **options: Any):
        """A SPARQL query; ``options`` go to Oxigraph (``use_default_graph_as_union``, ``prefixes``…)."""
        return self._store.query(sparql, **options)

    def export(self, output: Path | str, fmt: str, relative_path: str | None = None) -> int:
        """Write the dataset, or one document's graphs, as N-Quads or TriG. Returns the number of quads."""
        if fmt not in EXPORT_FORMATS:
            raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
        quads = list(self._document_quads(relative_path)) if relative_path else list(self._all_document_quads())
        ox.serialize(quads, str(output), EXPORT_FORMATS[fmt])
        return len(quads)

    def quads(self) -> Iterable[ox.Quad]:
        """Every quad of the named graphs, graph by graph in graph order."""
        return self._all_document_quads()

    def _document_quads(self, relative_path: str) -> Iterable[ox.Quad]:
        for graph in document_graphs(relative_path):
            yield from self._store.quads_for_pattern(None, None, None, ox.NamedNode(str(graph)))

    def _all_document_quads(self) -> Iterable[ox.Quad]:
        for graph in sorted(self.named_graphs()):
            yield from self._store.quads_for_pattern(None, None, None, ox.NamedNode(graph))


def parse_nquads(nquads: list[str]) -> list[ox.Quad]:
    """Quads recorded as N-Quads lines (``str(quad)``, no final dot), as a step that swaps its own quads keeps
    them between builds."""
    if not nquads:
        return []
    text = " .\n".join(nquads) + " .\n"
    return list(ox.parse(text.encode("utf-8"), format=ox.RdfFormat.N_QUADS))


def rdflib_dataset(path: Path) -> Dataset:
    """An rdflib Dataset over the on-disk store (oxrdflib). Close it before a writer opens the store."""
    dataset = Dataset(store="Oxigraph")
    dataset.open(str(path))
    return dataset
