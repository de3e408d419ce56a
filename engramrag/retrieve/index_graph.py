"""The graph search walks: nodes and weighted edges assembled from the catalog's tables, column by column.

Nodes are entities (document mentions joined by their normalised label, or by the cluster the resolution overlay
put them in) and passages (one per document). Edges: passage–entity mentions, relations between entities
(weighted by how many statements say so; machine-proposed ones weigh less), hierarchy relations and synonyms
(label embeddings at least ``synonym_threshold`` alike). Type edges are left out (DESIGN.md: not until an
ablation shows they help).

The work is done on whole columns (pandas joins, numpy arrays) rather than row by row: at 10,000 notes a build
joins about a million statements and half a million mentions, and a per-row loop over them took 25 s of every
edit's rebuild. Edge weights are summed with ``np.bincount`` in the order the rows come (mentions, statements,
synonyms), which is the same left-to-right float sum a loop gives, so the weights are the same to the bit; the
statements' sums (``relation_edges``) are patched from a resident build's last ones, which half weights keep exact.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from engramrag.extract.builder import DOCUMENT_KEY
from engramrag.extract.textutil import normalise_label
from engramrag.retrieve.body_terms import BodyTerms, Tokens, WordingTerms
from engramrag.retrieve.config import IndexConfig
from engramrag.retrieve.edge_kinds import EDGE_KINDS, MENTION, SYNONYM, edge_key
from engramrag.retrieve.edge_statements import joined_rows, merged_rows, numbered
from engramrag.retrieve.lexical import term_idf
from engramrag.retrieve.neighbours import Neighbours, NeighbourUpdate, nearest_neighbours, update_neighbours
from engramrag.retrieve.note_bm25 import NoteIndex
from engramrag.retrieve.relation_edges import relation_sums
from engramrag.retrieve.sorted_keys import key_runs, summed_by_key
from engramrag.run_memo import RunMemo, Same, read_only
from engramrag.vault.dates import document_date


def assemble_graph(
    tables: dict[str, Any],
    label_vectors: Mapping[str, np.ndarray] | StoredLabels,
    config: IndexConfig,
    previous: tuple[Neighbours, list[str], np.ndarray] | None = None,
    body_terms: BodyTerms | None = None,
    wording_terms: WordingTerms | None = None,
) -> dict[str, Any]:
    """Nodes, edges and the lexical tables of one index, from the catalog's ``tables`` (pandas frames, the
    statements an Arrow table: ``index_build._read_catalog``) and the stored vector of each label
    (``label_vectors``, read from LanceDB)."""
    passages = tables["passages"]
    bodies = passages["body"].tolist()  # None for notes whose terms ``body_terms`` knows
    # Once, for the label terms' idf and the notes' BM25; only the notes changed since the last index are cut.
    body_hashes = passages["body_hash"].tolist()
    note_terms, note_stems = (body_terms or BodyTerms()).of(body_hashes, bodies)
    note_stems = note_stems.compacted()  # once, for the BM25 index and for the terms kept beside the index
    # The notes' BM25 needs nothing of the graph: built on the second core while the graph is assembled (both are
    # mostly numpy and scipy work, which runs without the interpreter lock; 6 s each at 100,000 notes).
    with ThreadPoolExecutor(max_workers=1) as pool:
        notes = pool.submit(NoteIndex.from_tokens, note_stems)
        graph = _assembled(tables, passages, label_vectors, config, previous, wording_terms, note_terms)
    return graph | {
        "notes": notes.result(),
        "body_hashes": body_hashes,
        "body_tokens": (note_terms, note_stems),  # per passage, as the terms kept beside the index are saved
    }


def _assembled(
    tables: dict[str, Any], passages: pd.DataFrame, label_vectors: Mapping[str, np.ndarray] | StoredLabels,
    config: IndexConfig, previous: tuple[Neighbours, list[str], np.ndarray] | None,
    wording_terms: WordingTerms | None, note_terms: Tokens,
) -> dict[str, Any]:  # fmt: skip
    mentions, node_keys = _mentions(tables["entities"], tables["clusters"])
    entity_count = len(node_keys)
    passage_docs = passages["doc_id"].tolist()
    passage_node = pd.Series(np.arange(entity_count, entity_count + len(passage_docs), dtype=np.int64),
                             index=pd.Index(passage_docs, dtype=object))  # fmt: skip
    documents_of_mentions = mentions["doc_id"].cat
    passage_of_document = passage_node.reindex(documents_of_mentions.categories.astype(object)).to_numpy()
    mentions["passage"] = passage_of_document[documents_of_mentions.codes.to_numpy()]
    in_passage = mentions[mentions["passage"].notna()]

    documents = _documents_per_node(in_passage, entity_count)
    specificity = per_distinct(documents, lambda count: node_specificity(count, len(passage_docs)))
    labels = value_runs(mentions, "label")  # one sort for the wordings, the most common label and the vectors
    matrix = _node_vectors(labels, label_vectors, node_keys, entity_count)

    mention_lo, mention_hi, mention_weight = _mention_edges(in_passage, specificity, config)
    merging = ThreadPoolExecutor(max_workers=1)
    statement_rows, numbering, joined = _statement_rows(
        tables, mentions, node_keys, tables["clusters"], passage_node, merging
    )
    merging.shutdown(wait=False)  # a merge still running is waited for below, where the rows are handed on
    node_count = entity_count + len(passage_docs)
    relations, relations_patched = relation_sums(
        statement_rows, node_count, config.analysis_edge_weight,
        None if numbering.whole else tables.get("kept_statements"), None if numbering.whole else joined,
    )  # fmt: skip

    k = max(config.synonym_neighbours, config.density_neighbours)
    if previous is not None:
        update = update_neighbours(previous[0], previous[1], previous[2], node_keys, matrix, k)
    else:
        update = NeighbourUpdate(nearest_neighbours(matrix, k), entity_count, 0)
    neighbours = update.neighbours
    low, high, sims = neighbours.pairs_above(config.synonym_threshold)

    src, dst, kind, weight = _summed_edges(
        node_count,
        [
            (mention_lo, mention_hi, np.full(len(mention_lo), MENTION), mention_weight),
            (low.astype(np.int64), high.astype(np.int64), np.full(len(low), SYNONYM), sims.astype(np.float64)),
        ],
        (relations.keys, relations.sums),
    )

    wordings = _wordings(labels, entity_count)
    wording_terms = wording_terms or WordingTerms()
    inputs = (tuple(node_keys), tuple(map(tuple, wordings)))
    with _NODE_TERMS.run() as made:  # the same nodes and wordings as the last build: its terms (2.5 s at 100,000)
        node_terms = made(inputs, lambda: _node_terms(wordings, node_keys, WordingTerms(wording_terms.known)))
    wording_terms.took(node_terms.used)
    term_lists = node_terms.term_lists
    frequency = _document_frequency(note_terms, node_terms.terms)
    return {
        "entity_count": entity_count,
        "node_keys": node_keys,
        "labels": _most_common(labels, entity_count, "label"),
        "kinds": _most_common(value_runs(mentions, "kind"), entity_count, "kind"),
        "mentions": np.bincount(mentions["node"].to_numpy(), minlength=entity_count).tolist(),
        "documents": documents,
        "specificity": specificity,
        "density": neighbours.density(config.density_neighbours),
        "matrix": matrix,
        "neighbours": update,
        "passages": passages.assign(node=passage_node.to_numpy(), **_valid_from(passages)),
        "edge_src": src.astype(np.int32),
        "edge_dst": dst.astype(np.int32),
        "edge_kind": kind.astype(np.int8),
        "edge_weight": weight.astype(np.float32),
        "edge_statements": statement_rows.result(),
        "statement_numbering": numbering,
        "statements_numbered": statement_rows.result().num_rows if numbering.whole else numbering.joined,
        "relations_patched": relations_patched,
        "statement_sources": tables.get("statement_sources", {}),
        "term_lists": term_lists,
        "idf": term_idf(frequency, max(1, len(passages))),
        "superseded": tables["supersessions"],
        "document_supersessions": tables["document_supersessions"],
        "wording_terms": wording_terms,
    }


def _mentions(entities: pd.DataFrame, clusters: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One row per (document, entity) with its ``node``, and the node keys in node order (sorted). A node's key is
    the normalised label, or the cluster the overlay put that label in; a label that normalises to nothing makes no
    node. Rows keep the catalog's order, which decides ties below (the first wording and the first stored vector of
    a node). Documents, labels and kinds are categories (the catalog reader gives them so), so each distinct label
    is keyed once, not once per mention: 560,000 mentions of 37,442 labels at 10,000 notes."""
    columns = {name: _categories(entities[name]) for name in ("doc_id", "entity_key", "label", "kind")}
    labels = tuple(columns["label"].cat.categories.tolist())
    pairs = frozenset(zip(clusters["entity_key"].tolist(), clusters["cluster_key"].tolist(), strict=True))
    with _LABEL_NODES.run() as made:  # the same labels and clusters as the last build: its numbering (3 s at 100,000)
        node_keys, node_of_label = made((labels, pairs), lambda: _label_nodes(labels, dict(pairs)))
    node = node_of_label[columns["label"].cat.codes.to_numpy()]
    frame = pd.DataFrame({**columns, "count": entities["mentions"].to_numpy(), "node": node})
    return frame[node >= 0].reset_index(drop=True), node_keys


