"""From a question to ranked documents, a confidence and a budgeted context.

``full`` runs every leg: whole-note BM25, chunk BM25, chunk vectors (with a semantic embedder), and
Personalized PageRank from the seed entities (lexical, entity-label and triple legs, each seed weighted by
how specific it is) and, lightly, the seed passages. The documents' order is one weighted reciprocal rank
fusion of the legs' rankings (fusion.py), with whole-note BM25 as its floor and the graph's weight following
the seeds' specificity. ``auto_turn`` skips every embedding and returns at most a handful of results,
flagged as possibly partial or stale, or only a notice when nothing relevant was found. The ablations used
by the evaluation: ``graph_off`` (the same fusion without the graph), ``notes_only`` (whole-note BM25),
``bm25_only`` (chunk BM25) and ``dense_only``.
"""

from __future__ import annotations

import heapq
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from itertools import pairwise
from typing import Any, Literal

import numpy as np

from engramrag.embed.base import Embedder
from engramrag.embed.registry import make_embedder
from engramrag.extract.textutil import normalise_label
from engramrag.ontology.vocab import document_iri
from engramrag.retrieve.answer import LEGS, Fact, Hit, SearchAnswer
from engramrag.retrieve.config import RetrievalConfig
from engramrag.retrieve.context import AUTO_TURN_NOTICE, assemble_context, notice_only
from engramrag.retrieve.fusion import (
    confidence,
    coverage,
    fuse,
    length_normalised,
    seed_specificity,
    with_reserved_slots,
)
from engramrag.retrieve.index import RetrievalIndex
from engramrag.retrieve.lexical import LabelTerms, terms
from engramrag.retrieve.note_bm25 import question_terms
from engramrag.retrieve.ppr import LocalPageRank, personalized_pagerank
from engramrag.retrieve.replacements import Replacements
from engramrag.retrieve.seeds import Seeds, best_per_document, hub_corrected, scaled, triple_seeds
from engramrag.retrieve.temporal import TemporalReading, read_temporal, without_current_cues
from engramrag.store import Home
from engramrag.vectors.lancedb_store import VectorStore

Mode = Literal["full", "auto_turn"]
Ablation = Literal["graph_off", "notes_only", "bm25_only", "dense_only"]
MODES = ("full", "auto_turn")
ABLATIONS = ("graph_off", "notes_only", "bm25_only", "dense_only")
NO_RELEVANT_NOTICE = "nothing relevant found: the memory holds no note that matches this question"


FACT_CANDIDATES = 100  # statements about the top entities handed to context assembly


class EmbedderMismatch(RuntimeError):
    """The index was built with another embedder than the one given for querying."""


@dataclass
class _Ranked:
    seeds: Seeds
    ppr: dict[int, float]
    order: list[tuple[str, float]]  # (doc_id, score), best first
    top_entities: list[int] = field(default_factory=list)  # entity nodes by PageRank, best first (20)
    local: LocalPageRank | None = None  # the PageRank neighbourhood (None for the ablations)
    query_terms: list[str] = field(default_factory=list)  # the question's whole-note BM25 terms
    ranking: dict[str, float] = field(default_factory=dict)  # the fusion's weights for this question


