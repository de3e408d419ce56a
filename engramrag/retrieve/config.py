"""Settings of the retrieval index and of a search, one dataclass each, every field with its help."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class IndexConfig:
    """How the graph index (the ``retrieval_index`` asset) is built."""

    synonym_threshold: float = field(
        default=0.8, metadata={"help": "Cosine similarity of two entity labels above which they get a synonym edge."}
    )
    synonym_neighbours: int = field(
        default=10, metadata={"help": "Nearest labels considered per label for synonym edges."}
    )
    density_neighbours: int = field(
        default=10, metadata={"help": "k of the local density (mean similarity to the k nearest labels) used by CSLS."}
    )
    title_edge_weight: float = field(
        default=3.0,
        metadata={"help": "Extra factor on the mention edge between a note and the entity it is about (its title)."},
    )
    analysis_edge_weight: float = field(
        default=0.5,
        metadata={"help": "Weight of a machine-proposed relation (e.g. co-occurrence) relative to an asserted one."},
    )
    mention_edge_weight: float = field(
        default=1.0,
        metadata={"help": "Weight of a passage–entity mention edge for one mention; n mentions weigh 1 + ln n times."},
    )
    mention_specificity_exponent: float = field(
        default=1.0,
        metadata={
            "help": "Mention edges are scaled by the entity's specificity (log((N+1)/df) / log(N+1), df = notes "
            "naming it) to this power, so a name in every note does not carry the walk to every note. 0: off."
        },
    )


@dataclass(frozen=True)
class RetrievalConfig:
    """How a question becomes ranked documents, a confidence and a context. The defaults were chosen on the union of
    three evaluation sets (MuSiQue, chat logs, team notes; eval/README.md), never on one."""

    damping: float = field(
        default=0.5, metadata={"help": "PageRank damping: probability of following an edge rather than restarting."}
    )
    passage_node_weight: float = field(
        default=0.05,
        metadata={"help": "Weight of a passage's dense/BM25 score in the PageRank restart vector (entity seeds: 1)."},
    )
    entity_candidates: int = field(
        default=30, metadata={"help": "Entity labels fetched by vector search before hub correction."}
    )
    entity_seeds: int = field(default=5, metadata={"help": "Entities kept as seeds from the entity-label leg."})
    csls_query_k: int = field(
        default=10,
        metadata={"help": "k of the query's own density in CSLS (mean cosine to its k nearest labels or triples)."},
    )
    triple_candidates: int = field(default=20, metadata={"help": "Triples fetched by the triple-embedding leg."})
    dense_passage_seeds: bool | None = field(
        default=None,
        metadata={
            "help": "Whether chunk-embedding scores seed passages next to BM25. Unset: yes, except with the hash "
            "embedder, a character n-gram model that only repeats BM25 less well on passages."
        },
    )
    lexical_seeds: int = field(default=10, metadata={"help": "Entities kept from the lexical leg."})
    lexical_min_coverage: float = field(
        default=0.5,
        metadata={"help": "Share (IDF-weighted) of an entity label's words that must occur in the query."},
    )
    passage_candidates: int = field(
        default=50, metadata={"help": "Chunks fetched by each of dense and BM25 search."}
    )
    max_subgraph_nodes: int = field(
        default=2_000,
        metadata={"help": "PageRank runs on the seeds' neighbourhood up to this many nodes (exact below it)."},
    )
    subgraph_hops: int = field(default=3, metadata={"help": "Hops from the seeds that the neighbourhood spans."})
    note_candidates: int = field(
        default=100, metadata={"help": "Notes kept from whole-note BM25 (the lexical floor of the ranking)."}
    )
    fusion_k: float = field(
        default=60.0,
        metadata={"help": "k of the reciprocal rank fusion: a leg's document at rank r adds weight / (k + r)."},
    )
    graph_rank_tolerance: float = field(
        default=0.05,
        metadata={
            "help": "Notes whose PageRank mass differs by less than this share tie for a rank in the graph's "
            "ranking, so the lexical legs decide between them (applied to the graph only: on the chat set, ties "
            "in BM25 cost 2.8 points of recall@5)."
        },
    )
    note_weight: float = field(
        default=1.0, metadata={"help": "Fusion weight of whole-note BM25, the ranking's lexical floor."}
    )
    chunk_weight: float = field(
        default=0.0,
        metadata={
            "help": "Fusion weight of chunk BM25 (LanceDB). 0 by default: on the team-notes set it cut MRR from "
            "0.89 to 0.81 at 0.25 (eval/README.md); chunk BM25 still seeds PageRank and picks the snippets."
        },
    )
    dense_weight: float = field(
        default=0.5, metadata={"help": "Fusion weight of chunk vectors (only where dense passage seeds are on)."}
    )
    graph_weight: float = field(
        default=1.0,
        metadata={
            "help": "Fusion weight of the PageRank ranking before it is scaled by how specific the seeds are "
            "(see graph_specificity_power)."
        },
    )
    graph_specificity_power: float = field(
        default=2.0,
        metadata={
            "help": "The graph's fusion weight is multiplied by the seeds' mean specificity to this power: seeds "
            "named in most notes (a chat's speakers) say little about which note is wanted. 0: a fixed weight."
        },
    )
    seed_specificity_exponent: float = field(
        default=1.0,
        metadata={"help": "Restart weights of seed entities are multiplied by their specificity to this power."},
    )
    passage_length_exponent: float = field(
        default=0.0,
        metadata={
            "help": "A note's PageRank mass is divided by its edge strength to this power before ranking. 0 (raw "
            "mass) by default: 0.5 cut MuSiQue ALL@10 of the graph ranking from 38 to 31, and whole-note BM25 "
            "already keeps long notes from winning by length."
        },
    )
    bridge_head: int = field(
        default=5, metadata={"help": "Places at the top of the fused order that reserved bridge slots come after."}
    )
    bridge_slots: int = field(
        default=5,
        metadata={
            "help": "Most places after bridge_head reserved for the graph's best documents the head lacks (0: "
            "none), scaled by the seeds' specificity (bridge_specificity_power): a multi-hop question's middle "
            "passage enters the results without reordering the head."
        },
    )
    bridge_specificity_power: float = field(
        default=0.5,
        metadata={"help": "The bridge slots used are bridge_slots times the seeds' mean specificity to this power."},
    )
    confidence_documents: int = field(
        default=3, metadata={"help": "Top documents whose coverage of the question's terms sets the confidence."}
    )
    confidence_slope: float = field(
        default=8.5, metadata={"help": "Slope of the logistic curve from term coverage to confidence."}
    )
    confidence_midpoint: float = field(
        default=0.31, metadata={"help": "Coverage (share of the question's IDF mass) at which confidence is 0.5."}
    )
    abstain_below: float = field(
        default=0.5,
        metadata={
            "help": "Below this confidence a search says no_relevant_memory; auto_turn then injects only a "
            "one-line notice."
        },
    )
    temporal_reading: bool = field(
        default=True,
        metadata={
            "help": "Read the question's time (now/still/현재/지금, a date, 'in March 2024') and rank by it: "
            "superseded evidence below its successor, as-of questions from notes dated up to then. Off: the "
            "ranking ignores time (labels are still given)."
        },
    )
    current_recency_weight: float = field(
        default=0.5,
        metadata={
            "help": "On a current-state question, the fusion weight of a leg ranking the first "
            "recency_candidates notes newest first (0: off). 0.5 took the temporal set's stale-above-fresh rate "
            "from 20% to 10% and left chat and team within a question; 1.0 cost chat a point of R@5."
        },
    )
    recency_candidates: int = field(
        default=20, metadata={"help": "How many of the first-ranked notes the recency leg may reorder."}
    )
    context_chars: int = field(default=6000, metadata={"help": "Character budget of the assembled context."})
    fact_share: float = field(
        default=0.2, metadata={"help": "Share of the context reserved for edges touching the top entities."}
    )
    bridge_share: float = field(
        default=0.15, metadata={"help": "Share of the context reserved for bridge edges between seed entities."}
    )
    auto_turn_limit: int = field(default=8, metadata={"help": "Most results an auto_turn search returns."})
    auto_turn_subgraph_nodes: int = field(
        default=500,
        metadata={
            "help": "The neighbourhood cap of an auto_turn search, which runs on every agent turn. At 10,000 notes "
            "its top 8 agreed 92% with a 2,000-node neighbourhood's at a third of the PageRank cost; on MuSiQue "
            "its recall equalled a 1,000-node cap's."
        },
    )