@dataclass(frozen=True)
class _NodeTerms:
    term_lists: list[list[tuple[str, ...]]]  # per node, the terms of each of its wordings
    terms: frozenset[str]  # every term of them
    used: dict[str, tuple[str, ...]]  # the wordings cut for them, with their terms (``WordingTerms.used``)


def _node_terms(wordings: list[list[str]], node_keys: list[str], cutter: WordingTerms) -> _NodeTerms:
    """Each distinct wording of a node (a merged cluster has several: "PostgreSQL", "Postgres") is matched on its
    own by the lexical leg, so a question naming one of them names the entity fully; a node without a usable
    wording is matched by its key."""
    cut = cutter.of
    term_lists = [
        list(dict.fromkeys(filter(None, (cut(label) for label in wordings[node])))) or [cut(node_keys[node])]
        for node in range(len(node_keys))
    ]
    terms = frozenset(term for listed_wordings in term_lists for listed in listed_wordings for term in listed)
    return _NodeTerms(term_lists, terms, cutter.used)


_NODE_TERMS: RunMemo[tuple, _NodeTerms] = RunMemo()


def _label_nodes(labels: tuple[str, ...], cluster_of: dict[str, str]) -> tuple[list[str], np.ndarray]:
    """The node keys (sorted) and each label's node, the last entry -1 (for code -1, a missing label: no node)."""
    label_keys = [cluster_of.get(stable := normalise_label(label), stable) for label in labels]
    node_keys = sorted(set(label_keys) - {""})
    number = {key: node for node, key in enumerate(node_keys)}
    node_of_label = np.array([*(number.get(key, -1) for key in label_keys), -1], dtype=np.int64)
    node_of_label.setflags(write=False)  # kept for the next build of a resident process
    return node_keys, node_of_label


