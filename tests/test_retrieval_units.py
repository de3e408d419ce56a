"""Seeding, hub correction, neighbours, PageRank and context assembly on small inputs with known answers."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import igraph as ig
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import scipy.sparse as sp

from engramrag.retrieve.answer import Fact, Hit
from engramrag.retrieve.context import AUTO_TURN_NOTICE, assemble_context
from engramrag.retrieve.lexical import LabelTerms, term_idf, terms
from engramrag.retrieve.neighbours import nearest_neighbours, update_neighbours
from engramrag.retrieve.ppr import adjacency_matrix, neighbourhood, personalized_pagerank, walk_from
from engramrag.retrieve.seeds import Seeds, best_per_document, hub_corrected, triple_seeds


def test_terms_drop_function_words_and_bigram_korean() -> None:
    assert terms("Who is the tech lead of Falcon?") == ["tech", "lead", "falcon"]
    assert terms("박민지는 누구") == ["박민", "민지", "지는", "누구"]


def test_lexical_leg_prefers_fully_named_rare_labels() -> None:
    labels = {
        0: ("falcon",), 1: ("falcon", "catalog"), 2: ("catalog",), 3: ("ingestion", "pipeline"), 4: ("박민", "민지")
    }
    idf = term_idf({"falcon": 2, "catalog": 2, "ingestion": 1, "pipeline": 1, "박민": 1, "민지": 1}, total=5)
    index = LabelTerms([(node, 0, term) for node, listed in labels.items() for term in listed], idf, len(labels))
    scores = index.scores(terms("Who leads the Falcon catalog?"), 0.5, 10)
    assert scores[1] == 1.0  # both words of "falcon catalog" named: the strongest match
    assert 0 < scores[0] < 1 and 0 < scores[2] < 1
    assert 3 not in scores  # nothing of it named
    korean = index.scores(terms("박민지는 어디 있나"), 0.5, 10)
    assert list(korean) == [4]
    half = index.scores(terms("ingestion"), 0.6, 10)
    assert list(index.scores(terms("falcon"), 0.5, 1)) == [0]  # the limit keeps the best
    # A merged entity with two wordings is fully named by either of them.
    merged = LabelTerms(
        [(0, 0, "postgresql"), (0, 1, "postgres"), (0, 1, "db")], {"postgresql": 2.0, "postgres": 2.0, "db": 1.0}, 1
    )
    assert merged.scores(["postgresql"], 0.9, 5) == {0: 1.0}
    assert half == {}  # one of two equally rare words is below a 0.6 coverage


def test_hub_correction_demotes_a_dense_label_but_keeps_the_raw_top_one() -> None:
    nodes = [10, 11, 12, 13]
    cosines = [0.60, 0.55, 0.50, 0.20]
    densities = [0.90, 0.10, 0.10, 0.10]  # node 10 is a hub: close to everything
    seeds = hub_corrected(nodes, cosines, densities, k=4, limit=2)
    r_query = sum(cosines) / 4
    assert seeds[11] == pytest.approx(2 * 0.55 - r_query - 0.10)  # CSLS, unscaled
    assert seeds[12] == pytest.approx(2 * 0.50 - r_query - 0.10)
    assert seeds[10] == seeds[12] < seeds[11]  # the hub stays a seed, at the weakest kept seed's weight
    assert 13 not in seeds  # does not stand out from the query's neighbourhood
    flat = hub_corrected([1, 2, 3], [0.3, 0.3, 0.3], [0.4, 0.4, 0.4], k=3, limit=3)
    assert flat == {}  # nothing stands out: no seeds rather than noise


def test_triple_and_passage_legs() -> None:
    hits = [
        {"subject": "Minji Park", "object": "Falcon", "score": 0.8},
        {"subject": "Falcon", "object": "Unknown thing", "score": 0.9},
    ]
    seeds = triple_seeds(hits, {"Minji Park": 1, "Falcon": 2}, k=2)
    assert seeds == {2: pytest.approx(0.9 - 0.85)}  # only the triple above the query's mean seeds
    scores, chunks = best_per_document(
        [{"doc_id": "a", "score": 0.2, "chunk_index": 0}, {"doc_id": "a", "score": 0.7, "chunk_index": 3},
         {"doc_id": "b", "score": 0.5, "chunk_index": 1}]
    )
    assert scores == {"a": 0.7, "b": 0.5} and chunks["a"]["chunk_index"] == 3
    combined = Seeds(dense={"a": 0.7, "b": 0.35}, bm25={"b": 10.0}).passage_scores()
    assert combined == {"a": pytest.approx(0.5 / 0.75), "b": 1.0}
    assert Seeds(lexical={1: 1.0}, entity={1: 0.5, 2: 1.0}).entity_weights() == {1: 1.5, 2: 1.0}


def test_nearest_neighbours_and_density_match_brute_force() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[7] = vectors[8]  # an exact synonym pair
    found = nearest_neighbours(vectors, k=5)
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    expected = np.sort(sims, axis=1)[:, ::-1][:, :5]
    assert np.allclose(found.similarities, expected, atol=1e-5)
    assert np.allclose(found.density(5), expected.mean(axis=1), atol=1e-5)
    low, high, similarity = found.pairs_above(0.999)
    assert list(zip(low.tolist(), high.tolist(), strict=True)) == [(7, 8)]
    assert similarity[0] == pytest.approx(1.0, abs=1e-5)
    alone = nearest_neighbours(vectors[:1], k=5)
    assert alone.density(5)[0] == 0.0 and (alone.indices == -1).all()


def _updated_like_a_full_search(before, keys, vectors, after_keys, after_vectors, k):
    """The lists updated from ``before`` to the (sorted) after keys, asserted equal to a full search of them; the
    update, the full search, and the keys and vectors as sorted."""
    order = np.argsort(after_keys)
    after_keys, after_vectors = [after_keys[i] for i in order], after_vectors[order]
    update = update_neighbours(before, keys, vectors, after_keys, after_vectors, k=k)
    full = nearest_neighbours(after_vectors, k=k)
    assert np.array_equal(update.neighbours.indices, full.indices)
    assert np.array_equal(update.neighbours.similarities, full.similarities)
    return update, full, after_keys, after_vectors


def test_neighbours_break_ties_by_index_and_an_update_equals_a_full_search() -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(400, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[20:40] = vectors[20]  # twenty labels with one vector: more ties than k
    keys = [f"key-{i:04d}" for i in range(400)]
    before = nearest_neighbours(vectors, k=5)
    assert before.indices[20].tolist() == [21, 22, 23, 24, 25]  # equal similarity: lower index first
    assert before.indices[25].tolist() == [20, 21, 22, 23, 24]

    # Three labels leave, one changes its vector, four arrive (one a copy of the tied group's vector).
    survivors = [i for i in range(400) if i not in (3, 22, 300)]
    after_keys = [keys[i] for i in survivors] + ["key-0000a", "key-0150a", "key-0399a", "key-9999"]
    arriving = rng.normal(size=(4, 16)).astype(np.float32)
    arriving /= np.linalg.norm(arriving, axis=1, keepdims=True)
    after_vectors = np.vstack([vectors[survivors], arriving])
    after_vectors[-4] = vectors[20]
    after_vectors[survivors.index(100)] = after_vectors[survivors.index(101)]
    update, full, after_keys, after_vectors = _updated_like_a_full_search(before, keys, vectors, after_keys,
                                                                          after_vectors, k=5)  # fmt: skip
    # Only the changed labels and those that had lost a neighbour were searched against everyone.
    assert 5 <= update.recomputed < 60 and update.kept == len(after_keys) - update.recomputed
    unchanged = update_neighbours(full, after_keys, after_vectors, after_keys, after_vectors, k=5)
    assert unchanged.recomputed == 0 and np.array_equal(unchanged.neighbours.indices, full.indices)
    # The very read-only vectors of the same keys (a resident build's edit that names nothing new): the lists as
    # they were, not compared again; a writable matrix (which may have changed in place) is compared.
    after_vectors.setflags(write=False)
    taken = update_neighbours(full, after_keys, after_vectors, after_keys, after_vectors, k=5)
    assert taken.neighbours is full and (taken.recomputed, taken.kept) == (0, len(after_keys))
    writable = after_vectors.copy()
    assert update_neighbours(full, after_keys, writable, after_keys, writable, k=5).neighbours is not full


def test_labels_arriving_near_kept_ones_enter_their_lists_as_a_full_search_puts_them() -> None:
    """Kept lists are compared with arriving labels in float64 only where a float32 product says one could enter
    (``neighbours._reached``): arrivals that are copies or near copies of kept labels (entering lists at every
    place, ties included) and ones far from all of them give exactly the full search's lists."""
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(600, 24)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    keys = [f"key-{i:04d}" for i in range(600)]
    before = nearest_neighbours(vectors, k=6)
    near = vectors[[5, 77, 300, 301]] + rng.normal(scale=0.05, size=(4, 24)).astype(np.float32)
    copies = vectors[[5, 450]]  # ties with the labels they copy
    far = rng.normal(size=(2, 24)).astype(np.float32)
    arriving = np.vstack([near, copies, far])
    arriving /= np.linalg.norm(arriving, axis=1, keepdims=True)
    # A copy of row 10's sixth neighbour named to sort just before it: it ties at the last place and wins it.
    last = int(before.indices[10, 5])
    arriving = np.vstack([arriving, vectors[last]])
    after_keys = keys + [f"key-{i:04d}b" for i in (5, 77, 300, 301, 5, 450, 9, 599)] + [f"key-{last - 1:04d}z"]
    after_vectors = np.vstack([vectors, arriving])
    update, full, after_keys, _ = _updated_like_a_full_search(before, keys, vectors, after_keys, after_vectors, k=6)
    entered = {int(i) for i in np.flatnonzero(np.isin(full.indices, np.flatnonzero(
        [key.endswith(("b", "z")) for key in after_keys])).any(axis=1))}  # fmt: skip
    assert len(entered) >= 10 and update.recomputed == 9  # kept lists took the arrivals in, none searched again
    row = after_keys.index("key-0010")
    assert after_keys[int(full.indices[row, 5])] == f"key-{last - 1:04d}z"


