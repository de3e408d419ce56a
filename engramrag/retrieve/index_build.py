"""Build the graph index that search runs Personalized PageRank over (its nodes and edges are assembled in
``index_graph.py``; this module reads the catalog, writes the index files and publishes them).

Each build is written to a fresh folder under ``<home>/ppr/`` and published by replacing the ``CURRENT``
pointer, so a search that opened the previous index keeps reading a complete one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from engramrag.catalog.connection import catalog_writer, read_arrow, read_frame, registered
from engramrag.embed.base import Embedder
from engramrag.progress import Progress
from engramrag.retrieve.body_terms import TERMS_SINCE, BodyTerms, WordingTerms
from engramrag.retrieve.config import IndexConfig
from engramrag.retrieve.edge_kinds import EDGE_KINDS
from engramrag.retrieve.edge_statements import KeptStatements, note_digests
from engramrag.retrieve.edge_statements import save as save_statements
from engramrag.retrieve.index_graph import StoredLabels, assemble_graph
from engramrag.retrieve.kept_entities import entity_rows
from engramrag.retrieve.neighbours import Neighbours
from engramrag.retrieve.published_index import CURRENT, FORMAT, current_index, index_fingerprint
from engramrag.run_memo import FilesKept, RunMemo, Same
from engramrag.store import Home
from engramrag.vault.config import VaultConfig

ENTITY_VECTORS = "entity_vectors.npy"
ENTITY_DENSITY = "entity_density.npy"
NEIGHBOURS = "neighbours.npz"
# The first index format whose neighbour lists, entity nodes and label vectors are kept as this code keeps them
# (format 13 moved only the edge statements); a change to any of them sets it to the new format.
NEIGHBOURS_SINCE = 12


@dataclass
class IndexSummary:
    version: str
    rebuilt: bool
    entities: int
    passages: int
    edges: dict[str, int]
    seconds: float
    neighbours_recomputed: int = 0  # labels whose nearest neighbours were searched among all labels
    neighbours_kept: int = 0  # labels whose lists were kept from the previous index (only new labels compared)
    notes_cut: int = 0  # notes whose text was cut into terms (new or changed since the previous index)
    notes_reused: int = 0  # notes whose terms were read from the previous index
    wordings_cut: int = 0  # entity wordings cut into terms (not seen by the previous index)
    statements_joined_notes: int = 0  # notes whose statements were joined to their nodes (new or changed)
    statements_kept_notes: int = 0  # notes whose statement rows were kept from the previous index
    mentions_read_notes: int = 0  # notes whose mention rows were read from the catalog (``kept_entities``)
    mentions_kept_notes: int = 0  # notes whose mention rows this process kept from its last build
    statement_rows_numbered: int = 0  # statement rows whose nodes were looked up (the others kept this process's)
    relation_sums_patched: bool = False  # the relation edges' sums patched from this process's last build


def build_retrieval_index(
    home: Home, config: VaultConfig, embedder: Embedder, index_config: IndexConfig | None = None, force: bool = False,
    derive_all: bool = False,
) -> IndexSummary:
    """Rebuild the index when the embedded documents (or the settings) changed since the current one (``force``:
    even when they did not). ``derive_all`` (the consistency pass): every note's statements are joined again,
    none kept from the previous index."""
    index_config = index_config or IndexConfig()
    started = time.perf_counter()
    with catalog_writer(home, config.bucket_count) as catalog:
        fingerprint = index_fingerprint(catalog, embedder, index_config)
        current = current_index(home)
        if current and not force:
            manifest = json.loads((current / "manifest.json").read_text())
            if manifest.get("fingerprint") == fingerprint:
                return IndexSummary(
                    current.name, False, manifest["entities"], manifest["passages"], manifest["edges"], 0.0
                )
        progress = Progress("retrieval index", 4, every=1)
        same_format = current if current and _format_of(current) == FORMAT else None
        # The notes' terms are cut the same way since index format TERMS_SINCE (a change to the cutting raises it).
        cut_alike = current if current and TERMS_SINCE <= (_format_of(current) or 0) <= FORMAT else None
        body_terms, wording_terms = BodyTerms.load(cut_alike), WordingTerms.load(cut_alike)
        kept = None if derive_all else KeptStatements.load(same_format)
        tables = _read_catalog(catalog, body_terms, kept, home.catalog_path)
    progress.advance()
    vectors = _label_vectors(home, embedder, tables["entities"])
    progress.advance()
    previous = _previous_neighbours(current, embedder, index_config)
    graph = assemble_graph(tables, vectors, index_config, previous, body_terms, wording_terms)
    progress.advance()
    version = _version_name(home, fingerprint)
    target = home.ppr_path / version
    staging = home.ppr_path / f".{version}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    # The files kept for the next build (statement rows, the notes' and wordings' terms) are written on the second
    # core while the index's own tables are (Arrow's and DuckDB's writers run without the interpreter lock).
    with ThreadPoolExecutor(max_workers=1) as pool:
        kept = pool.submit(_write_kept, staging, graph, body_terms, wording_terms)
        _write(staging, graph, embedder, current if _same_entity_files(previous, graph) else None)
        kept.result()
    manifest = {
        "format": FORMAT,
        "fingerprint": fingerprint,
        "embedder": embedder.name,
        "dimension": embedder.dimension,
        "index_config": dataclasses.asdict(index_config),
        "entities": graph["entity_count"],
        "passages": len(graph["passages"]),
        "edges": {EDGE_KINDS[k]: int((graph["edge_kind"] == k).sum()) for k in EDGE_KINDS},
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=2))
    os.replace(staging, target)
    _keep_entities(target, graph)
    _publish(home, version)
    progress.advance()
    update = graph["neighbours"]
    return IndexSummary(
        version, True, manifest["entities"], manifest["passages"], manifest["edges"], time.perf_counter() - started,
        update.recomputed, update.kept, body_terms.cut, body_terms.reused, wording_terms.cut,
        statements_joined_notes=len(tables["joined_documents"]), statements_kept_notes=tables["kept_documents"],
        mentions_read_notes=tables["mentions_read_notes"], mentions_kept_notes=tables["mentions_kept_notes"],
        statement_rows_numbered=graph["statements_numbered"], relation_sums_patched=graph["relations_patched"],
    )


def _version_name(home: Home, fingerprint: str) -> str:
    """A new index folder's name: its time to the microsecond (names sort as the builds ran; two builds of one
    fingerprint in one second, a forced rebuild right after a build, once got the same name and the second failed
    to publish), and a number after it should that name be taken all the same."""
    now = time.time()
    stamp = f"{time.strftime('%Y%m%dT%H%M%S', time.localtime(now))}{int(now % 1 * 1_000_000):06d}"
    version = f"{stamp}-{fingerprint[:12]}"
    number = 1
    while (home.ppr_path / version).exists() or (home.ppr_path / f".{version}.partial").exists():
        number += 1
        version = f"{stamp}-{fingerprint[:12]}-{number}"
    return version


def _publish(home: Home, version: str) -> None:
    pointer = home.ppr_path / CURRENT
    temporary = home.ppr_path / f".{CURRENT}.{os.getpid()}"
    temporary.write_text(version)
    os.replace(temporary, pointer)
    # Keep the previous index for searches that opened it a moment ago; remove older ones.
    versions = sorted(p for p in home.ppr_path.iterdir() if p.is_dir() and not p.name.startswith("."))
    for old in versions[:-2]:
        if old.name != version:
            shutil.rmtree(old, ignore_errors=True)


def _previous_neighbours(
    folder: Path | None, embedder: Embedder, index_config: IndexConfig
) -> tuple[Neighbours, list[str], np.ndarray] | None:
    """The nearest-neighbour lists, node keys and label vectors of the published index, when it was built in a
    format that keeps them as this one does (``NEIGHBOURS_SINCE`` or later) with the same embedder and settings
    (else None: every list is computed anew)."""
    if folder is None or not (folder / NEIGHBOURS).exists():
        return None
    manifest = json.loads((folder / "manifest.json").read_text())
    same = (manifest.get("embedder"), manifest.get("index_config")) == (embedder.name, dataclasses.asdict(index_config))
    if not same or not NEIGHBOURS_SINCE <= (manifest.get("format") or 0) <= FORMAT:
        return None
    resident = _resident_entities.get(str(folder.parent), _entity_files(folder))
    if resident is not None:
        return resident.neighbours, resident.keys, resident.vectors
    with duckdb.connect(str(folder / "index.duckdb"), read_only=True) as db:
        keys = [row[0] for row in db.execute("SELECT node_key FROM entity_nodes ORDER BY node").fetchall()]
    with np.load(folder / NEIGHBOURS) as stored:
        neighbours = Neighbours(stored["indices"], stored["similarities"])
    return neighbours, keys, np.load(folder / ENTITY_VECTORS, mmap_mode="r")  # compared a block of rows at a time


@dataclass(frozen=True)
class _ResidentEntities:
    """The node keys, label vectors and neighbour lists this process wrote last into a home's indexes: the next build
    of a resident process (``engram watch``) compares against these in memory while the published index's files are
    those (reading and updating the lists took 97 ms with the keys read back from DuckDB and the vectors from disk,
    50 ms from memory, at 10,000 notes); files another process wrote have other stamps and are read."""

    keys: list[str]
    vectors: np.ndarray
    neighbours: Neighbours


_resident_entities: FilesKept[_ResidentEntities] = FilesKept()  # per folder of indexes (a home's)


def _entity_files(folder: Path) -> tuple[Path, ...]:
    return tuple(folder / name for name in ("index.duckdb", ENTITY_VECTORS, NEIGHBOURS))


def _keep_entities(folder: Path, graph: dict[str, Any]) -> None:
    """Remember the entity files just written into ``folder`` (see ``_ResidentEntities``)."""
    vectors = np.asarray(graph["matrix"], dtype=np.float32) if graph["entity_count"] else None
    if vectors is None or vectors.ndim != 2:
        _resident_entities.pop(str(folder.parent))
        return
    vectors.setflags(write=False)
    kept = _ResidentEntities(list(graph["node_keys"]), vectors, graph["neighbours"].neighbours)
    _resident_entities.put(str(folder.parent), _entity_files(folder), kept)


def _same_entity_files(previous: tuple[Neighbours, list[str], np.ndarray] | None, graph: dict[str, Any]) -> bool:
    """Whether the entity vectors, their density and their neighbour lists are those of the previous index (then
    its files are linked, not written again: 77 MB of vectors at 10,000 notes, 203 MB at 100,000): every
    node key kept with an unchanged vector and list, no key added or gone, the lists equal."""
    if previous is None:
        return False
    update, found = graph["neighbours"], graph["neighbours"].neighbours
    return (
        update.recomputed == 0 and update.kept == graph["entity_count"] == len(previous[1])
        and np.array_equal(found.indices, previous[0].indices)
        and np.array_equal(found.similarities, previous[0].similarities)
    )  # fmt: skip


def _format_of(folder: Path) -> int | None:
    return json.loads((folder / "manifest.json").read_text()).get("format")


def _read_catalog(
    catalog: duckdb.DuckDBPyConnection, body_terms: BodyTerms, kept: KeptStatements | None, catalog_path: Path
) -> dict[str, Any]:
    """The catalog's tables the index is made of: pandas frames, and the statements of the notes whose rows are not
    ``kept`` as an Arrow table (read in no order, as the join puts them in the order search prefers). Without ``kept``
    (the consistency pass) the mention rows are all read too, none kept by this process (``kept_entities``)."""
    embedded = "SELECT doc_id FROM embedded_documents"
    passages = _passages(catalog, embedded, body_terms)
    digests = note_digests(catalog, embedded)
    sources = digests.of_live()
    unchanged = kept.unchanged(sources) if kept is not None else set()
    joined = pd.DataFrame({"doc_id": sorted(set(sources) - unchanged)}, dtype=object)
    mentions = entity_rows(catalog, catalog_path, embedded, digests.listed, whole=kept is None)
    with registered(catalog, "joined_documents", joined):
        statements = read_arrow(
            catalog,
            """
            SELECT doc_id, statement_id, subject, predicate, coalesce(label, predicate) AS label, object, role,
                   line_start, line_end
            FROM statements WHERE object_is_entity AND doc_id IN (SELECT doc_id FROM joined_documents)
            """,
        )
    return {
        "passages": passages,
        "statements": statements,
        "joined_documents": set(joined["doc_id"]),
        "kept_statements": kept.of(unchanged) if kept is not None else None,
        "kept_documents": len(unchanged),
        "statement_sources": sources,
        "entities": mentions.frame(),
        "mentions_read_notes": mentions.notes_read,
        "mentions_kept_notes": mentions.notes_kept,
        "clusters": read_frame(catalog, "SELECT entity_key, cluster_key FROM entity_clusters"),
        "supersessions": read_frame(
            catalog,
            f"""
            SELECT s.earlier_doc_id AS doc_id, s.earlier_title AS title, s.earlier_date AS decided_on,
                   s.later_doc_id AS by_doc_id, s.later_title AS by_title, s.later_date AS by_decided_on,
                   coalesce(s.reason, 'accepted') AS reason, s.decided_by,
                   (SELECT count(*) FROM decisions d WHERE d.doc_id = s.earlier_doc_id) AS decisions_in_doc
            FROM supersessions s
            WHERE s.earlier_doc_id IN ({embedded}) AND s.later_doc_id IN ({embedded})
            ORDER BY doc_id, title, by_doc_id
            """
        ),
        "document_supersessions": read_frame(
            catalog,
            f"""
            SELECT earlier_doc_id AS doc_id, later_doc_id AS by_doc_id, later_path AS by_path,
                   later_date AS by_date, since, reason, form, decided_by, subject, property, earlier_value,
                   later_value, later_quote, earlier_current, property_words
            FROM document_supersessions
            WHERE earlier_doc_id IN ({embedded}) AND later_doc_id IN ({embedded})
            ORDER BY doc_id, by_doc_id, property
            """
        ),
    }


def _passages(catalog: duckdb.DuckDBPyConnection, embedded: str, body_terms: BodyTerms) -> pd.DataFrame:
    """The live embedded notes with their first chunk; ``body`` holds the text only of notes whose terms
    ``body_terms`` does not know (None elsewhere): reading every note's text was most of reading the catalog."""
    passages = read_frame(
        catalog,
        f"""
        SELECT d.doc_id, d.path, d.title, d.bucket, coalesce(c.text, '') AS snippet, c.line_start, c.line_end,
               d.body_hash, d.front_matter, d.mtime_ns, d.doc_date, d.date_source
        FROM documents d LEFT JOIN chunks c ON c.doc_id = d.doc_id AND c.chunk_index = 0
        WHERE NOT d.gone AND d.doc_id IN ({embedded}) ORDER BY d.path
        """
    )
    missing = body_terms.missing(passages["body_hash"].tolist())
    wanted = pd.DataFrame({"doc_id": passages.loc[passages["body_hash"].isin(missing), "doc_id"]}, dtype=object)
    texts: dict[str, str] = {}
    if len(wanted):
        with registered(catalog, "wanted_texts", wanted):
            texts = dict(catalog.execute(
                "SELECT doc_id, coalesce(text, '') FROM documents WHERE doc_id IN (SELECT doc_id FROM wanted_texts)"
            ).fetchall())  # fmt: skip
    return passages.assign(body=pd.Series([texts.get(d) for d in passages["doc_id"]], index=passages.index,
                                          dtype=object))  # fmt: skip