_LABEL_NODES: RunMemo[tuple, tuple[list[str], np.ndarray]] = RunMemo()


def _categories(column: pd.Series) -> pd.Series:
    """The column as a category with only the values it holds (Arrow's dictionary encoding gives just those, and
    checking is a count: ``remove_unused_categories`` sorts every code, 3 s at 100,000 notes)."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return column.astype(object).astype("category")
    codes = column.cat.codes.to_numpy()
    held = np.bincount(codes[codes >= 0], minlength=len(column.cat.categories))
    return column if held.all() else column.cat.remove_unused_categories()


@dataclass(frozen=True)
class StoredLabels:
    """The stored label vectors as the rows of one matrix (``VectorStore.label_matrix``): ``matrix[i]`` is
    ``texts[i]``'s."""

    texts: list[str]
    matrix: np.ndarray


def _node_vectors(
    labels: ValueRuns, label_vectors: Mapping[str, np.ndarray] | StoredLabels, node_keys: list[str], entity_count: int
) -> np.ndarray:
    """Each node's vector: that of the first of its mentions whose label has a stored vector (``labels``: the
    mentions' ``value_runs`` of their labels: that mention is the first of its (node, label) pair), taken in one
    gather (a dict of 200,000 vectors stacked row by row took 2 s at 100,000 notes)."""
    if not isinstance(label_vectors, StoredLabels):
        texts = list(label_vectors)
        stacked = np.stack([label_vectors[text] for text in texts]) if texts else np.zeros((0, 1))
        label_vectors = StoredLabels(texts, stacked)
    inputs = (tuple(label_vectors.texts), tuple(labels.names))
    with _LABEL_ROWS.run() as made:  # the same labels and stored texts as the last build: its rows (1.5 s at 100,000)
        row_of_label = made(inputs, lambda: _label_rows(*inputs))
    row = np.append(row_of_label, -1)[labels.code]  # per pair (code -1, no label: the appended -1)
    stored = np.flatnonzero(row >= 0)
    by_node = stored[np.lexsort((labels.first[stored], labels.node[stored]))]  # per node, the first seen first
    row_of_node = np.full(entity_count, -1, dtype=np.int64)
    if len(by_node):
        chosen = by_node[np.concatenate(([True], labels.node[by_node][1:] != labels.node[by_node][:-1]))]
        row_of_node[labels.node[chosen]] = row[chosen]
    missing = np.flatnonzero(row_of_node < 0)
    if len(missing):
        raise RuntimeError(
            f"{len(missing)} entity labels have no vector (e.g. {node_keys[missing[0]]!r}); the embeddings are "
            "behind the catalog. Run the build again (it embeds what is missing) or rebuild with --full."
        )
    if not entity_count:
        return np.zeros((0, 1))
    # The same stored matrix and the same rows as the last build: its gathered matrix (60 ms at 10,000 notes).
    with _NODE_MATRIX.run() as made:
        return made((Same(label_vectors.matrix), row_of_node.tobytes()),
                    lambda: read_only(label_vectors.matrix[row_of_node]))  # fmt: skip