class Retriever:
    """One opened index; reuse it for many questions (opening costs more than a query)."""

    def __init__(self, home: Home, index: RetrievalIndex, embedder: Embedder, config: RetrievalConfig) -> None:
        self.home = home
        self.index = index
        self.embedder = embedder
        self.config = config
        # The index's recorded dimension, not embedder.dimension: a server embedder would be asked for it,
        # and auto_turn must work while the embedding server is down.
        self.vectors = VectorStore(home.lancedb_path, int(index.manifest["dimension"]), embedder.name)
        chosen = config.dense_passage_seeds
        self.dense_passages = chosen if chosen is not None else not embedder.name.startswith("hash")
        passages = index.db.execute(
            "SELECT node, doc_id, path, title, valid_from, valid_from_source FROM passage_nodes ORDER BY node"
        ).fetchall()
        self.passage_of_doc = {doc: (node, path, title) for node, doc, path, title, _, _ in passages}
        self.doc_of_node = {node: doc for node, doc, *_ in passages}
        self.doc_of_note = [doc for _, doc, *_ in passages]  # whole-note BM25 numbers notes in node order
        self.valid_from = {doc: {"date": day, "source": source} for _, doc, _, _, day, source in passages if day}
        # The lexical leg's tables, held in memory: a few hundred thousand short rows at 10,000 notes.
        idf = dict(index.db.execute("SELECT term, idf FROM term_idf").fetchall())
        self.label_terms = LabelTerms(
            index.db.execute("SELECT node, wording, term FROM label_terms").fetchall(), idf, index.entity_count
        )
        self.labels: list[str] = [
            label for (label,) in index.db.execute("SELECT label FROM entity_nodes ORDER BY node").fetchall()
        ]
        self.replacements = Replacements(index.db, {doc: path for doc, (_, path, _) in self.passage_of_doc.items()})

    @classmethod
    def open(
        cls, home: Home | str, embedder: Embedder | None = None, config: RetrievalConfig | None = None
    ) -> Retriever:
        home = home if isinstance(home, Home) else Home.at(home)
        index = RetrievalIndex.open(home)
        built_with = index.manifest["embedder"]
        if embedder is None:
            embedder = make_embedder(built_with.split("/", 1)[0])
        if embedder.name != built_with:
            raise EmbedderMismatch(
                f"the index of {home.root} was built with embedder {built_with!r}, not {embedder.name!r}; "
                "query with the same embedder (ENGRAM_EMBEDDER and its settings) or rebuild with --full."
            )
        return cls(home, index, embedder, config or RetrievalConfig())

    def close(self) -> None:
        self.index.close()

    def search(
        self,
        query: str,
        mode: Mode = "full",
        k: int = 10,
        ablation: Ablation | None = None,
        as_of: str | None = None,
    ) -> SearchAnswer:
        """Ranked documents for ``query``. ``as_of`` (ISO date) asks for the state as it stood then, as a
        question naming a date does ("in March 2024", "2024년 3월에는")."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
        if ablation is not None and ablation not in ABLATIONS:
            raise ValueError(f"unknown ablation {ablation!r}; ablations: {', '.join(ABLATIONS)}")
        if mode == "auto_turn":
            k = min(k, self.config.auto_turn_limit)
        timings: dict[str, float] = {}
        started = time.perf_counter()
        reading = _as_of_reading(as_of) if as_of else read_temporal(query)
        temporal = self.config.temporal_reading
        asked = without_current_cues(query) if temporal and reading.intent == "current" else query
        ranked = self._rank(asked, mode, ablation, timings)
        order = self._dated_up_to(ranked.order, reading) if temporal else ranked.order
        if temporal and reading.intent == "current" and self.config.current_recency_weight > 0:
            order = self._newest_favoured(order)
        if self.replacements:
            successors = self.replacements.successors(
                reading, set(ranked.query_terms), temporal, [doc for doc, _ in order]
            )
            order = _below_successors(order, successors)
        top = order[:k]
        covered = self._coverage(ranked.query_terms, [doc for doc, _ in top])
        sure = round(confidence(covered, self.config.confidence_slope, self.config.confidence_midpoint), 4)
        ranked.ranking["coverage"] = round(covered, 4)
        nothing_relevant = sure < self.config.abstain_below
        warnings = [AUTO_TURN_NOTICE] if mode == "auto_turn" else []
        if nothing_relevant:
            warnings.append(f"{NO_RELEVANT_NOTICE} (confidence {sure:.2f}); do not rely on these results")
        if mode == "auto_turn" and nothing_relevant:
            timings["total"] = _ms(started)
            return SearchAnswer(
                query, mode, [], notice_only(query, NO_RELEVANT_NOTICE), warnings, [], [],
                self._seed_list(ranked.seeds), timings, sure, True, ranked.ranking, reading.to_json(),
            )
        hits = self._hits(top, ranked, reading)
        mark = time.perf_counter()
        facts, bridges, bridge_paths = self._facts(ranked, hits)
        notices = [AUTO_TURN_NOTICE] if mode == "auto_turn" else []
        if nothing_relevant:
            notices.append(NO_RELEVANT_NOTICE)
        context, facts, bridges = assemble_context(
            query, hits, facts, bridges, self.config.context_chars, self.config.fact_share,
            self.config.bridge_share, " ".join(notices) or None,
        )
        timings["context"] = _ms(mark)
        timings["total"] = _ms(started)
        if not hits:
            warnings.append("nothing matched the query; try other words or check that the vault was built")
        return SearchAnswer(
            query, mode, hits, context, warnings, facts, bridge_paths, self._seed_list(ranked.seeds), timings,
            sure, nothing_relevant, ranked.ranking, reading.to_json(),
        )

    def _dated_up_to(self, order: list[tuple[str, float]], reading: TemporalReading) -> list[tuple[str, float]]:
        """For a question about the state as of a date: the notes dated up to then first (in their order), then
        the later ones, which cannot say how things stood then but may still help."""
        if reading.intent != "as_of" or reading.as_of is None:
            return order
        later = {doc for doc, _ in order if (self.valid_from.get(doc) or {}).get("date", "") > reading.as_of}
        return [item for item in order if item[0] not in later] + [item for item in order if item[0] in later]

    def _newest_favoured(self, order: list[tuple[str, float]]) -> list[tuple[str, float]]:
        """The first notes re-fused with a leg that ranks them newest first: of two notes that match alike,
        the later one more likely holds the current state."""
        head, rest = order[: self.config.recency_candidates], order[self.config.recency_candidates :]
        by_rank = {doc: 1.0 / (rank + 1) for rank, (doc, _) in enumerate(head)}
        dated = {doc: (self.valid_from.get(doc) or {}).get("date", "") for doc, _ in head}
        newest = {doc: 1.0 / (rank + 1) for rank, doc in enumerate(sorted(dated, key=lambda d: dated[d], reverse=True))
                  if dated[doc]}  # fmt: skip
        fused = fuse({"order": by_rank, "recency": newest},
                     {"order": 1.0, "recency": self.config.current_recency_weight}, self.config.fusion_k)  # fmt: skip
        score = dict(head)
        return [(doc, score[doc]) for doc in sorted(score, key=lambda d: (-fused.get(d, 0.0), d))] + rest

    def _coverage(self, query_terms: list[str], docs: list[str]) -> float:
        """The share of the question's IDF mass that the top documents contain together: the evidence behind
        the confidence (a question whose rare words no top note holds is one the vault cannot answer)."""
        notes = self.index.notes
        wanted = [self.passage_of_doc[doc][0] - self.index.entity_count for doc in docs
                  if doc in self.passage_of_doc][: self.config.confidence_documents]
        return coverage([notes.idf(term) for term in query_terms], notes.presence(query_terms, wanted))

    # ranking ------------------------------------------------------------------------------------------

    def _rank(self, query: str, mode: Mode, ablation: Ablation | None, timings: dict[str, float]) -> _Ranked:
        seeds = Seeds()
        config = self.config
        dense_needed = mode == "full" and ablation in (None, "graph_off", "dense_only")
        mark = time.perf_counter()
        vector = self.embedder.embed([query])[0] if dense_needed else None
        timings["embed"] = _ms(mark)
        query_terms = question_terms(query)
        if ablation != "dense_only":
            mark = time.perf_counter()
            seeds.notes = self._note_scores(query_terms)
            timings["notes"] = _ms(mark)
            mark = time.perf_counter()
            hits = self.vectors.search_text(query, k=config.passage_candidates) if terms(query) else []
            seeds.bm25, bm25_chunks = best_per_document(hits)
            seeds.best_chunk.update(bm25_chunks)
            timings["bm25"] = _ms(mark)
        if vector is not None and ablation not in ("bm25_only", "notes_only"):
            mark = time.perf_counter()
            hits = self.vectors.search_vector("chunks", vector, k=config.passage_candidates)
            seeds.dense, dense_chunks = best_per_document(hits)
            for doc, chunk in dense_chunks.items():
                seeds.best_chunk.setdefault(doc, chunk)
            timings["chunk"] = _ms(mark)
        legs: dict[str, dict[str, float]] = {
            "notes": seeds.notes,
            "chunks": seeds.bm25,
            "dense": seeds.dense if self.dense_passages else {},
        }
        weights = {"notes": config.note_weight, "chunks": config.chunk_weight, "dense": config.dense_weight}
        if ablation is not None:
            scores = {
                "graph_off": fuse(legs, weights, config.fusion_k, {"graph": config.graph_rank_tolerance}),
                "notes_only": seeds.notes,
                "bm25_only": seeds.bm25,
                "dense_only": seeds.dense,
            }[ablation]
            return _Ranked(seeds, {}, _ordered(scores.items()), query_terms=query_terms)
        mark = time.perf_counter()
        seeds.lexical = self._lexical(query)
        timings["lexical"] = _ms(mark)
        if vector is not None:
            mark = time.perf_counter()
            seeds.entity = self._entity(vector)
            timings["entity"] = _ms(mark)
            mark = time.perf_counter()
            seeds.triples = self.vectors.search_vector("triples", vector, k=config.triple_candidates)
            labels = self._nodes_of_labels(label for hit in seeds.triples for label in (hit["subject"], hit["object"]))
            seeds.triple = triple_seeds(seeds.triples, labels, config.csls_query_k)
            timings["triple"] = _ms(mark)
        mark = time.perf_counter()
        entity_weights = seeds.entity_weights()
        specificity = self._seed_specificity(query, seeds)
        reset = {
            node: weight * specificity[node] ** config.seed_specificity_exponent
            for node, weight in entity_weights.items()
        }
        passage_scores = seeds.passage_scores(self.dense_passages)
        for doc, score in passage_scores.items():
            if doc in self.passage_of_doc:
                node = self.passage_of_doc[doc][0]
                reset[node] = reset.get(node, 0.0) + config.passage_node_weight * score
        local = personalized_pagerank(
            self.index.graph,
            self.index.walk,
            reset,
            config.damping,
            config.subgraph_hops,
            config.auto_turn_subgraph_nodes if mode == "auto_turn" else config.max_subgraph_nodes,
            self.index.edges,
        )
        ppr = local.scores
        timings["ppr"] = _ms(mark)
        strength = self.index.strength
        mass = {self.doc_of_node[node]: score for node, score in ppr.items() if node in self.doc_of_node}
        legs["graph"] = length_normalised(
            mass, {doc: float(strength[self.passage_of_doc[doc][0]]) for doc in mass}, config.passage_length_exponent
        )
        specific = seed_specificity(entity_weights, specificity)
        trust = specific**config.graph_specificity_power  # how much the seeds say about which note is wanted
        weights["graph"] = config.graph_weight * trust
        doc_scores = fuse(legs, weights, config.fusion_k, {"graph": config.graph_rank_tolerance})
        slots = int(config.bridge_slots * specific**config.bridge_specificity_power + 0.5)
        order = with_reserved_slots(_ordered(doc_scores.items()), legs["graph"], config.bridge_head, slots)
        entity_count = self.index.entity_count
        top = heapq.nlargest(20, ((score, node) for node, score in ppr.items() if node < entity_count))
        ranking = {"seed_specificity": round(specific, 4), "bridge_slots": slots}
        ranking.update({f"{leg}_weight": round(weight, 4) for leg, weight in weights.items()})
        return _Ranked(
            seeds, ppr, order, [node for _, node in top], local, query_terms, ranking
        )

    def _seed_specificity(self, query: str, seeds: Seeds) -> dict[int, float]:
        """Each seed's specificity: the entity's (how few notes name it), and for a seed the lexical leg found,
        no more than the rarity of the query words that matched it."""
        out = {node: float(self.index.specificity[node]) for node in seeds.entity_weights()}
        rarity = self.label_terms.matched_rarity(terms(query), seeds.lexical)
        for node in seeds.lexical:
            if node not in seeds.entity and node not in seeds.triple:
                out[node] = min(out[node], rarity.get(node, out[node]))
        return out

    def _note_scores(self, query_terms: list[str]) -> dict[str, float]:
        """doc_id -> whole-note BM25 for the best ``note_candidates`` notes that match at all."""
        scores = self.index.notes.scores(query_terms)
        limit = min(self.config.note_candidates, len(scores))
        if not limit:
            return {}
        best = np.argpartition(-scores, limit - 1)[:limit]
        return {self.doc_of_note[int(i)]: float(scores[i]) for i in best if scores[i] > 0}

    def _lexical(self, query: str) -> dict[int, float]:
        return self.label_terms.scores(terms(query), self.config.lexical_min_coverage, self.config.lexical_seeds)

    def _entity(self, vector: np.ndarray) -> dict[int, float]:
        nodes, cosines = self.index.nearest_entities(vector, self.config.entity_candidates)
        return hub_corrected(
            nodes.tolist(),
            cosines.tolist(),
            self.index.entity_density[nodes].tolist(),
            self.config.csls_query_k,
            self.config.entity_seeds,
        )

    def _nodes_of_labels(self, labels: Iterable[str]) -> dict[str, int]:
        keys = {label: normalise_label(label) for label in labels}
        if not keys:
            return {}
        found = dict(
            self.index.db.execute(
                "SELECT node_key, node FROM entity_nodes WHERE list_contains(?, node_key)", [sorted(set(keys.values()))]
            ).fetchall()
        )
        return {label: found[key] for label, key in keys.items() if key in found}

    # results ------------------------------------------------------------------------------------------

    def _hits(self, top: list[tuple[str, float]], ranked: _Ranked, reading: TemporalReading) -> list[Hit]:
        seeds = ranked.seeds
        docs = [doc for doc, _ in top]
        leg_by_doc = self._entity_legs_by_document(seeds, set(docs))
        chunks = dict(seeds.best_chunk)
        missing = [doc for doc in docs if doc not in chunks]
        if missing:
            for doc, text, start, end in self.index.db.execute(
                "SELECT doc_id, snippet, line_start, line_end FROM passage_nodes WHERE list_contains(?, doc_id)",
                [missing],
            ).fetchall():
                chunks[doc] = {"text": text, "line_start": start, "line_end": end}
        statements = self._statements_of(docs, ranked)
        hits = []
        for doc, score in top:
            node, path, title = self.passage_of_doc.get(doc, (None, doc, doc))
            chunk = chunks.get(doc, {})
            legs = {leg: 0.0 for leg in LEGS}
            legs.update(leg_by_doc.get(doc, {}))
            legs["chunk"] = round(float(seeds.dense.get(doc, 0.0)), 6)
            legs["bm25"] = round(float(seeds.bm25.get(doc, 0.0)), 6)
            legs["notes"] = round(float(seeds.notes.get(doc, 0.0)), 6)
            legs["ppr"] = round(float(ranked.ppr.get(node, 0.0)), 8) if node is not None else 0.0
            lines = [chunk.get("line_start"), chunk.get("line_end")] if chunk else []
            hits.append(
                Hit(
                    doc=path,
                    title=title or path,
                    score=float(score),
                    snippet=str(chunk.get("text", "")),
                    legs=legs,
                    provenance={
                        "graph": str(document_iri(path)),
                        "statements": statements.get(doc, []),
                        "lines": lines,
                    },
                    doc_id=doc,
                    superseded_by=self.replacements.labels(doc, reading),
                    valid_from=self.valid_from.get(doc),
                )
            )
        return hits

    def _entity_legs_by_document(self, seeds: Seeds, docs: set[str]) -> dict[str, dict[str, float]]:
        """For each result document, the best lexical / entity / triple score among the seeds it mentions. Found from
        the few result notes' neighbours: a seed named in a third of 100,000 notes has tens of thousands, and walking
        them took 15-20 ms of a search."""
        out: dict[str, dict[str, float]] = defaultdict(dict)
        graph = self.index.graph
        named_in: dict[int, list[str]] = defaultdict(list)  # entity node -> the result documents naming it
        for doc in docs:
            if doc in self.passage_of_doc:
                for neighbour in graph.neighbors(self.passage_of_doc[doc][0]):
                    named_in[neighbour].append(doc)
        for leg_name, leg in (("lexical", seeds.lexical), ("entity", seeds.entity), ("triple", seeds.triple)):
            for node, score in leg.items():
                for doc in named_in.get(node, ()):
                    if score > out[doc].get(leg_name, 0.0):
                        out[doc][leg_name] = round(float(score), 6)
        return out

    def _statements_of(self, docs: list[str], ranked: _Ranked) -> dict[str, list[str]]:
        """The statements of each result document that touch a seed or a top-ranked entity (at most five)."""
        focus = self._top_entities(ranked, 20) | set(ranked.seeds.entity_weights())
        wanted = {self.passage_of_doc[doc][0]: doc for doc in docs if doc in self.passage_of_doc}
        if not wanted or not focus:
            return {}
        table = self.index.statements
        rows = table.of_documents(wanted)
        focus_nodes = np.fromiter(focus, dtype=np.int64, count=len(focus))
        rows = rows[np.isin(table.src[rows], focus_nodes) | np.isin(table.dst[rows], focus_nodes)]
        out: dict[str, list[str]] = defaultdict(list)
        for row in table.rows(rows):
            doc = wanted[row["doc_node"]]
            if len(out[doc]) < 5:
                out[doc].append(row["statement_id"])
        return out

    def _top_entities(self, ranked: _Ranked, count: int) -> set[int]:
        return set(ranked.top_entities[:count])

    # facts and bridges --------------------------------------------------------------------------------

    def _facts(self, ranked: _Ranked, hits: list[Hit]) -> tuple[list[Fact], list[Fact], list[dict[str, Any]]]:
        """The best statements touching the top entities (one per distinct fact), and the bridges."""
        table = self.index.statements
        rows = table.touching(self._top_entities(ranked, 10))
        facts: list[Fact] = []
        if len(rows) and ranked.local is not None:
            local = ranked.local
            pagerank = np.zeros(self.index.graph.vcount())
            pagerank[local.nodes] = [ranked.ppr[node] for node in local.nodes.tolist()]
            score = pagerank[table.src[rows]] + pagerank[table.dst[rows]]
            best = table.best_facts(rows, score, FACT_CANDIDATES)
            for row in table.rows(best):
                facts.append(self._fact(row, "top entity", round(pagerank[row["src"]] + pagerank[row["dst"]], 8)))
        bridges, paths = self._bridges(ranked)
        return facts, bridges, paths

    def _fact(self, row: dict[str, Any], reason: str, score: float) -> Fact:
        return Fact(
            self._label(row["src"]),
            row["label"],
            self._label(row["dst"]),
            self._label(row["doc_node"]),
            row["statement_id"],
            (row["line_start"], row["line_end"]),
            reason,
            score,
        )

    def _bridges(self, ranked: _Ranked) -> tuple[list[Fact], list[dict[str, Any]]]:
        """Statements and documents on the shortest paths between pairs of the strongest seed entities."""
        weights = ranked.seeds.entity_weights()
        seeds = [node for node, _ in sorted(weights.items(), key=lambda item: -item[1])[:4]]
        paths = []
        if ranked.local is not None:
            for i, source in enumerate(seeds[:-1]):
                for path in ranked.local.shortest_paths(source, seeds[i + 1 :]):
                    if 3 <= len(path) <= 5:  # adjacent seeds need no bridge; long paths explain nothing
                        paths.append(path)
        pairs = {
            (min(u, v), max(u, v))
            for path in paths
            for u, v in pairwise(path)
            if u not in self.doc_of_node and v not in self.doc_of_node
        }
        statements = self._pair_statements(pairs)
        facts: list[Fact] = []
        described: list[dict[str, Any]] = []
        for path in paths:
            documents = set()
            for u, v in pairwise(path):
                passage = u if u in self.doc_of_node else v if v in self.doc_of_node else None
                if passage is not None:
                    documents.add(self.passage_of_doc[self.doc_of_node[passage]][1])
                    continue
                fact = statements.get((min(u, v), max(u, v)))
                if fact is not None:  # None: a synonym edge, which no statement says
                    documents.add(fact.doc)
                    if fact not in facts:
                        facts.append(fact)
            described.append(
                {
                    "from": self._label(path[0]),
                    "to": self._label(path[-1]),
                    "path": [self._label(node) for node in path],
                    "documents": sorted(documents),
                }
            )
        return facts, described

    def _pair_statements(self, pairs: set[tuple[int, int]]) -> dict[tuple[int, int], Fact]:
        """One statement (asserted ones first) for each entity pair."""
        table = self.index.statements
        found = {pair: table.between(*pair) for pair in pairs}
        found = {pair: row for pair, row in found.items() if row is not None}
        rows = table.rows(list(found.values()))
        return {pair: self._fact(row, "bridge", 0.0) for pair, row in zip(found, rows, strict=True)}

    def _label(self, node: int) -> str:
        if node in self.doc_of_node:
            return self.passage_of_doc[self.doc_of_node[node]][1]
        return self.labels[node] if 0 <= node < len(self.labels) else str(node)

    def _seed_list(self, seeds: Seeds) -> list[dict[str, Any]]:
        weights = seeds.entity_weights()
        out = []
        for node, weight in sorted(weights.items(), key=lambda item: -item[1])[:10]:
            out.append(
                {
                    "entity": self._label(node),
                    "weight": round(weight, 6),
                    "lexical": round(seeds.lexical.get(node, 0.0), 6),
                    "entity_leg": round(seeds.entity.get(node, 0.0), 6),
                    "triple": round(seeds.triple.get(node, 0.0), 6),
                    "specificity": round(float(self.index.specificity[node]), 4),
                }
            )
        return out


def search(
    query: str,
    home: Home | str,
    mode: Mode = "full",
    k: int = 10,
    ablation: Ablation | None = None,
    config: RetrievalConfig | None = None,
    embedder: Embedder | None = None,
    as_of: str | None = None,
) -> SearchAnswer:
    """One search against a home (opens and closes the index; keep a :class:`Retriever` for many)."""
    retriever = Retriever.open(home, embedder, config)
    try:
        return retriever.search(query, mode=mode, k=k, ablation=ablation, as_of=as_of)
    finally:
        retriever.close()


def _as_of_reading(as_of: str) -> TemporalReading:
    try:
        day = date.fromisoformat(as_of)
    except ValueError:
        raise ValueError(f"as_of wants an ISO date such as 2024-03-31, not {as_of!r}") from None
    return TemporalReading("as_of", day.isoformat(), "--as-of")


def _below_successors(order: list[tuple[str, float]], successors: dict[str, set[str]]) -> list[tuple[str, float]]:
    """Moves each replaced note to just below its lowest-placed successor among the ranked notes (it stays:
    it still answers for the period it covered). When none of its successors was ranked, they come in just
    above it: a question the stale note answers best is the question its successor answers now."""
    if not successors:
        return order
    ranked = list(order)
    position = {doc: i for i, (doc, _) in enumerate(ranked)}
    missing = {doc: later for doc, later in successors.items() if doc in position and not later & position.keys()}
    for doc in sorted(missing, key=lambda stale: -position[stale]):
        at = next(i for i, (d, _) in enumerate(ranked) if d == doc)
        present = {d for d, _ in ranked}
        for other in sorted(missing[doc] - present):
            ranked.insert(at, (other, ranked[at][1]))
    position = {doc: i for i, (doc, _) in enumerate(ranked)}
    moves = []
    for doc, later in successors.items():
        placed = [position[other] for other in later if other in position]
        if doc in position and placed and max(placed) > position[doc]:
            moves.append(doc)
    for doc in sorted(moves, key=lambda moved: -position[moved]):
        entry = ranked.pop(next(i for i, (d, _) in enumerate(ranked) if d == doc))
        after = max(i for i, (d, _) in enumerate(ranked) if d in successors[doc])
        ranked.insert(after + 1, entry)
    return ranked


def _ordered(scores: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    return sorted(scores, key=lambda item: (-item[1], item[0]))


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000.0, 3)


__all__ = ["Retriever", "scaled", "search"]
