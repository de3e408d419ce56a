"""What a home holds, independent of how and when it was built: for comparing an incremental build with a full one.

One job: read every store of a home into sorted rows, leaving out what names a run or a moment (run ids, build
times, mtimes, index versions) and what a deletion leaves behind on purpose (rows of documents marked gone), so
that two homes built from the same vault and the same decisions compare equal exactly when they hold the same
memory. Used by the test that replays edits, deletes, renames and verdicts incrementally against a full rebuild
(``tests/test_incremental_equals_full.py``).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from engramrag.catalog.connection import catalog_reader, has_table
from engramrag.ontology.quadstore import QuadStore
from engramrag.store import Home

LIVE = "doc_id IN (SELECT doc_id FROM documents WHERE NOT gone)"

# Per catalog table, the columns that describe the memory (not the run that wrote it) and the rows that count.
CATALOG_PARTS: dict[str, tuple[str, str]] = {
    "documents": (
        "doc_id, path, bucket, title, author, agent_authored, body_hash, size_bytes, text, front_matter::VARCHAR, "
        "extracted_hash, extractor, quads, statements, entities, doc_date, date_source",
        "NOT gone",
    ),
    "chunks": ("*", LIVE),
    "entities": ("*", LIVE),
    "statements": ("*", LIVE),
    "decisions": ("*", LIVE),
    "embedded_documents": ("doc_id, bucket, extraction, embedder, chunks, entity_labels, triples", LIVE),
    "entity_clusters": ("*", "TRUE"),
    "resolution_candidates": (
        "left_key, right_key, left_label, right_label, left_kind, right_kind, round(score, 6), vetoed, veto_reason, "
        "auto_merge, reasons::VARCHAR, features::VARCHAR, left_evidence::VARCHAR, right_evidence::VARCHAR, "
        "judge_verdict, judge_reason",
        "TRUE",
    ),
    "resolution_blocked": ("*", "TRUE"),
    "supersession_candidates": ("*", "TRUE"),
    "supersessions": ("*", "TRUE"),
    "document_supersessions": ("*", "TRUE"),
    "property_values": ("*", "TRUE"),
}


def store_snapshot(home: Home) -> dict[str, list[tuple[Any, ...]]]:
    """Every part of the home as sorted rows: ``catalog.<table>``, ``quads.<graph>`` (sorted N-Quads digests per
    named graph) and ``index.<part>`` (nodes by key, edges between node keys, term idf, the whole-note BM25's
    document frequencies and every nonzero score)."""
    parts: dict[str, list[tuple[Any, ...]]] = {}
    with catalog_reader(home) as catalog:
        if catalog is None:
            return parts
        for table, (columns, where) in CATALOG_PARTS.items():
            if has_table(catalog, table):
                rows = catalog.execute(f"SELECT {columns} FROM {table} WHERE {where}").fetchall()
                parts[f"catalog.{table}"] = sorted(_plain(row) for row in rows)
    parts.update(_quad_parts(home))
    parts.update(_index_parts(home))
    return parts


def snapshot_differences(left: dict[str, list[tuple]], right: dict[str, list[tuple]], limit: int = 3) -> list[str]:
    """Each part that differs, with a few rows only one side has: empty when the homes hold the same memory."""
    found = []
    for name in sorted(set(left) | set(right)):
        a, b = set(left.get(name, [])), set(right.get(name, []))
        if a != b:
            only_left, only_right = sorted(a - b, key=repr)[:limit], sorted(b - a, key=repr)[:limit]
            found.append(f"{name}: {len(a - b)} rows only left {only_left}; {len(b - a)} only right {only_right}")
        elif len(left.get(name, [])) != len(right.get(name, [])):
            found.append(f"{name}: same rows, different duplicates ({len(left[name])} vs {len(right[name])})")
    return found


def _quad_parts(home: Home) -> dict[str, list[tuple[Any, ...]]]:
    if not home.quads_path.exists():
        return {}
    graphs: dict[str, list[tuple[str]]] = defaultdict(list)
    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        for quad in quads.quads():
            graphs[str(quad.graph_name.value)].append((_digest(f"{quad.subject} {quad.predicate} {quad.object}"),))
    return {f"quads.{graph}": sorted(rows) for graph, rows in graphs.items()}


def _index_parts(home: Home) -> dict[str, list[tuple[Any, ...]]]:
    from engramrag.retrieve.edge_kinds import EDGE_KINDS
    from engramrag.retrieve.edge_statements import ROWS_FILE
    from engramrag.retrieve.edge_statements import read_rows as read_statements
    from engramrag.retrieve.note_bm25 import NoteIndex
    from engramrag.retrieve.published_index import current_index

    folder = current_index(home)
    if folder is None:
        return {}
    with duckdb.connect(str(folder / "index.duckdb"), read_only=True) as db:
        entities = db.execute(
            "SELECT node, node_key, label, kind, mentions, documents, round(specificity, 6), round(density, 6) "
            "FROM entity_nodes"
        ).fetchall()
        passages = db.execute(
            "SELECT node, doc_id, path, title, bucket, snippet, line_start, line_end, valid_from::VARCHAR, "
            "valid_from_source FROM passage_nodes"
        ).fetchall()
        idf = db.execute("SELECT term, round(idf, 6) FROM term_idf").fetchall()
        terms = db.execute(
            "SELECT e.node_key, l.wording, l.term FROM label_terms l JOIN entity_nodes e USING (node)"
        ).fetchall()
    name = {row[0]: f"entity:{row[1]}" for row in entities} | {row[0]: f"passage:{row[1]}" for row in passages}
    with np.load(Path(folder) / "graph.npz") as graph:
        edges = [
            (name[int(s)], name[int(d)], EDGE_KINDS[int(k)], round(float(w), 5))
            for s, d, k, w in zip(graph["src"], graph["dst"], graph["kind"], graph["weight"], strict=True)
        ]
    statements = [
        (name[row["src"]], name[row["dst"]], row["doc_id"], row["statement_id"], row["predicate"], row["label"],
         row["role"], row["line_start"], row["line_end"], row["subject_key"], row["object_key"])
        for row in read_statements(Path(folder) / ROWS_FILE).to_pylist()
    ]  # every kept row, also those within one node: an incremental build must keep what a full one joins
    notes = NoteIndex.load(Path(folder))
    path_of = [row[2] for row in sorted(passages)]  # note i is the i-th passage node
    note_scores = []  # (note, stem, BM25): the whole-note index's every nonzero score, by the note's path
    for stem in sorted(notes.frequency):
        scores = notes.scores([stem])
        note_scores += [(path_of[i], stem, round(float(scores[i]), 5)) for i in np.flatnonzero(scores).tolist()]
    return {
        "index.note_frequency": sorted(notes.frequency.items()),
        "index.note_scores": sorted(note_scores),
        "index.entity_nodes": sorted(_plain(row[1:]) for row in entities),
        "index.passage_nodes": sorted(_plain(row[1:]) for row in passages),
        "index.term_idf": sorted(idf),
        "index.label_terms": sorted(terms),
        "index.edges": sorted(edges),
        "index.edge_statements": sorted(statements),
    }


def _plain(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Hashable, comparable values (lists become tuples, NaN becomes None)."""
    out = []
    for value in row:
        if isinstance(value, list | np.ndarray):
            value = tuple(_plain(tuple(value)))
        elif isinstance(value, float) and value != value:
            value = None
        out.append(value)
    return tuple(out)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()