_NODE_MATRIX: RunMemo[tuple, np.ndarray] = RunMemo()


def _label_rows(texts: tuple[str, ...], labels: tuple[str, ...]) -> np.ndarray:
    """Each label's row among the stored ``texts`` (a text stored twice: its last row), -1 for none."""
    row_of_text = {text: row for row, text in enumerate(texts)}
    row_of_label = np.array([row_of_text.get(label, -1) for label in labels], dtype=np.int64)
    row_of_label.setflags(write=False)  # kept for the next build of a resident process
    return row_of_label


_LABEL_ROWS: RunMemo[tuple, np.ndarray] = RunMemo()


def _documents_per_node(in_passage: pd.DataFrame, entity_count: int) -> list[int]:
    """In how many listed notes each node is mentioned: distinct (node, note) pairs counted as numbers (dropping
    duplicate rows of a frame took 1.3 s at 100,000 notes)."""
    codes = in_passage["doc_id"].cat.codes.to_numpy().astype(np.int64)
    width = np.int64(max(1, len(in_passage["doc_id"].cat.categories)))
    # By the packed sort (``key_runs``): numpy 2.4's np.unique (without return_index) took 7.2 s for these 5.4 M keys
    # at 100,000 notes, a sort 0.45 s.
    distinct, _, _ = key_runs(in_passage["node"].to_numpy().astype(np.int64) * width + codes)
    return np.bincount(distinct // width, minlength=entity_count).tolist()


def _mention_edges(
    in_passage: pd.DataFrame, specificity: np.ndarray, config: IndexConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entity–passage edges, one per mention row: a note that names an entity often is more about it than one
    naming it once (as author, say); the entity a note is about (its title) weighs more; an entity named in a
    large share of the notes (a chat's speakers, the team's own name) carries little of the walk."""
    counts = in_passage["count"].to_numpy()
    # math.log and Python's power, once per distinct value, so the weights are those of the scalar formula.
    damping = per_distinct(specificity, lambda value: value**config.mention_specificity_exponent)
    weight = config.mention_edge_weight * per_distinct(counts, lambda count: 1.0 + math.log(max(1, count)))
    title = (in_passage["entity_key"] == DOCUMENT_KEY).to_numpy()
    weight = np.where(title, weight * config.title_edge_weight, weight)
    nodes = in_passage["node"].to_numpy()
    weight = weight * damping[nodes] if len(nodes) else weight
    return nodes, in_passage["passage"].to_numpy(dtype=np.int64), weight


def _statement_rows(
    tables: dict[str, Any], mentions: pd.DataFrame, node_keys: list[str], clusters: pd.DataFrame,
    passage_node: pd.Series, merging: Executor,
) -> tuple[Future[pa.Table], _Numbering, pa.Table | None]:  # fmt: skip
    """Statements between two entities of a listed note, numbered, in the order search prefers them in
    (``edge_statements.PREFERENCE_ORDER``): the rows search reads to show why an edge exists. The statements of the
    notes in ``tables["joined_documents"]`` (every listed note when absent) are joined to their ends here; the rows
    of the others are ``tables["kept_statements"]``, kept from the previous index (``edge_statements``). The
    relation edges sum these rows' weights, 1 or ``analysis_edge_weight`` (0.5), whose float sums do not depend on
    the order; a row within one node adds no edge. Kept rows numbered by this numbering (the same node keys, so the
    same labels and clusters, and the same passages) keep their nodes, and only the joined rows are numbered (every
    row's nodes looked up again took 1.4 s of a one-note edit at 100,000 notes). Also the joined rows, numbered, when
    only they were (``relation_edges`` patches their sums in). Those merged with the kept rows are merged on
    ``merging`` (the kept rows copied into one table: 0.1 s at 10,000 notes, Arrow's work without the interpreter
    lock) while the rest of the graph is assembled."""
    listed = set(passage_node.index.tolist())
    joined = joined_rows(tables["statements"], mentions, set(tables.get("joined_documents", listed)) & listed)
    kept = tables.get("kept_statements")
    token = (Same(node_keys), tuple(passage_node.index.tolist()))
    cluster_of = dict(zip(clusters["entity_key"].tolist(), clusters["cluster_key"].tolist(), strict=True))
    if kept is not None and kept.numbering is not None and kept.numbering == token:
        joined = numbered(joined, lambda key: _sorted_position(node_keys, cluster_of.get(key, key)),
                          lambda doc_id: passage_node.get(doc_id, -1))  # fmt: skip
        return merging.submit(merged_rows, kept, joined), _Numbering(token, False, joined.num_rows), joined
    rows = merged_rows(kept, joined) if kept is not None else joined.unify_dictionaries().combine_chunks()
    number = {key: node for node, key in enumerate(node_keys)}
    passage_of = dict(zip(passage_node.index.tolist(), passage_node.tolist(), strict=True))
    rows = numbered(rows, lambda stable: number.get(cluster_of.get(stable, stable), -1),
                    lambda doc_id: passage_of.get(doc_id, -1))  # fmt: skip
    return _done(rows), _Numbering(token, True, joined.num_rows), None


def _done(rows: pa.Table) -> Future[pa.Table]:
    future: Future[pa.Table] = Future()
    future.set_result(rows)
    return future


@dataclass(frozen=True)
class _Numbering:
    token: tuple  # what the rows were numbered by (``edge_statements.KeptStatements.numbering``)
    whole: bool  # every row numbered (else only the joined ones)
    joined: int  # rows joined this build


def _sorted_position(keys: list[str], key: str) -> int:
    """Where ``key`` is in the sorted ``keys``, -1 when it is not there."""
    at = bisect_left(keys, key)
    return at if at < len(keys) and keys[at] == key else -1


def _summed_edges(
    node_count: int, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    summed: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Edges (low, high, kind) with the weights of their repeats summed in the order given, sorted by
    (low, high, kind); self-loops are dropped. ``summed``: edges of other kinds already summed (keys as
    ``edge_kinds.edge_key``, ascending, and their weights), merged in."""
    keys, weights = [], []
    for low, high, kind, weight in parts:
        low, high = np.asarray(low, dtype=np.int64), np.asarray(high, dtype=np.int64)
        key = edge_key(low, high, np.asarray(kind, dtype=np.int64), node_count)
        weight = np.asarray(weight, dtype=np.float64)
        loops = low == high
        if loops.any():
            key, weight = key[~loops], weight[~loops]
        keys.append(key)
        weights.append(weight)
    unique, sums = summed_by_key(np.concatenate(keys), np.concatenate(weights))
    if summed is not None and len(summed[0]):
        # Two ascending runs of distinct keys (the kinds differ): a stable sort merges them.
        both = np.concatenate([unique, summed[0]])
        order = np.argsort(both, kind="stable")
        unique, sums = both[order], np.concatenate([sums, summed[1]])[order]
    pair, edge_kind = np.divmod(unique, len(EDGE_KINDS))
    src, dst = np.divmod(pair, node_count)
    return src, dst, edge_kind, sums


@dataclass(frozen=True)
class ValueRuns:
    """The distinct (node, value) pairs of one column of the mentions, sorted by node and then by value code: each
    pair's node, value code (-1: none), first mention row and number of mentions, and the values by code. One packed
    sort of the mentions (``key_runs``) answers every per-node question about that column: the labels' were sorted
    three times per build (45 ms a sort at 10,000 notes, about 0.45 s at 100,000)."""

    node: np.ndarray
    code: np.ndarray
    first: np.ndarray
    count: np.ndarray
    names: list


def value_runs(mentions: pd.DataFrame, column: str) -> ValueRuns:
    """The (node, value) runs of ``column`` of ``mentions`` (rows with ``node``; the column a category or not)."""
    values = _categories(mentions[column])
    nodes = mentions["node"].to_numpy().astype(np.int64)
    codes = values.cat.codes.to_numpy().astype(np.int64)
    names = values.cat.categories.tolist()
    by_value = _runs_by_value(nodes, codes, len(names))
    if by_value is not None:
        return ValueRuns(*by_value, names)
    width = np.int64(len(names) + 1)
    pairs, first, count = key_runs(nodes * width + (codes + 1))
    return ValueRuns(pairs // width, pairs % width - 1, first, count, names)


def _runs_by_value(nodes: np.ndarray, codes: np.ndarray, values: int) -> tuple[np.ndarray, ...] | None:
    """``value_runs``' pairs counted per value, without sorting the rows, when every value (code) belongs to one
    node (the labels: a label's node is its normalised key, or its cluster): each value is then one pair. None when
    a value has no code or is met with two nodes (the kinds), for the packed sort. Sorting the 560,000 mentions'
    pairs took 45 ms of every index at 10,000 notes."""
    if not len(codes) or int(codes.min()) < 0:
        return None
    node_of_value = np.full(values, -1, dtype=np.int64)
    node_of_value[codes] = nodes
    if not np.array_equal(node_of_value[codes], nodes):
        return None
    count = np.bincount(codes, minlength=values)
    first = np.full(values, len(codes), dtype=np.int64)
    np.minimum.at(first, codes, np.arange(len(codes), dtype=np.int64))
    held = np.flatnonzero(count)
    held = held[np.lexsort((held, node_of_value[held]))]  # by node, then by value code: the packed sort's order
    return node_of_value[held], held, first[held], count[held]


def _most_common(runs: ValueRuns, entity_count: int, column: str) -> list[str]:
    """Per node, the value its mentions carry most often (the first seen among equals), counted as numbers (a pandas
    group-by and sort took 1.2 s per column at 100,000 notes); NaN for a node without one. ``column``: "label" or
    "kind", what the runs are of."""
    order = np.lexsort((runs.first, -runs.count, runs.node))  # by node, the most frequent first, then the first seen
    best = order[np.concatenate(([True], runs.node[order][1:] != runs.node[order][:-1]))] if len(order) else order
    node, code = runs.node[best], runs.code[best]
    with _MOST_COMMON[column].run() as made:  # the same choices as this column's in the last build: its list
        return made((node.tobytes(), code.tobytes(), tuple(runs.names), entity_count),
                    lambda: _chosen(node, code, runs.names, entity_count))  # fmt: skip


def _chosen(node: np.ndarray, code: np.ndarray, names: list, entity_count: int) -> list:
    found: list = [np.nan] * entity_count
    for at, value in zip(node.tolist(), code.tolist(), strict=True):
        found[at] = names[value] if value >= 0 else np.nan
    return found


_MOST_COMMON: dict[str, RunMemo[tuple, list]] = {"label": RunMemo(), "kind": RunMemo()}


def _wordings(runs: ValueRuns, entity_count: int) -> list[list[str]]:
    """Per node, its distinct labels (``runs`` of the labels) in the order they were first seen. The same pairs in the
    same order of first sight as the last build: its lists (the loop took 30 ms of each edit at 10,000 notes)."""
    order = np.argsort(runs.first, kind="stable")
    node, code = runs.node[order], runs.code[order]
    with _WORDINGS.run() as made:
        return made((node.tobytes(), code.tobytes(), tuple(runs.names), entity_count),
                    lambda: _wordings_of(node, code, runs.names, entity_count))  # fmt: skip


def _wordings_of(node: np.ndarray, code: np.ndarray, names: list, entity_count: int) -> list[list[str]]:
    wordings: list[list[str]] = [[] for _ in range(entity_count)]
    for at, value in zip(node.tolist(), code.tolist(), strict=True):
        wordings[at].append(names[value] if value >= 0 else np.nan)
    return wordings


_WORDINGS: RunMemo[tuple, list[list[str]]] = RunMemo()


def _valid_from(passages: pd.DataFrame) -> dict[str, list[str | None]]:
    """Each note's date and where it came from: the catalog's (``engramrag/vault/dates.py``, git history
    included); for a row synced before the catalog held dates, computed here without git history. The catalog's
    columns are read as lists: iterating six Arrow-backed columns together took 0.3 s of every index at 10,000
    notes."""
    values = passages["doc_date"].astype(object).tolist()
    sources = [str(source) for source in passages["date_source"].astype(object).tolist()]
    undated = [row for row, day in enumerate(values) if not (isinstance(day, str) and day)]
    if undated:
        columns = passages[["path", "title", "front_matter", "mtime_ns"]].iloc[undated].astype(object)
        for row, (path, title, matter, mtime_ns) in zip(undated, columns.itertuples(index=False), strict=True):
            found = document_date(
                json.loads(matter) if isinstance(matter, str) and matter else {},
                path,
                title if isinstance(title, str) else None,
                None,
                mtime_ns / 1e9 if mtime_ns is not None and not pd.isna(mtime_ns) else None,
            )
            values[row], sources[row] = (found.value, found.source) if found else (None, None)
    return {"valid_from": values, "valid_from_source": sources}


def per_distinct(values: Sequence[int] | Sequence[float] | np.ndarray, formula: Callable[[Any], float]) -> np.ndarray:
    """``formula`` of each of ``values`` as a float64 array, the scalar formula computed once per distinct value (as a
    Python int or float): the same values to the bit as a call per value, which for the 37,000 nodes' specificity
    and damping took 60 ms of every index at 10,000 notes. Small non-negative integers (the mention counts) are
    looked up in a table indexed by the value itself instead of sorted (``np.unique`` over the 560,000 mention rows
    took 90 ms of every index at 10,000 notes)."""
    array = np.asarray(values)
    if array.dtype.kind in "iu" and len(array) and array.min() >= 0 and array.max() <= 4 * len(array) + 1024:
        distinct = np.flatnonzero(np.bincount(array))
        table = np.zeros(int(distinct[-1]) + 1, dtype=np.float64)
        table[distinct] = [formula(value) for value in distinct.tolist()]
        return table[array]
    distinct, inverse = np.unique(array, return_inverse=True)
    return np.array([formula(value) for value in distinct.tolist()], dtype=np.float64)[inverse.reshape(-1)]


def node_specificity(documents: int, total: int) -> float:
    """How specific an entity is, in (0, 1]: log((N + 1) / df) / log(N + 1) for an entity named in ``documents``
    of ``total`` notes (HippoRAG weights its seeds by inverse passage count; this is its smoothed log form).
    A name in one note of many is near 1; a name in every note is near 0."""
    if total <= 0:
        return 1.0
    return max(0.0, math.log((total + 1) / max(1, documents))) / math.log(total + 1)


def _document_frequency(note_terms: Tokens, wanted: set[str]) -> dict[str, int]:
    """In how many documents each label term occurs (terms no note holds are left out), by term. Weighting
    label terms by how common they are in the notes (not among labels) keeps an everyday word that happens to
    be a label ("Owns", "Status") from seeding as strongly as a name only a few notes use."""
    counts = note_terms.document_frequency()
    found = ((term, int(counts[number])) for number, term in enumerate(note_terms.vocab) if term in wanted)
    return {term: count for term, count in sorted(found) if count}