def test_neighbours_found_through_column_groups_equal_an_exact_ordering_of_every_pair() -> None:
    # Enough labels that candidates are chosen by column groups (neighbours._widest), with tied groups larger
    # than k spread across groups and a last, partial group.
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(2_500 + 37, 24)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[rng.choice(len(vectors), 300, replace=False)] = vectors[5]
    vectors[-10:] = vectors[2_000]
    found = nearest_neighbours(vectors, k=5)
    exact = np.round(vectors.astype(np.float64) @ vectors.astype(np.float64).T, 6)
    np.fill_diagonal(exact, -np.inf)
    columns = np.broadcast_to(np.arange(len(vectors)), exact.shape)
    expected = np.lexsort((columns, -exact), axis=1)[:, :5]
    assert np.array_equal(found.indices, expected)
    assert np.array_equal(found.similarities, np.take_along_axis(exact, expected, axis=1).astype(np.float32))


def exact_ppr(graph: ig.Graph, reset: dict[int, float], damping: float) -> np.ndarray:
    """Personalized PageRank by solving the linear system directly, for comparison."""
    n = graph.vcount()
    adjacency = np.array(graph.get_adjacency(attribute="weight").data, dtype=float)
    transition = adjacency / adjacency.sum(axis=0, keepdims=True)
    restart = np.zeros(n)
    for node, weight in reset.items():
        restart[node] = weight
    restart /= restart.sum()
    return np.linalg.solve(np.eye(n) - damping * transition, (1 - damping) * restart)