def _label_vectors(home: Home, embedder: Embedder, entities: pd.DataFrame) -> StoredLabels:
    """The stored label vectors (read from LanceDB, never re-embedded)."""
    if entities.empty:
        return StoredLabels([], np.zeros((0, embedder.dimension), dtype=np.float32))
    # Imported here: `engram build` imports this module on every run, and LanceDB only when the index is rebuilt.
    from engramrag.vectors.lancedb_store import VectorStore

    return StoredLabels(*VectorStore.for_home(home, embedder).label_matrix())


def _write(folder: Path, graph: dict[str, Any], embedder: Embedder, entity_files_of: Path | None = None) -> None:
    """The index's files into ``folder``; the entity vectors, density and neighbour lists linked from
    ``entity_files_of`` (an earlier index whose are the same) when given."""
    entity_count = graph["entity_count"]
    np.savez(
        folder / "graph.npz",
        node_count=np.array([entity_count + len(graph["passages"])]),
        entity_count=np.array([entity_count]),
        src=graph["edge_src"],
        dst=graph["edge_dst"],
        kind=graph["edge_kind"],
        weight=graph["edge_weight"],
    )
    # As Arrow columns (the column types a pandas frame gives; building one from these lists took 1.2 s at
    # 100,000 notes).
    nodes = pa.table(
        {
            "node": pa.array(np.arange(entity_count, dtype=np.int64)),
            "node_key": pa.array(graph["node_keys"], pa.string()),
            "label": pa.array(graph["labels"], pa.string(), from_pandas=True),  # NaN: none
            "kind": pa.array(graph["kinds"], pa.string(), from_pandas=True),
            "mentions": pa.array(graph["mentions"], pa.int64()),
            "documents": pa.array(graph["documents"], pa.int64()),
            "specificity": pa.array(graph["specificity"], pa.float64()),
            "density": pa.array(np.asarray(graph["density"])),
        }
    )
    term_lists = graph["term_lists"]
    with _LABEL_TERM_ROWS.run() as made:  # the term lists the last build made (kept by index_graph): its rows
        label_terms = made(Same(term_lists), lambda: _label_terms(term_lists))
    idf = pd.DataFrame(list(graph["idf"].items()), columns=["term", "idf"])
    passages = graph["passages"][
        ["node", "doc_id", "path", "title", "bucket", "snippet", "line_start", "line_end", "valid_from",
         "valid_from_source"]
    ]
    with duckdb.connect(str(folder / "index.duckdb")) as db:
        for name, frame in (
            ("entity_nodes", nodes),
            ("passage_nodes", passages),
            ("label_terms", label_terms),
            ("term_idf", idf),
            ("superseded_decisions", graph["superseded"]),
            ("document_supersessions", graph["document_supersessions"]),
        ):
            with registered(db, "frame", frame):
                db.execute(f"CREATE TABLE {name} AS SELECT * FROM frame")
        # No index on label_terms: a search reads the whole table once when it opens the index (``LabelTerms``); the
        # index on its terms, left from when searches looked terms up, took 0.13 s at 10,000 notes to build.
    # The unique labels' vectors (copied from LanceDB's entity_labels, which stays the store of record) as a
    # plain matrix: one query against 12,492 labels took 17-100 ms through LanceDB's flat search and 1 ms as
    # a numpy product (measured on the MuSiQue rules index), and the entity leg runs on every query.
    if entity_files_of is not None:
        for name in (ENTITY_VECTORS, ENTITY_DENSITY, NEIGHBOURS):
            linked(entity_files_of / name, folder / name)
    else:
        matrix = graph["matrix"] if entity_count else np.zeros((0, embedder.dimension))
        np.save(folder / ENTITY_VECTORS, np.ascontiguousarray(matrix, dtype=np.float32))
        np.save(folder / ENTITY_DENSITY, np.asarray(graph["density"], dtype=np.float32))
        found = graph["neighbours"].neighbours
        np.savez(folder / NEIGHBOURS, indices=found.indices, similarities=found.similarities)
    graph["notes"].save(folder)


def _write_kept(folder: Path, graph: dict[str, Any], body_terms: BodyTerms, wording_terms: WordingTerms) -> None:
    """The files the next build reads to do less: the statement rows, the notes' terms, the wordings' terms."""
    # In the order a search prefers them in (``index_graph._statement_rows``), which is the order it reads them in.
    save_statements(folder, graph["edge_statements"], graph["statement_sources"], graph["statement_numbering"].token)
    body_terms.save(folder, graph["body_hashes"], graph["body_tokens"])
    wording_terms.save(folder)


_LABEL_TERM_ROWS: RunMemo[Same, pd.DataFrame] = RunMemo()


def _label_terms(term_lists: list[list[Sequence[str]]]) -> pd.DataFrame:
    """One row (node, wording, term) per term of each wording of each node, in that order, built as columns (a
    list of a million row tuples took 1.5 s at 100,000 notes)."""
    wordings = np.array([len(listed) for listed in term_lists], dtype=np.int64)
    terms = np.array([len(terms) for listed in term_lists for terms in listed], dtype=np.int64)
    node_of_wording = np.repeat(np.arange(len(term_lists), dtype=np.int64), wordings)
    first_of_node = np.repeat(np.cumsum(wordings) - wordings, wordings)
    wording_number = np.arange(len(node_of_wording), dtype=np.int64) - first_of_node
    return pd.DataFrame({
        "node": np.repeat(node_of_wording, terms),
        "wording": np.repeat(wording_number, terms),
        "term": pd.Series(list(chain.from_iterable(chain.from_iterable(term_lists))), dtype="str"),
    })  # fmt: skip


def linked(source: Path, target: Path) -> None:
    """``target`` as a second name of ``source`` (index files are never changed in place, so an index may share
    them with the one before; removing either keeps the other's), or a copy where links are not possible."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