def walk_of(graph: ig.Graph) -> sp.csc_matrix:
    edges = np.array(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    weights = np.asarray(graph.es["weight"], dtype=float)
    return walk_from(adjacency_matrix(graph.vcount(), edges[:, 0], edges[:, 1], weights))


def test_ppr_matches_the_closed_form_on_a_small_weighted_graph() -> None:
    graph = ig.Graph(n=6, edges=[(0, 1), (1, 2), (2, 3), (3, 4), (1, 5), (5, 3)])
    graph.es["weight"] = [1.0, 2.0, 1.0, 1.0, 0.5, 0.5]
    reset = {0: 1.0, 4: 0.25}
    scores = personalized_pagerank(graph, walk_of(graph), reset, damping=0.5).scores
    expected = exact_ppr(graph, reset, 0.5)
    assert np.allclose([scores[i] for i in range(6)], expected, atol=1e-6)
    assert scores[0] > scores[1] > scores[2]  # mass decays away from the main seed


def test_ppr_on_a_neighbourhood_ranks_like_the_whole_graph_near_the_seeds() -> None:
    graph = ig.Graph.Lattice([30, 30], circular=False)
    graph.es["weight"] = [1.0] * graph.ecount()
    reset = {0: 1.0, 35: 0.5}
    walk = walk_of(graph)
    whole = personalized_pagerank(graph, walk, reset, damping=0.5, hops=3, max_nodes=10_000).scores
    result = personalized_pagerank(graph, walk, reset, damping=0.5, hops=3, max_nodes=60)
    local = result.scores
    assert len(local) <= 60 and len(whole) == 900
    near = sorted(local, key=local.get, reverse=True)[:5]
    assert set(near) == set(sorted(whole, key=whole.get, reverse=True)[:5])  # 1 and 30 tie by symmetry
    assert local[0] == pytest.approx(whole[0], rel=0.1)
    assert set(neighbourhood(walk, {0: 1.0}, hops=1, max_nodes=5).tolist()) == {0, 1, 30}
    # Paths between seeds (35 is row 1, column 5: six steps) are found inside the neighbourhood, in the
    # whole graph's node numbers.
    path_to_35, path_to_far = result.shortest_paths(0, [35, 899])
    assert len(path_to_35) == 7 and path_to_35[0] == 0 and path_to_35[-1] == 35
    assert all(node in local for node in path_to_35) and path_to_far == []


def test_neighbourhood_edges_are_the_induced_subgraphs_pairs_and_give_its_pagerank() -> None:
    """Taking a neighbourhood's edges by column (small nodes) and from the hubs' own matrix gives each linked pair
    once with its parallel edges' summed weight, and PageRank on it equals PageRank on igraph's induced subgraph."""
    from collections import defaultdict

    from engramrag.retrieve.ppr import NeighbourhoodEdges, adjacency_matrix

    rng = np.random.default_rng(3)
    hubs = rng.integers(0, 200, size=(900, 2))  # nodes 0-3 are hubs: most edges touch one of them
    hubs[:, 0] = hubs[:, 0] % 4
    edges = np.concatenate([hubs, rng.integers(0, 200, size=(500, 2)), [[0, 1], [0, 1], [2, 3]]])
    edges = edges[edges[:, 0] != edges[:, 1]]
    weights = rng.uniform(0.1, 2.0, size=len(edges))
    graph = ig.Graph(n=200, edges=edges.tolist(), directed=False)
    graph.es["weight"] = weights.tolist()
    taker = NeighbourhoodEdges(adjacency_matrix(200, edges[:, 0], edges[:, 1], weights), hub_degree=20)
    assert set(taker.hubs.tolist()) >= {0, 1, 2, 3}

    def pairs(sub: ig.Graph, nodes: np.ndarray) -> dict[tuple[int, int], float]:
        found: dict[tuple[int, int], float] = defaultdict(float)
        for (a, b), weight in zip(sub.get_edgelist(), sub.es["weight"], strict=True):
            found[tuple(sorted((int(nodes[a]), int(nodes[b]))))] += weight
        return found

    for seeds in ({0: 1.0, 57: 0.5}, {150: 1.0}, {1: 1.0, 2: 1.0, 3: 0.2}):
        walk = walk_of(graph)
        nodes = neighbourhood(walk, seeds, hops=2, max_nodes=60)
        expected = pairs(graph.induced_subgraph(nodes.tolist()), nodes)
        found = pairs(taker.graph(nodes), nodes)
        assert found.keys() == expected.keys() and len(found) > 20
        assert all(found[key] == pytest.approx(expected[key]) for key in expected)
        by_igraph = personalized_pagerank(graph, walk, seeds, damping=0.5, hops=2, max_nodes=60).scores
        by_columns = personalized_pagerank(graph, walk, seeds, damping=0.5, hops=2, max_nodes=60, edges=taker).scores
        assert by_columns.keys() == by_igraph.keys()
        assert all(by_columns[node] == pytest.approx(by_igraph[node], rel=1e-9) for node in by_igraph)


def test_a_full_neighbourhood_keeps_the_nodes_the_walk_reaches_most() -> None:
    graph = ig.Graph.Star(8)  # 0 is the hub; 1..7 hang off it
    graph.add_edges([(3, 4)])
    graph.es["weight"] = [1.0, 1.0, 1.0, 1.0, 5.0, 1.0, 1.0, 1.0]  # 0-5 is strong
    walk = walk_of(graph)
    assert neighbourhood(walk, {0: 1.0}, hops=1, max_nodes=2).tolist() == [0, 5]
    # From 3, the first hop reaches 0 and 4; the second adds the hub's other leaves, strongest first.
    assert neighbourhood(walk, {3: 1.0}, hops=2, max_nodes=4).tolist() == [0, 3, 4, 5]


def test_ppr_without_seeds_is_empty() -> None:
    graph = ig.Graph(n=3, edges=[(0, 1)])
    graph.es["weight"] = [1.0]
    assert personalized_pagerank(graph, walk_of(graph), {}, 0.5).scores == {}


def hit(rank: int, length: int) -> Hit:
    return Hit(f"doc{rank}.md", f"Doc {rank}", 1.0 / rank, "word " * length, {}, {"lines": [1, 3]})


def fact(i: int, reason: str) -> Fact:
    return Fact(f"Entity {i}", "relates to", f"Other {i}", "a.md", f"s{i}", (i, i), reason, 0.0)


def test_context_stays_within_budget_and_keeps_reserved_bridges() -> None:
    hits = [hit(rank, 400) for rank in range(1, 11)]
    bridges = [fact(1, "bridge"), fact(2, "bridge")]
    facts = [fact(i, "top entity") for i in range(10, 40)]
    text, kept_facts, kept_bridges = assemble_context("q", hits, facts, bridges, 3000, 0.2, 0.15, AUTO_TURN_NOTICE)
    assert len(text) <= 3000
    assert kept_bridges == bridges  # long documents cannot crowd out the reserved bridge places
    assert 0 < len(kept_facts) < len(facts)
    assert "Entity 1 — relates to — Other 1 (a.md:1)" in text
    assert AUTO_TURN_NOTICE in text
    assert "[1] doc1.md" in text
    roomy, _, _ = assemble_context("q", hits[:2], [], [], 3000, 0.2, 0.15)
    assert "## Bridges" not in roomy and len(roomy) <= 3000


# --- fusion, hub control, whole-note BM25 and confidence -----------------------------------------------------


def test_rank_fusion_adds_reciprocal_ranks_and_ignores_unweighted_legs() -> None:
    from engramrag.retrieve.fusion import fuse, ranks

    assert ranks({"a": 2.0, "b": 5.0, "c": 0.0, "d": 2.0}) == {"b": 1, "a": 2, "d": 2}  # equal scores tie
    fused = fuse({"notes": {"a": 3.0, "b": 1.0}, "graph": {"b": 9.0, "c": 1.0}}, {"notes": 1.0, "graph": 0.5}, k=1)
    assert fused == pytest.approx({"a": 1 / 2, "b": 1 / 3 + 0.5 / 2, "c": 0.5 / 3})
    assert fuse({"notes": {"a": 1.0}, "graph": {"c": 1.0}}, {"notes": 1.0, "graph": 0.0}, k=60) == {"a": 1 / 61}


def test_a_confident_keyword_head_survives_a_graph_that_disagrees() -> None:
    from engramrag.retrieve.fusion import fuse

    notes = {"answer": 9.0, "near": 5.0, "far": 1.0}
    graph = {"far": 0.9, "near": 0.5, "answer": 0.01, "hub": 0.8}
    fused = fuse({"notes": notes, "graph": graph}, {"notes": 1.0, "graph": 0.3}, 60)
    assert max(fused, key=fused.__getitem__) == "answer"


def test_node_specificity_is_near_zero_for_a_name_in_every_note() -> None:
    from engramrag.retrieve.index_graph import node_specificity

    assert node_specificity(1, 1000) > 0.9
    assert node_specificity(1000, 1000) < 0.01
    assert node_specificity(10, 1000) > node_specificity(100, 1000)
    assert node_specificity(0, 0) == 1.0


def test_seed_specificity_is_the_restart_weighted_mean() -> None:
    from engramrag.retrieve.fusion import seed_specificity

    specificity = np.array([0.1, 0.9, 0.5])
    assert seed_specificity({0: 1.0, 1: 1.0}, specificity) == pytest.approx(0.5)
    assert seed_specificity({0: 3.0, 1: 1.0}, specificity) == pytest.approx(0.3)
    assert seed_specificity({}, specificity) == 0.0


def test_length_normalised_mass_does_not_favour_a_long_note() -> None:
    from engramrag.retrieve.fusion import length_normalised

    normalised = length_normalised({"long": 0.04, "short": 0.02}, {"long": 16.0, "short": 2.0}, 0.5)
    assert normalised["short"] > normalised["long"]
    assert length_normalised({"a": 0.3}, {"a": 9.0}, 0.0) == {"a": 0.3}


def test_coverage_is_the_share_of_idf_mass_the_documents_hold_together() -> None:
    from engramrag.retrieve.fusion import confidence, coverage

    present = np.array([[True, False, False], [False, True, False]])
    assert coverage([1.0, 2.0, 7.0], present) == pytest.approx(0.3)
    assert coverage([1.0, 2.0], np.zeros((0, 2), dtype=bool)) == 0.0
    assert coverage([], np.zeros((2, 0), dtype=bool)) == 0.0
    assert confidence(0.5, 10.0, 0.5) == pytest.approx(0.5)
    assert confidence(1.0, 10.0, 0.5) > 0.99 > 0.01 > confidence(0.0, 10.0, 0.5)


def test_whole_note_bm25_ranks_a_note_whose_words_are_spread_and_knows_missing_words() -> None:
    from engramrag.retrieve.note_bm25 import NoteIndex, question_terms

    index = NoteIndex.build(
        [
            "Caroline researched adoption agencies.\n\nLater she talked about counselling.",
            "Caroline went hiking with Melanie.",
            "Melanie painted a sunset.",
        ]
    )
    terms = question_terms("What did Caroline research on adoption?")
    assert terms == ["carolin", "research", "adopt"]
    scores = index.scores(terms)
    assert int(np.argmax(scores)) == 0 and scores[2] == 0
    assert index.presence(terms, [0, 1]).tolist() == [[True, True, True], [True, False, False]]
    assert index.idf("banana") > index.idf("carolin")
    assert index.scores(question_terms("banana bread")).max() == 0


def test_korean_question_terms_drop_particles_question_words_and_endings() -> None:
    from engramrag.retrieve.note_bm25 import question_terms

    assert question_terms("김지훈은 무엇을 담당하나?") == ["김지", "지훈", "담당"]
    assert question_terms("누구야?") == []
    assert "뭐였" not in question_terms("강아지 이름이 뭐였지?")


def test_scores_a_leg_cannot_tell_apart_share_a_rank() -> None:
    from engramrag.retrieve.fusion import fuse, ranks

    assert ranks({"a": 1.0, "b": 0.99, "c": 0.97, "d": 0.5}, tolerance=0.05) == {"a": 1, "b": 1, "c": 1, "d": 4}
    assert ranks({"a": 1.0, "b": 0.99}, tolerance=0.0) == {"a": 1, "b": 2}
    # The graph barely prefers "short"; the notes leg clearly prefers "whole": the tie lets the notes decide.
    legs = {"notes": {"whole": 2.0, "short": 1.3}, "graph": {"short": 0.0471, "whole": 0.0464}}
    fused = fuse(legs, {"notes": 1.0, "graph": 1.0}, 60, tolerance={"graph": 0.05})
    assert fused["whole"] > fused["short"]


def test_body_terms_are_cut_once_per_text_and_reread_from_the_previous_index(tmp_path) -> None:
    from collections import Counter

    import pytest

    from engramrag.retrieve.body_terms import BodyTerms, Tokens
    from engramrag.retrieve.lexical import terms
    from engramrag.retrieve.note_bm25 import note_terms
    from engramrag.vault.ids import sha256_hex

    def bags(tokens: Tokens) -> list[Counter]:
        return [Counter(tokens.words(note)) for note in range(tokens.notes)]

    texts = ["Minji owns the Grafana dashboards.", "박민지는 배포를 맡는다.", "Gone after this build.", ""]
    first = BodyTerms.load(None)
    assert first.missing(map(sha256_hex, texts)) == set(map(sha256_hex, texts))
    hashes = [sha256_hex(text) for text in texts]
    cut, stems = first.of(hashes, texts)
    assert (first.cut, first.reused) == (4, 0)
    # Each note as the bag of its terms (the readers count them; their order is not kept).
    assert bags(cut) == [Counter(terms(text)) for text in texts]
    assert bags(stems) == [Counter(note_terms(text)) for text in texts]
    frequency = dict(zip(cut.vocab, cut.document_frequency().tolist(), strict=True))
    assert frequency["minji"] == 1 and frequency["gone"] == 1 and sum(frequency.values()) == len(
        {(note, term) for note, text in enumerate(texts) for term in terms(text)}
    )
    first.save(tmp_path, hashes[:2])

    second = BodyTerms.load(tmp_path)
    assert len(second.known) == 2  # the gone text's terms were not kept
    same = "Minji owns the Grafana dashboards."
    edited = [same, "박민지는 배포와 알림을 맡는다.", same]  # two notes with one text
    edited_hashes = [sha256_hex(text) for text in edited]
    assert second.missing(edited_hashes) == {edited_hashes[1]}  # only the changed note's text must be read
    again, again_stems = second.of(edited_hashes, [None, edited[1], None])
    assert (second.cut, second.reused) == (1, 2)
    assert bags(again) == [Counter(terms(text)) for text in edited]
    assert bags(again_stems) == [Counter(note_terms(text)) for text in edited]
    # The saved vocabulary holds only what the kept notes use: the gone note's words left with it.
    second.save(tmp_path, edited_hashes)
    third = BodyTerms.load(tmp_path)
    kept, _ = third.of(edited_hashes, [None, None, None])
    assert "gone" not in kept.vocab and sorted(kept.vocab) == sorted({t for text in edited for t in terms(text)})
    with pytest.raises(ValueError, match="not known"):
        BodyTerms.load(None).of([edited_hashes[0]], [None])
    # Saved from the terms a build gathered for its notes (no text listed twice): read back the same, and the
    # vocabulary still holds only what the notes use.
    two = edited_hashes[:2]
    gathered = third.of(two, [None, None])
    (tmp_path / "gathered").mkdir()
    third.save(tmp_path / "gathered", two, gathered)
    reread = BodyTerms.load(tmp_path / "gathered").of(two, [None, None])
    assert [bags(tokens) for tokens in reread] == [bags(tokens) for tokens in gathered]
    assert sorted(reread[0].vocab) == sorted({t for text in edited[:2] for t in terms(text)})


def test_body_terms_gathered_in_runs_are_each_notes_terms(tmp_path) -> None:
    """Notes read from the file in runs of consecutive rows, out of order, repeated, and with texts cut in this
    process between them: each note's terms are its own, in its place."""
    from collections import Counter

    from engramrag.retrieve.body_terms import BodyTerms
    from engramrag.retrieve.lexical import terms
    from engramrag.vault.ids import sha256_hex

    generator = np.random.default_rng(11)
    words = ["alpha", "beta", "gamma", "delta", "falcon", "heron", "ledger", "grafana", "박민지", "배포"]
    texts = [" ".join(generator.choice(words, int(generator.integers(0, 6)))) for _ in range(60)]
    hashes = [sha256_hex(f"{number}:{text}") for number, text in enumerate(texts)]
    first = BodyTerms.load(None)
    first.of(hashes, texts)
    first.save(tmp_path, hashes)
    kept = BodyTerms.load(tmp_path)
    edited = {5: "falcon heron heron", 6: "ledger", 30: "", 59: "gamma alpha"}
    order = [*range(0, 20), 40, 41, 42, 3, 3, *range(20, 40), 0, *range(43, 60)]
    listed = [(sha256_hex(f"new:{edited[n]}:{n}"), edited[n]) if n in edited else (hashes[n], texts[n]) for n in order]
    cut, _stems = kept.of([digest for digest, _ in listed], [text if n in edited else None for n, (_, text) in
                                                             zip(order, listed, strict=True)])  # fmt: skip
    assert kept.cut == len(edited)
    assert [Counter(cut.words(note)) for note in range(cut.notes)] == [Counter(terms(text)) for _, text in listed]
    none, _ = kept.of([], [])  # a vault with no embedded note (its extraction failed)
    assert none.notes == 0 and len(none.ids) == 0


def test_whole_note_bm25_from_stored_ids_scores_as_from_the_words() -> None:
    from engramrag.retrieve.body_terms import BodyTerms
    from engramrag.retrieve.note_bm25 import NoteIndex, note_terms, question_terms
    from engramrag.vault.ids import sha256_hex

    texts = [
        "Caroline researched adoption agencies.\n\nLater she talked about counselling.",
        "Caroline went hiking with Melanie.",
        "",
        "Melanie painted a sunset. 멜라니는 노을을 그렸다.",
    ]
    _, stems = BodyTerms().of([sha256_hex(text) for text in texts], texts)
    from_ids, from_words = NoteIndex.from_tokens(stems), NoteIndex.build(texts, [note_terms(t) for t in texts])
    assert from_ids.frequency == from_words.frequency and from_ids.notes == from_words.notes == 4
    for question in ("What did Caroline research on adoption?", "Melanie sunset", "노을", "banana"):
        asked = question_terms(question)
        assert from_ids.scores(asked).tolist() == from_words.scores(asked).tolist()
    assert from_ids.scores(question_terms("Caroline adoption")).argmax() == 0


def _graph_tables() -> dict:
    import pandas as pd
    import pyarrow as pa

    from engramrag.extract.builder import DOCUMENT_KEY

    passages = pd.DataFrame(
        {
            "doc_id": ["a", "b"], "path": ["a.md", "b.md"], "title": ["Falcon", "B"], "bucket": [0, 1],
            "snippet": ["", ""], "line_start": [1, 1], "line_end": [2, 2],
            "body": ["Falcon uses PostgreSQL.", "falcon is part of PostgreSQL."], "body_hash": ["h-a", "h-b"],
            "front_matter": ["{}", "{}"], "mtime_ns": [0, 0], "doc_date": ["2026-01-01", "2026-02-01"],
            "date_source": ["front_matter"] * 2,
        }
    )
    entities = pd.DataFrame(
        [
            ("a", DOCUMENT_KEY, "Falcon", "Project", 1),
            ("a", "pg", "PostgreSQL", "Tool", 3),
            ("a", "pg2", "Postgres", "Concept", 1),  # joined to "postgresql" by the overlay
            ("a", "noise", "!!!", "Concept", 1),  # normalises to nothing: no node
            ("b", "falcon", "falcon", "Concept", 1),
            ("b", "pg", "PostgreSQL", "Tool", 1),
        ],
        columns=["doc_id", "entity_key", "label", "kind", "mentions"],
    )
    statement_columns = ["doc_id", "statement_id", "subject", "predicate", "label", "object", "role", "line_start",
                         "line_end"]  # fmt: skip
    statements = pd.DataFrame(
        [
            ("a", "s1", DOCUMENT_KEY, "uses", "uses", "pg", "assertion", 1, 1),
            ("a", "s2", "pg", "same_as", "same as", "pg2", "assertion", 1, 1),  # one node: no edge
            ("a", "s3", "ghost", "uses", "uses", "pg", "assertion", 1, 1),  # no such mention: no edge
            ("b", "s4", "falcon", "part_of", "part of", "pg", "cooccurrence", 2, 2),
        ],
        columns=statement_columns,
    )
    empty = pd.DataFrame()
    return {
        "passages": passages, "entities": entities,
        "statements": pa.Table.from_pandas(statements, preserve_index=False),  # as the catalog reader gives them
        "clusters": pd.DataFrame({"entity_key": ["postgres"], "cluster_key": ["postgresql"]}),
        "supersessions": empty, "document_supersessions": empty,
    }


def test_graph_assembly_sums_repeated_edges_and_keeps_the_first_wording_among_equals() -> None:
    import math

    from engramrag.retrieve.config import IndexConfig
    from engramrag.retrieve.edge_kinds import HIERARCHY, MENTION, RELATION
    from engramrag.retrieve.index_graph import assemble_graph, node_specificity

    vectors = {"Falcon": np.array([1.0, 0.0]), "PostgreSQL": np.array([0.0, 1.0]), "Postgres": np.array([0.0, 1.0])}
    graph = assemble_graph(_graph_tables(), vectors, IndexConfig())
    assert graph["node_keys"] == ["falcon", "postgresql"] and graph["entity_count"] == 2
    assert graph["labels"] == ["Falcon", "PostgreSQL"]  # "Falcon" and "falcon" once each: the first seen
    assert graph["kinds"] == ["Project", "Tool"]
    assert graph["mentions"] == [2, 3] and graph["documents"] == [2, 2]
    assert graph["term_lists"] == [[("falcon",)], [("postgresql",), ("postgres",)]]
    assert graph["passages"]["node"].tolist() == [2, 3]
    s = node_specificity(2, 2)
    edges = {
        (int(a), int(b), int(k)): float(w)
        for a, b, k, w in zip(
            graph["edge_src"], graph["edge_dst"], graph["edge_kind"], graph["edge_weight"], strict=True
        )
    }
    assert list(edges) == sorted(edges)
    expected = {
        (0, 1, RELATION): 1.0,  # the asserted "uses"
        (0, 1, HIERARCHY): 0.5,  # a machine-proposed part_of weighs analysis_edge_weight
        (0, 2, MENTION): 3.0 * s,  # the note's title
        (0, 3, MENTION): s,
        (1, 2, MENTION): (1.0 + math.log(3)) * s + s,  # "PostgreSQL" three times and "Postgres" once, one edge
        (1, 3, MENTION): s,
    }
    assert edges.keys() == expected.keys()
    for key, weight in expected.items():
        assert edges[key] == pytest.approx(weight, rel=1e-6)
    rows = graph["edge_statements"]
    # s2 joins two labels the overlay merged: kept (a later verdict may split them), within one node, so no edge.
    assert rows.column("statement_id").to_pylist() == ["s1", "s2", "s4"]
    assert [rows.column(end).to_pylist() for end in ("src", "dst", "doc_node")] == [[0, 1, 0], [1, 1, 1], [2, 2, 3]]
    assert rows.column("subject_key").to_pylist() == ["falcon", "postgresql", "falcon"]
    assert rows.column("object_key").to_pylist() == ["postgresql", "postgres", "postgresql"]


def test_kept_statement_rows_renumbered_equal_rows_joined_afresh() -> None:
    """An index build joins only the changed notes' statements and renumbers the kept rows of the others; after a
    new entity, a split cluster and a changed note, the rows and edges are those of joining every note."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from engramrag.retrieve.config import IndexConfig
    from engramrag.retrieve.edge_statements import KeptRows
    from engramrag.retrieve.index_graph import assemble_graph

    vectors = {label: np.array([1.0, float(i)]) for i, label in
               enumerate(["Falcon", "PostgreSQL", "Postgres", "falcon", "Aardvark"])}  # fmt: skip
    first = assemble_graph(_graph_tables(), vectors, IndexConfig())
    later = _graph_tables()
    # Note a changes: a new entity sorting before the others (every node number moves) with a statement; the
    # overlay no longer joins "Postgres" to "PostgreSQL", so b's kept row renumbers and a's s2 becomes an edge.
    later["entities"] = pd.concat([later["entities"], pd.DataFrame(
        [("a", "aard", "Aardvark", "Animal", 1)], columns=later["entities"].columns)], ignore_index=True)  # fmt: skip
    added = pa.table({name: pa.array([value]) for name, value in zip(
        later["statements"].column_names, ["a", "s0", "aard", "uses", "uses", "pg", "assertion", 3, 3], strict=True)})
    later["statements"] = pa.concat_tables([later["statements"], added.cast(later["statements"].schema)])
    later["clusters"] = pd.DataFrame({"entity_key": [], "cluster_key": []}, dtype=object)
    whole = assemble_graph(later, vectors, IndexConfig())
    kept_b = first["edge_statements"].filter(pc.equal(first["edge_statements"].column("doc_id"), "b"))
    incremental = assemble_graph(
        {**later, "statements": later["statements"].filter(pc.equal(later["statements"].column("doc_id"), "a")),
         "joined_documents": {"a"}, "kept_statements": KeptRows.whole(kept_b)},
        vectors, IndexConfig(),
    )  # fmt: skip

    def plain(rows: pa.Table) -> list[dict]:
        return rows.cast(pa.schema([pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
                                    for f in rows.schema])).to_pylist()  # fmt: skip

    assert plain(incremental["edge_statements"]) == plain(whole["edge_statements"])
    assert plain(whole["edge_statements"]) != plain(first["edge_statements"])
    assert whole["edge_statements"].column("statement_id").to_pylist() == ["s0", "s1", "s2", "s4"]
    for name in ("edge_src", "edge_dst", "edge_kind", "edge_weight"):
        assert np.array_equal(incremental[name], whole[name]), name


def test_graph_assembly_refuses_an_entity_without_a_stored_vector() -> None:
    from engramrag.retrieve.config import IndexConfig
    from engramrag.retrieve.index_graph import assemble_graph

    with pytest.raises(RuntimeError, match=r"no vector.*'postgresql'"):
        assemble_graph(_graph_tables(), {"falcon": np.array([1.0, 0.0])}, IndexConfig())


def test_mentions_number_only_the_labels_held_whether_given_as_text_or_as_categories() -> None:
    """The catalog reader gives documents, labels and kinds as categories; a category no row holds makes no node,
    and plain text gives the same nodes."""
    import pandas as pd

    from engramrag.retrieve.index_graph import _mentions

    tables = _graph_tables()
    as_text, keys = _mentions(tables["entities"], tables["clusters"])
    entities = tables["entities"].assign(
        label=pd.Categorical(tables["entities"]["label"], categories=[*tables["entities"]["label"].unique(), "Ghost"]),
        doc_id=pd.Categorical(tables["entities"]["doc_id"]),
    )
    as_categories, category_keys = _mentions(entities, tables["clusters"])
    assert keys == category_keys == ["falcon", "postgresql"]  # "!!!" normalises to nothing, "Ghost" is held by none
    assert as_text["node"].tolist() == as_categories["node"].tolist() == [0, 1, 1, 0, 1]
    assert as_categories["label"].astype(str).tolist() == as_text["label"].astype(str).tolist()


def test_whole_note_bm25_scores_on_arrays_are_bm25s_own_to_the_bit() -> None:
    import bm25s
    import numpy as np

    from engramrag.retrieve.note_bm25 import NoteIds, _ArrayScoredBM25

    generator = np.random.default_rng(3)
    vocabulary = 300
    # Notes of very different lengths, repeated terms, an empty note and a term no note holds.
    notes = [np.sort(generator.zipf(1.3, size=int(length)) % (vocabulary - 1)) for length in
             generator.integers(0, 400, size=250)]  # fmt: skip
    notes[7] = np.zeros(0, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(n) for n in notes])]).astype(np.int64)
    ids = np.concatenate(notes).astype(np.uint16)
    unique = list(range(vocabulary))
    own = bm25s.BM25(csc_backend="scipy").build_index_from_ids(unique, [n.tolist() for n in notes], False)
    arrays = _ArrayScoredBM25(csc_backend="scipy").build_index_from_ids(unique, NoteIds(ids, offsets), False)
    assert arrays["num_docs"] == own["num_docs"] == 250
    for name in ("data", "indices", "indptr"):
        assert arrays[name].dtype == own[name].dtype and np.array_equal(arrays[name], own[name]), name
    assert own["data"].size > 10_000  # the comparison covered many (note, term) scores


@pytest.mark.parametrize(("placed_by_search", "runs_by_slices"), [(0, 20_000), (5_000, 20_000), (5_000, 0)])
def test_merged_statement_rows_are_in_preference_order(
    monkeypatch: pytest.MonkeyPatch, placed_by_search: int, runs_by_slices: int
) -> None:
    """Kept rows and newly joined rows of other notes, merged by binary search (taken as slices or by Arrow's take)
    or by a sort, in the order a full sort gives (asserted first, then statement id, then document)."""
    import pyarrow as pa

    from engramrag.retrieve import edge_statements

    monkeypatch.setattr(edge_statements, "PLACED_BY_SEARCH", placed_by_search)
    monkeypatch.setattr(edge_statements, "RUNS_BY_SLICES", runs_by_slices)
    generator = np.random.default_rng(5)
    size = 600
    documents = [f"doc{d:02d}" for d in generator.integers(0, 30, size)]
    rows = pa.table({
        "doc_id": documents,
        "statement_id": [f"{s:04x}" for s in generator.integers(0, 200, size)],  # shared ids across notes
        "subject": ["a"] * size, "predicate": ["p"] * size, "label": ["l"] * size, "object": ["b"] * size,
        "role": generator.choice(["assertion", "analysis", "cooccurrence"], size).tolist(),
        "line_start": pa.array(np.arange(size), pa.int32()), "line_end": pa.array(np.arange(size), pa.int32()),
        "subject_key": ["a"] * size, "object_key": ["b"] * size,
    })  # fmt: skip
    rows = edge_statements._encoded(rows)
    rows = rows.take(edge_statements._preference_order(rows))
    changed = {f"doc{d:02d}" for d in range(0, 30, 4)}
    in_changed = np.array([d in changed for d in rows.column("doc_id").to_pylist()])
    joined = edge_statements._encoded(rows.filter(pa.array(in_changed)).cast(pa.schema(
        [pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type) for f in rows.schema])))
    kept = edge_statements.KeptRows(rows, np.flatnonzero(~in_changed))  # the stored table, changed notes' rows too
    assert len(kept.positions) > 300 and joined.num_rows > 50
    merged = edge_statements.merged_rows(kept, joined)
    assert merged.to_pylist() == rows.to_pylist()
    assert all(column.num_chunks == 1 for column in merged.columns)
    # The changed notes' rows gone and none joined: the kept rows alone, in their order.
    alone = edge_statements.merged_rows(kept, joined.slice(0, 0))
    assert alone.to_pylist() == rows.filter(pa.array(~in_changed)).to_pylist()
    assert all(column.num_chunks == 1 for column in alone.columns)
    # No kept row left: the joined rows alone, in one chunk also when they came in several.
    only_joined = edge_statements.merged_rows(edge_statements.KeptRows(rows, np.zeros(0, np.int64)),
                                              pa.concat_tables([joined.slice(0, 20), joined.slice(20)]))  # fmt: skip
    assert only_joined.to_pylist() == joined.to_pylist()
    assert all(column.num_chunks == 1 for column in only_joined.columns)
    assert edge_statements.merged_rows(edge_statements.KeptRows(rows, np.zeros(0, np.int64)), joined.slice(0, 0)) \
        .num_rows == 0  # fmt: skip


def test_wording_terms_kept_beside_the_index_give_the_terms_cut_afresh(tmp_path: Path) -> None:
    from engramrag.retrieve.body_terms import WordingTerms
    from engramrag.retrieve.config import IndexConfig
    from engramrag.retrieve.index_graph import assemble_graph

    vectors = {label: np.array([1.0, float(i)]) for i, label in
               enumerate(["Falcon", "PostgreSQL", "Postgres", "falcon"])}  # fmt: skip
    fresh = WordingTerms()
    first = assemble_graph(_graph_tables(), vectors, IndexConfig(), wording_terms=fresh)
    assert fresh.cut == len(fresh.used) >= 3
    fresh.save(tmp_path)
    kept = WordingTerms.load(tmp_path)
    assert kept.known == fresh.used
    again = assemble_graph(_graph_tables(), vectors, IndexConfig(), wording_terms=kept)
    assert kept.cut == 0 and again["term_lists"] == first["term_lists"]
    assert again["idf"] == first["idf"]
    # The same nodes and wordings: the terms the build before made, and the same texts kept for the next build.
    assert again["term_lists"] is first["term_lists"] and kept.used == fresh.used
    # A text the kept file does not know is cut, and only what a build used is kept.
    kept.known["gone label"] = ("gone",)
    assert kept.of("Heron pipeline") == ("heron", "pipeline") and kept.cut == 1
    kept.save(tmp_path)
    assert "gone label" not in WordingTerms.load(tmp_path).known
    # A broken file costs the work it would have saved, nothing else.
    (tmp_path / "wording_terms.arrow").write_bytes(b"not an arrow file")
    assert WordingTerms.load(tmp_path).known == {}


def test_kept_statement_files_that_cannot_be_read_are_joined_again(tmp_path: Path) -> None:
    import pyarrow as pa

    from engramrag.retrieve import edge_statements

    rows = edge_statements._encoded(pa.table({"doc_id": ["a"], "statement_id": ["s1"], "role": ["assertion"]}))
    edge_statements.save(tmp_path, rows, {"a": "digest"})
    kept = edge_statements.KeptStatements.load(tmp_path)
    assert kept is not None and kept.sources == {"a": "digest"} and kept.unchanged({"a": "digest", "b": "x"}) == {"a"}
    assert kept.rows is rows  # what this process wrote: not read back (10 M rows at 100,000 notes)
    # Another writer's file is read, not the rows this process remembers.
    from engramrag.arrow_files import write_table

    other = edge_statements._encoded(pa.table({"doc_id": ["b"], "statement_id": ["s2"], "role": ["assertion"]}))
    write_table(other, tmp_path / edge_statements.ROWS_FILE)
    assert edge_statements.KeptStatements.load(tmp_path).rows.column("doc_id").to_pylist() == ["b"]
    (tmp_path / edge_statements.ROWS_FILE).write_bytes(b"truncated")
    assert edge_statements.KeptStatements.load(tmp_path) is None


def test_passage_dates_are_the_catalogs_or_computed_for_rows_synced_before_it_held_them() -> None:
    import pandas as pd

    from engramrag.retrieve.index_graph import _valid_from

    passages = pd.DataFrame(
        {
            "path": ["a.md", "notes/2024-03-05-sync.md", "b.md", "c.md", "d.md"],
            "title": ["A", "Sync", "B", "C", None],
            "front_matter": [None, None, '{"date": "2023-01-02"}', None, None],
            "mtime_ns": [None, None, None, 1_700_000_000 * 10**9, None],
            "doc_date": ["2022-07-01", None, None, None, ""],
            "date_source": ["git_first_commit", None, None, None, None],
        }
    ).astype({"doc_date": "str", "date_source": "str", "path": "str"})
    found = _valid_from(passages)
    assert found["valid_from"] == ["2022-07-01", "2024-03-05", "2023-01-02", "2023-11-14", None]
    assert found["valid_from_source"] == ["git_first_commit", "file_name", "front_matter:date", "mtime", None]


def test_keys_matched_between_two_lists_keep_only_rows_present_in_both_and_unchanged() -> None:
    from engramrag.retrieve.neighbours import equal_rows, equal_values, match_keys

    previous_keys, keys = ["a", "b", "c", "d"], ["b", "c", "d", "e"]
    previous = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 2.0]], dtype=np.float32)
    current = np.array([[0.0, 1.0], [1.0, 1.5], [2.0, 2.0], [3.0, 3.0]], dtype=np.float32)  # c changed, e new
    new_of_old, old_of_new, changed = match_keys(previous_keys, keys, equal_rows(previous, current, chunk=1))
    assert new_of_old.tolist() == [-1, 0, -1, 2]  # a gone, c changed
    assert old_of_new.tolist() == [1, -1, 3, -1] and changed.tolist() == [False, True, False, True]
    assert match_keys(previous_keys, keys, equal_rows(previous, current[:, :1]))[2].all()  # another width: all changed
    # Blocks whose rows follow each other on both sides (the same keys, or keys shifted by one) are compared in place.
    same = match_keys(keys, keys, equal_rows(current, np.where(np.arange(4)[:, None] == 2, 9.0, current)))
    assert same[2].tolist() == [False, False, True, False]
    shifted = match_keys(["0", *keys], keys, equal_rows(np.vstack([previous[:1], current]), current, chunk=3))
    assert shifted[1].tolist() == [1, 2, 3, 4] and not shifted[2].any()
    digests = match_keys(previous_keys, keys, equal_values(["1", "2", "3", "4"], ["2", "x", "4", "5"]))
    assert [row.tolist() for row in digests] == [new_of_old.tolist(), old_of_new.tolist(), changed.tolist()]
    assert [row.tolist() for row in match_keys([], keys, equal_values([], []))] == [[], [-1] * 4, [True] * 4]


def test_two_index_builds_in_one_second_get_two_folders_in_the_order_they_ran(tmp_path) -> None:
    # A forced rebuild right after a build (same fingerprint, same second) once failed to publish: its folder existed.
    from engramrag.retrieve.index_build import _version_name
    from engramrag.store import Home

    home = Home.at(tmp_path / "home")
    home.ppr_path.mkdir(parents=True)
    first = _version_name(home, "f" * 40)
    (home.ppr_path / first).mkdir()
    second = _version_name(home, "f" * 40)
    assert second != first and sorted([second, first]) == [first, second]
    (home.ppr_path / second).mkdir()
    assert first[:15] < "20991231T235959" and first.endswith("-" + "f" * 12)


def test_summed_edges_add_repeats_in_row_order_to_the_bit() -> None:
    from engramrag.retrieve.edge_kinds import MENTION, RELATION
    from engramrag.retrieve.index_graph import _summed_edges

    rng = np.random.default_rng(7)
    low, high = rng.integers(0, 6, 400), rng.integers(0, 6, 400)
    kind = rng.choice([MENTION, RELATION], 400)
    weight = rng.random(400) * 10.0 ** rng.integers(-8, 8, 400)  # magnitudes far apart: the order changes the sum
    src, dst, edge_kind, sums = _summed_edges(6, [(low[:250], high[:250], kind[:250], weight[:250]),
                                                  (low[250:], high[250:], kind[250:], weight[250:])])  # fmt: skip
    expected: dict[tuple[int, int, int], float] = {}
    for a, b, k, w in zip(low.tolist(), high.tolist(), kind.tolist(), weight.tolist(), strict=True):
        if a != b:
            expected[(a, b, k)] = expected.get((a, b, k), 0.0) + w
    found = list(zip(src.tolist(), dst.tolist(), edge_kind.tolist(), strict=True))
    assert found == sorted(expected)  # sorted by (low, high, kind), self-loops dropped
    assert sums.tolist() == [expected[edge] for edge in found]  # equal floats, not close ones
    empty = _summed_edges(3, [(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))])
    assert all(len(column) == 0 for column in empty)


def test_keys_summed_with_their_row_numbers_packed_give_what_unique_gives_to_the_bit() -> None:
    """The packed sort (keys that fit in 64 bits beside the row numbers) and the fallback for keys that do not
    give the distinct keys in order and sums added in row order."""
    from engramrag.retrieve.sorted_keys import summed_by_key

    rng = np.random.default_rng(11)
    weight = rng.random(5_000) * 10.0 ** rng.integers(-8, 8, 5_000)
    for top in (50, 2**40, 2**62):  # packed; packed with few bits to spare; too wide to pack
        key = rng.integers(0, 50, 5_000) * (top // 50)
        unique, sums = summed_by_key(key, weight)
        expected: dict[int, float] = {}
        for k, w in zip(key.tolist(), weight.tolist(), strict=True):
            expected[k] = expected.get(k, 0.0) + w
        assert unique.tolist() == sorted(expected)
        assert sums.tolist() == [expected[k] for k in unique.tolist()]
    assert [len(part) for part in summed_by_key(np.zeros(0, dtype=np.int64), np.zeros(0))] == [0, 0]


def test_label_term_rows_are_each_nodes_wordings_terms_in_order() -> None:
    from engramrag.retrieve.index_build import _label_terms

    term_lists = [[("minji", "park"), ("박민지",)], [], [("postgres",)], [(), ("lance", "db")]]
    rows = _label_terms(term_lists)
    assert list(rows.itertuples(index=False, name=None)) == [
        (node, wording, term) for node, wordings in enumerate(term_lists)
        for wording, listed in enumerate(wordings) for term in listed
    ]  # fmt: skip
    assert len(_label_terms([])) == 0 and list(_label_terms([]).columns) == ["node", "wording", "term"]


def test_a_run_memo_keeps_only_the_last_finished_runs_values() -> None:
    import pytest

    from engramrag.run_memo import RunMemo

    memo: RunMemo[str, list[str]] = RunMemo()
    made: list[str] = []

    def make(key: str) -> list[str]:
        made.append(key)
        return [key]

    with memo.run() as value:
        first = value("a", lambda: make("a"))
        assert value("a", lambda: make("a")) is first and value("b", lambda: make("b")) == ["b"]
    with memo.run() as value:
        assert value("a", lambda: make("a")) is first and value("c", lambda: make("c")) == ["c"]
    assert made == ["a", "b", "c"]
    with pytest.raises(RuntimeError), memo.run() as value:  # a run that raised keeps the run before it
        value("d", lambda: make("d"))
        raise RuntimeError("stopped")
    with memo.run() as value:
        value("c", lambda: make("c"))
        value("b", lambda: make("b"))  # "b" was not used by the last finished run: made again
    assert made == ["a", "b", "c", "d", "b"]


def test_last_kept_holds_the_files_put_last() -> None:
    from engramrag.run_memo import LastKept

    kept: LastKept[int] = LastKept(size=2)
    kept.put("home-a", 1)
    kept.put("home-b", 2)
    kept.put("home-a", 3)  # put again: now the latest, "home-b" the oldest
    kept.put("home-c", 4)
    assert (kept.get("home-a"), kept.get("home-b"), kept.get("home-c")) == (3, None, 4)
    assert kept.pop("home-a") == 3 and kept.pop("home-a") is None and kept.get("home-c") == 4
    kept.clear()
    assert kept.get("home-c") is None


def test_documents_per_node_count_each_note_once_as_dropping_duplicate_rows_does() -> None:
    from engramrag.retrieve.index_graph import _documents_per_node

    generator = np.random.default_rng(7)
    docs = pd.Series([f"d{n}" for n in generator.integers(0, 40, 3000)], dtype="category")
    frame = pd.DataFrame({"node": generator.integers(0, 60, 3000), "doc_id": docs})
    expected = frame.drop_duplicates(["node", "doc_id"]).groupby("node").size().reindex(range(64), fill_value=0)
    assert _documents_per_node(frame, 64) == expected.tolist() and sum(expected) < 3000


def test_most_common_values_and_wordings_are_the_pandas_group_bys() -> None:
    # Issue 16: counted as numbers (a pandas group-by, sort and drop per column took 1.2 s at 100,000 notes). The
    # expected values are the pandas computations they replace.
    from engramrag.retrieve.index_graph import _most_common, _wordings, value_runs

    generator = np.random.default_rng(11)
    words = ["Postgres", "postgres", "PostgreSQL", "Minji", "minji", "Lance", "Falcon"]
    for size, nodes in ((4000, 50), (30, 40), (0, 3)):
        frame = pd.DataFrame({
            "node": generator.integers(0, nodes, size),
            "label": pd.Series(generator.choice(words, size), dtype="category"),
            "kind": pd.Series(generator.choice(["Tool", "Person", "Concept"], size), dtype="category"),
        })  # fmt: skip
        for column in ("label", "kind"):
            counted = (
                frame.assign(position=np.arange(len(frame)))
                .groupby(["node", column], sort=False, dropna=False, observed=True)
                .agg(count=("position", "size"), first=("position", "min")).reset_index()
                .sort_values(["node", "count", "first"], ascending=[True, False, True]).drop_duplicates("node")
            )  # fmt: skip
            expected = pd.Series(counted[column].tolist(), index=counted["node"].tolist()).reindex(range(nodes))
            found = _most_common(value_runs(frame, column), nodes, column)
            assert [None if v != v else v for v in found] == [None if v != v else v for v in expected.tolist()]
        wordings: list[list[str]] = [[] for _ in range(nodes)]
        distinct = frame.drop_duplicates(["node", "label"])
        for node, label in zip(distinct["node"].tolist(), distinct["label"].tolist(), strict=True):
            wordings[node].append(label)
        assert _wordings(value_runs(frame, "label"), nodes) == wordings
        assert any(len(listed) > 1 for listed in wordings) or size < 1000  # a merged node has several wordings


def test_value_runs_of_labels_counted_per_label_equal_the_packed_sort() -> None:
    # Issue 16: a label belongs to one node (its key, or its cluster), so its runs are counted per label without
    # sorting the mentions; the runs must be those of the packed sort, field by field. A value met with two nodes
    # (a kind) or a missing one takes the sort.
    from engramrag.retrieve.index_graph import _runs_by_value, value_runs
    from engramrag.retrieve.sorted_keys import key_runs

    generator = np.random.default_rng(5)
    labels = [f"label {i}" for i in range(300)]
    node_of_label = generator.integers(0, 120, len(labels))  # several labels share a node (a cluster)
    for size in (5000, 7, 1):
        chosen = generator.integers(0, len(labels), size)
        frame = pd.DataFrame({
            "node": node_of_label[chosen],
            "label": pd.Series([labels[i] for i in chosen], dtype="category"),
        })  # fmt: skip
        codes = frame["label"].cat.codes.to_numpy().astype(np.int64)
        width = np.int64(len(frame["label"].cat.categories) + 1)
        pairs, first, count = key_runs(frame["node"].to_numpy().astype(np.int64) * width + (codes + 1))
        assert _runs_by_value(frame["node"].to_numpy().astype(np.int64), codes, int(width) - 1) is not None
        runs = value_runs(frame, "label")
        assert runs.node.tolist() == (pairs // width).tolist() and runs.code.tolist() == (pairs % width - 1).tolist()
        assert runs.first.tolist() == first.tolist() and runs.count.tolist() == count.tolist()
    assert _runs_by_value(np.array([0, 1, 0]), np.array([0, 0, 1]), 2) is None  # value 0 with two nodes
    assert _runs_by_value(np.array([0, 1]), np.array([-1, 0]), 1) is None  # a missing value
    assert _runs_by_value(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 0) is None


def test_a_nodes_vector_is_that_of_its_first_mention_whose_label_is_stored() -> None:
    # Issue 16: read off the labels' runs (one sort shared with the wordings and the most common label), not a sort of
    # the mentions of their own; the expected vectors are the rule's loop over the mentions.
    from engramrag.retrieve.index_graph import StoredLabels, _node_vectors, value_runs

    generator = np.random.default_rng(12)
    words = ["Postgres", "postgres", "PostgreSQL", "Minji", "minji", "Lance", "Falcon", "Heron"]
    texts = ["Falcon", "postgres", "Minji", "Lance", "PostgreSQL", "minji"]  # no vector for Heron, nor for Postgres
    matrix = generator.normal(size=(len(texts), 4)).astype(np.float32)
    row_of = {text: row for row, text in enumerate(texts)}
    for size, nodes in ((5000, 60), (60, 15)):
        frame = pd.DataFrame({"node": generator.integers(0, nodes, size), "label": generator.choice(words, size)})
        expected: dict[int, int] = {}
        for node, label in zip(frame["node"].tolist(), frame["label"].tolist(), strict=True):
            if node not in expected and label in row_of:
                expected[node] = row_of[label]
        frame = frame[frame["node"].isin(list(expected))]  # nodes named only by labels without a vector: below
        numbering = {node: number for number, node in enumerate(sorted(expected))}
        frame = frame.assign(node=frame["node"].map(numbering), label=frame["label"].astype("category"))
        found = _node_vectors(value_runs(frame, "label"), StoredLabels(texts, matrix), list(map(str, numbering)),
                              len(numbering))  # fmt: skip
        assert np.array_equal(found, matrix[[expected[node] for node in sorted(expected)]])
        # Some node's first mention has no vector: its vector is that of a later mention.
        assert any(label not in row_of for label in frame.groupby("node", observed=True)["label"].first().tolist())
    nothing = pd.DataFrame({"node": pd.Series([], dtype=np.int64), "label": pd.Series([], dtype="category")})
    assert _node_vectors(value_runs(nothing, "label"), StoredLabels([], np.zeros((0, 4))), [], 0).shape[0] == 0
    assert _node_vectors(value_runs(nothing, "label"), StoredLabels(texts, matrix), [], 0).shape[0] == 0
    unnamed = pd.DataFrame({"node": [0, 1, 1], "label": pd.Series(["Falcon", "Heron", "Postgres"], dtype="category")})
    with pytest.raises(RuntimeError, match="1 entity labels have no vector"):
        _node_vectors(value_runs(unnamed, "label"), StoredLabels(texts, matrix), ["falcon", "heron"], 2)


def test_the_label_numbering_is_kept_for_the_same_labels_and_clusters_only() -> None:
    from engramrag.retrieve.index_graph import _label_nodes, _mentions

    entities = pd.DataFrame({
        "doc_id": ["a", "a", "b", "b"], "entity_key": ["doc", "e1", "doc", "e1"],
        "label": ["Alpha", "Postgres", "Beta", "PostgreSQL"], "kind": ["Document", "Tool", "Document", "Tool"],
        "mentions": [1, 2, 1, 1],
    }).astype({name: "category" for name in ("doc_id", "entity_key", "label", "kind")})  # fmt: skip
    apart = pd.DataFrame({"entity_key": [], "cluster_key": []}, dtype=object)
    merged = pd.DataFrame({"entity_key": ["postgres", "postgresql"], "cluster_key": ["postgres"] * 2})
    first, keys = _mentions(entities, apart)
    again, kept_keys = _mentions(entities, apart.copy())
    assert kept_keys is keys and again.equals(first)
    joined, joined_keys = _mentions(entities, merged)
    labels = tuple(entities["label"].cat.categories.tolist())
    assert joined_keys == _label_nodes(labels, {"postgres": "postgres", "postgresql": "postgres"})[0]
    assert joined_keys == ["alpha", "beta", "postgres"] and keys == ["alpha", "beta", "postgres", "postgresql"]
    assert joined["node"].tolist() == [0, 2, 1, 2]


def test_key_runs_are_numpys_unique_with_first_rows_and_counts() -> None:
    from engramrag.retrieve.sorted_keys import key_runs

    generator = np.random.default_rng(5)
    for key in (generator.integers(0, 50, 2000), generator.integers(0, 2**40, 3000), np.array([2**62, 3, 2**62]),
                np.zeros(0, dtype=np.int64), np.array([7])):
        found, expected = key_runs(key), np.unique(key, return_index=True, return_counts=True)
        assert all(np.array_equal(a, b) for a, b in zip(found, expected, strict=True))


def test_per_distinct_gives_the_scalar_formula_to_the_bit() -> None:
    import math

    from engramrag.retrieve.index_graph import node_specificity, per_distinct

    counts = [3, 1, 3, 250, 7, 1, 9_999]
    specificity = per_distinct(counts, lambda count: node_specificity(count, 10_000))
    assert specificity.tolist() == [node_specificity(count, 10_000) for count in counts]
    damping = per_distinct(specificity, lambda value: value**0.75)
    assert damping.tolist() == [value**0.75 for value in specificity.tolist()]
    logs = per_distinct([0, 5, 5, 2], lambda count: 1.0 + math.log(max(1, count)))
    assert logs.tolist() == [1.0, 1.0 + math.log(5), 1.0 + math.log(5), 1.0 + math.log(2)]
    assert per_distinct([], float).shape == (0,)
    # Large counts and arrays of every integer type take the table or the sort, to the same values.
    wide = np.array([0, 3, 3, 1_000_000, 2], dtype=np.int32)
    assert per_distinct(wide, lambda count: 1.0 + math.log(max(1, count))).tolist() == [
        1.0 + math.log(max(1, count)) for count in wide.tolist()
    ]
    small = np.array([4, 0, 4, 1], dtype=np.uint16)
    assert per_distinct(small, lambda count: count / 3).tolist() == [count / 3 for count in small.tolist()]


def _statement_table(rows: list[tuple[int, int, str, str, str]]) -> pa.Table:
    """Numbered statement rows (src, dst, predicate, role, doc_id), dictionary-encoded as the index keeps them."""
    src, dst, predicate, role, doc = zip(*rows, strict=True) if rows else ((),) * 5
    return pa.table({"src": pa.array(src, pa.int32()), "dst": pa.array(dst, pa.int32()),
                     "predicate": pa.array(predicate, pa.string()).dictionary_encode(),
                     "role": pa.array(role, pa.string()).dictionary_encode(),
                     "doc_id": pa.array(doc, pa.string()).dictionary_encode()})  # fmt: skip


def test_relation_sums_patched_from_the_last_build_equal_sums_of_every_row() -> None:
    from engramrag.retrieve.edge_statements import KeptRows
    from engramrag.retrieve.relation_edges import relation_sums

    rng = np.random.default_rng(3)

    def random_rows(doc: str, count: int) -> list[tuple[int, int, str, str, str]]:
        return [(int(rng.integers(0, 9)), int(rng.integers(0, 9)), str(rng.choice(["uses", "part_of", "owns"])),
                 str(rng.choice(["assertion", "analysis"])), doc) for _ in range(count)]  # fmt: skip

    before = _statement_table([row for doc in ("d1", "d2", "d3") for row in random_rows(doc, 60)])
    first, patched = relation_sums(_ready(before), 12, 0.5)
    assert not patched and (first.counts > 0).all() and len(first.keys) < 180
    # d2 is joined again with other rows (a pair it named alone goes, new pairs come); d1's and d3's rows are kept.
    d2 = np.array(before.column("doc_id").to_pylist()) == "d2"
    kept = KeptRows(before, np.flatnonzero(~d2))
    joined = _statement_table([*random_rows("d2", 40), (10, 11, "uses", "assertion", "d2")])
    now = pa.concat_tables([before.take(np.flatnonzero(~d2)), joined]).unify_dictionaries()
    sums, patched = relation_sums(_ready(now), 12, 0.5, kept, joined)
    whole, _ = relation_sums(_ready(now), 12, 0.5)
    assert patched
    assert sums.keys.tolist() == whole.keys.tolist() and sums.counts.tolist() == whole.counts.tolist()
    assert sums.sums.tolist() == whole.sums.tolist()  # equal floats: halves and ones add exactly in any order
    # Not the table summed last, or a weight whose sums depend on their order: every row is summed.
    assert not relation_sums(_ready(now), 12, 0.5, KeptRows(before, np.flatnonzero(~d2)), joined)[1]
    relation_sums(_ready(before), 12, 0.3)
    assert not relation_sums(_ready(now), 12, 0.3, kept, joined)[1]


def _ready(rows: pa.Table) -> Future[pa.Table]:
    """Rows as ``relation_sums`` is handed them while they are merged: a future, here one already done."""
    future: Future[pa.Table] = Future()
    future.set_result(rows)
    return future


def test_the_index_fingerprint_moves_with_each_part_it_is_made_of_and_with_nothing_else(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from engramrag.catalog.connection import catalog_writer
    from engramrag.retrieve.config import IndexConfig
    from engramrag.retrieve.published_index import index_fingerprint
    from engramrag.store import Home

    home = Home.at(tmp_path / "home")
    embedder = SimpleNamespace(name="hash-64")
    changes = [
        "INSERT INTO documents (doc_id, path, bucket, agent_authored, body_hash, size_bytes, mtime_ns, text, gone) "
        "VALUES ('d1', 'a.md', 0, false, 'h', 1, 0, '', false), ('d2', 'b.md', 0, false, 'h', 1, 0, '', false)",
        "INSERT INTO embedded_documents VALUES ('d1', 0, 'x1|rules', 'hash-64', 1, 1, 1, now())",
        "UPDATE embedded_documents SET extraction = 'x2|rules'",
        "UPDATE documents SET path = 'c.md' WHERE doc_id = 'd2'",
        "UPDATE documents SET doc_date = '2024-05-01' WHERE doc_id = 'd1'",
        "INSERT INTO entity_clusters VALUES ('falcon', 'falcon'), ('falcon db', 'falcon')",
        "UPDATE entity_clusters SET cluster_key = 'falcon db'",
        "INSERT INTO supersessions (earlier_key, later_key, earlier_doc_id, later_doc_id, earlier_title, later_title) "
        "VALUES ('k1', 'k2', 'd1', 'd2', 'A', 'B')",
        "INSERT INTO document_supersessions (earlier_doc_id, later_doc_id, earlier_path, later_path, reason, form, "
        "left_key, right_key) VALUES ('d1', 'd2', 'a.md', 'c.md', 'declared', 'replaces', 'l', 'r')",
        "UPDATE document_supersessions SET since = '2024-06-01'",
        "DELETE FROM documents WHERE doc_id = 'd2'",
    ]
    with catalog_writer(home, 4) as catalog:
        seen = [index_fingerprint(catalog, embedder, IndexConfig())]
        for change in changes:
            catalog.execute(change)
            seen.append(index_fingerprint(catalog, embedder, IndexConfig()))
        catalog.execute("UPDATE documents SET text = 'not part of it', size_bytes = 9")
        assert index_fingerprint(catalog, embedder, IndexConfig()) == seen[-1]
        assert index_fingerprint(catalog, SimpleNamespace(name="other"), IndexConfig()) != seen[-1]
    assert len(set(seen)) == len(seen), [changes[i - 1][:50] for i, f in enumerate(seen) if seen.index(f) != i]
