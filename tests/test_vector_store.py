"""The LanceDB vector store: per-document replacement, vector search, and BM25 over English and Korean chunks."""

from __future__ import annotations

from pathlib import Path

import pytest

from engramrag.embed.base import HashEmbedderConfig
from engramrag.embed.hashing import HashEmbedder
from engramrag.store import Home
from engramrag.vectors import TABLES, VectorStore, VectorStoreMismatch
from engramrag.vectors.fts_text import fts_text
from engramrag.vectors.tables import DOCUMENT_TABLES, schema
from engramrag.vectors.upkeep import MAX_SMALL_FRAGMENTS, small_fragment_rows, tidy_reason

EMBEDDER = HashEmbedder()
EN, KO = "doc-en", "doc-ko"

CHUNKS = {
    EN: [
        "The nightly data pipelines are orchestrated with Dagster.",
        "We migrated the catalog from SQLite to PostgreSQL in March.",
    ],
    KO: [
        "데이터 파이프라인을 Dagster로 옮기기로 결정했다.",
        "박민지는 PostgreSQL 마이그레이션을 맡았다.",
    ],
}


def chunk_rows(doc_id: str, texts: list[str], bucket: int = 1) -> list[dict]:
    vectors = EMBEDDER.embed(texts)
    return [
        {
            "doc_id": doc_id,
            "bucket": bucket,
            "text": text,
            "vector": vector,
            "chunk_index": i,
            "line_start": 2 * i + 1,
            "line_end": 2 * i + 2,
        }
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]


def add_labels(store: VectorStore, labels: list[str]) -> int:
    return store.add_labels(labels, EMBEDDER.embed(labels))


def triple_rows(doc_id: str, triples: list[tuple[str, str, str]]) -> list[dict]:
    texts = [" ".join(triple) for triple in triples]
    vectors = EMBEDDER.embed(texts)
    return [
        {
            "doc_id": doc_id,
            "bucket": 1,
            "text": text,
            "vector": vector,
            "statement_id": f"s{i}",
            "subject": s,
            "predicate": p,
            "object": o,
        }
        for i, ((s, p, o), text, vector) in enumerate(zip(triples, texts, vectors, strict=True))
    ]


def docs_of(hits: list[dict]) -> list[str]:
    return [hit["doc_id"] for hit in hits]


@pytest.fixture
def store(tmp_path: Path) -> VectorStore:
    return VectorStore.for_home(Home.at(tmp_path / "home"), EMBEDDER)


@pytest.fixture
def filled(store: VectorStore) -> VectorStore:
    store.replace_documents("chunks", [EN, KO], chunk_rows(EN, CHUNKS[EN]) + chunk_rows(KO, CHUNKS[KO], bucket=2))
    add_labels(store, ["PostgreSQL", "Dagster", "박민지", "데이터 파이프라인"])
    store.replace_documents(
        "triples",
        [EN, KO],
        triple_rows(EN, [("catalog", "migrated_to", "PostgreSQL")])
        + triple_rows(KO, [("박민지", "맡았다", "마이그레이션")]),
    )
    store.create_fts_index()
    return store


def test_tables_live_in_the_home(tmp_path: Path, filled: VectorStore) -> None:
    assert filled.path == Home.at(tmp_path / "home").lancedb_path
    assert filled.path.is_dir()
    assert {name: filled.count(name) for name in TABLES} == {"chunks": 4, "entity_labels": 4, "triples": 2}
    assert filled.count("chunks", f"doc_id = '{KO}'") == 2
    assert filled.has_fts_index()


def test_vector_search_finds_the_right_document(filled: VectorStore) -> None:
    hit = filled.search_vector("chunks", EMBEDDER.embed(["migrating the catalog to PostgreSQL"])[0], k=1)[0]
    assert (hit["doc_id"], hit["chunk_index"], hit["line_start"]) == (EN, 1, 3)
    assert "vector" not in hit and "search_text" not in hit
    assert 0.0 < hit["score"] <= 1.0

    label = filled.search_vector("entity_labels", EMBEDDER.embed(["박민지는"])[0], k=1)[0]
    assert label["text"] == "박민지" and set(label) == {"row_id", "text", "score"}
    triple = filled.search_vector("triples", EMBEDDER.embed(["catalog migrated to Postgres"])[0], k=1)[0]
    assert (triple["doc_id"], triple["predicate"]) == (EN, "migrated_to")

    only_bucket_2 = filled.search_vector("chunks", EMBEDDER.embed(["PostgreSQL"])[0], k=5, where="bucket = 2")
    assert set(docs_of(only_bucket_2)) == {KO}


def test_full_text_finds_english_and_korean_words(filled: VectorStore) -> None:
    assert docs_of(filled.search_text("pipeline"))[:1] == [EN]  # stemmed: pipelines
    assert docs_of(filled.search_text("SQLite")) == [EN]
    # Korean stems inside longer eojeol: 파이프라인을, 박민지는, 마이그레이션을.
    assert docs_of(filled.search_text("파이프라인"))[:1] == [KO]
    top = filled.search_text("박민지", k=1)[0]
    assert (top["doc_id"], top["chunk_index"], top["text"]) == (KO, 1, CHUNKS[KO][1])
    assert top["score"] > 0
    assert docs_of(filled.search_text("마이그레이션", k=1)) == [KO]
    assert filled.search_text("kubernetes") == []
    assert filled.search_text("?! …") == []
    assert set(docs_of(filled.search_text("Dagster", where="bucket = 2"))) == {KO}  # "Dagster로" too


def test_replacing_and_deleting_documents(filled: VectorStore) -> None:
    ids_before = {hit["row_id"] for hit in filled.search_text("Dagster", k=10)}

    # The English document changes: its first chunk is rewritten, its second dropped; a label is renamed.
    changed = ["The nightly ingestion jobs run on Airflow now."]
    result = filled.replace_documents("chunks", [EN], chunk_rows(EN, changed))
    assert (result.documents, result.inserted, result.deleted) == (1, 1, 2)
    assert filled.count("chunks", f"doc_id = '{EN}'") == 1
    assert docs_of(filled.search_text("Airflow")) == [EN]  # written after the index was built: still found
    assert filled.search_text("SQLite") == []
    assert docs_of(filled.search_text("Dagster")) == [KO]

    # Unchanged rows keep their ids: replacing the Korean document with the same rows inserts nothing.
    same = filled.replace_documents("chunks", [KO], chunk_rows(KO, CHUNKS[KO], bucket=2))
    assert (same.inserted, same.updated, same.deleted) == (0, 2, 0)
    assert {hit["row_id"] for hit in filled.search_text("Dagster")} < ids_before

    # The Korean document is deleted: listed without rows, in every table of document rows.
    for table in DOCUMENT_TABLES:
        filled.replace_documents(table, [KO], [])
    assert {t: filled.count(t, f"doc_id = '{KO}'") for t in DOCUMENT_TABLES} == dict.fromkeys(DOCUMENT_TABLES, 0)
    assert filled.search_text("파이프라인") == []
    assert KO not in docs_of(filled.search_vector("chunks", EMBEDDER.embed(["박민지"])[0], k=10))

    filled.optimize()  # folds the new rows into the indexes; results stay the same
    assert docs_of(filled.search_text("Airflow")) == [EN]
    assert filled.count("chunks") == 1


def test_replace_checks_its_input(store: VectorStore) -> None:
    with pytest.raises(ValueError, match="not listed"):
        store.replace_documents("chunks", [EN], chunk_rows(KO, CHUNKS[KO]))
    with pytest.raises(ValueError, match="dimensions"):
        store.replace_documents("chunks", [EN], [{**chunk_rows(EN, CHUNKS[EN])[0], "vector": [0.1, 0.2]}])
    duplicate = chunk_rows(EN, CHUNKS[EN][:1]) * 2
    with pytest.raises(ValueError, match="share row_id"):
        store.replace_documents("chunks", [EN], duplicate)
    with pytest.raises(ValueError, match="unknown vector table"):
        store.table("passages")
    assert store.replace_documents("chunks", [], []).documents == 0


def test_labels_are_stored_once_per_text_and_dropped_when_unused(store: VectorStore) -> None:
    assert add_labels(store, ["PostgreSQL", "Dagster"]) == 2
    assert add_labels(store, ["Dagster", "박민지"]) == 1  # Dagster keeps its row
    assert store.stored_labels() == {"PostgreSQL", "Dagster", "박민지"} and store.count("entity_labels") == 3
    vectors = dict(zip(*store.label_matrix(), strict=True))
    assert set(vectors) == {"PostgreSQL", "Dagster", "박민지"}
    assert vectors["박민지"].tolist() == pytest.approx(EMBEDDER.embed(["박민지"])[0].tolist())
    assert store.drop_labels({"PostgreSQL", "never stored"}) == 1
    assert store.stored_labels() == {"Dagster", "박민지"}
    # With the table's texts known to this process (its label matrix read), only the new texts are added.
    store.label_matrix()
    assert add_labels(store, ["Dagster", "Falcon"]) == 1 and store.count("entity_labels") == 3
    texts, matrix = store.label_matrix()
    assert sorted(texts) == ["Dagster", "Falcon", "박민지"] and matrix.shape[0] == 3
    assert add_labels(store, ["Falcon"]) == 0 and store.count("entity_labels") == 3
    with pytest.raises(ValueError, match="not a table of document rows"):
        store.replace_documents("entity_labels", [EN], [])


def test_the_label_matrix_is_read_again_only_when_its_table_changed(tmp_path: Path) -> None:
    """One build reads it in two steps; another store (another process) adding or dropping labels is seen, and so is
    a table made again from nothing, whose version numbers start over."""
    path = tmp_path / "lancedb"
    store = VectorStore(path, EMBEDDER.dimension, EMBEDDER.name)
    add_labels(store, ["PostgreSQL", "Dagster"])
    labels, matrix = store.label_matrix()
    again_labels, again = VectorStore(path, EMBEDDER.dimension, EMBEDDER.name).label_matrix()
    assert again is matrix and again_labels == labels == ["PostgreSQL", "Dagster"]
    assert not matrix.flags.writeable  # shared by the steps that read it: none may change it
    writer = VectorStore(path, EMBEDDER.dimension, EMBEDDER.name)
    add_labels(writer, ["박민지"])
    labels, matrix = VectorStore(path, EMBEDDER.dimension, EMBEDDER.name).label_matrix()
    assert labels == ["PostgreSQL", "Dagster", "박민지"] and matrix.shape == (3, EMBEDDER.dimension)
    writer.drop_labels(["Dagster"])
    assert VectorStore(path, EMBEDDER.dimension, EMBEDDER.name).label_matrix()[0] == ["PostgreSQL", "박민지"]
    other = tmp_path / "other"
    first = VectorStore(other, EMBEDDER.dimension, EMBEDDER.name)
    add_labels(first, ["Oxigraph", "DuckDB"])
    assert first.label_matrix()[0] == ["Oxigraph", "DuckDB"]
    first.reset()
    remade = VectorStore(other, EMBEDDER.dimension, EMBEDDER.name)
    add_labels(remade, ["LanceDB", "Dagster", "rdflib"])
    assert remade.table("entity_labels").version == 2  # created, one merge: the number the first table was read at
    assert remade.label_matrix()[0] == ["LanceDB", "Dagster", "rdflib"]


def test_a_stores_own_label_writes_keep_the_matrix_a_read_of_the_table_gives(tmp_path: Path) -> None:
    """An edit's few added and dropped labels update the matrix this process holds (no read of every label at the
    next step); it equals a fresh read, a matrix handed out before stays as it was, and a write by another
    connection in between makes the next read go to the table."""
    import lancedb
    import numpy as np

    from engramrag.vectors import label_cache

    path = tmp_path / "lancedb"
    store = VectorStore(path, EMBEDDER.dimension, EMBEDDER.name)
    add_labels(store, ["PostgreSQL", "Dagster", "DuckDB"])
    _labels, earlier = store.label_matrix()
    held = earlier.copy()
    assert add_labels(store, ["박민지", "Dagster", "LanceDB"]) == 2
    assert store.drop_labels(["PostgreSQL", "never stored"]) == 1
    assert label_cache.cached(path, store.label_version()) is not None  # known without reading the table
    labels, matrix = VectorStore(path, EMBEDDER.dimension, EMBEDDER.name).label_matrix()
    assert np.array_equal(earlier, held) and not matrix.flags.writeable
    label_cache.remember(path, None)
    read_labels, read = VectorStore(path, EMBEDDER.dimension, EMBEDDER.name).label_matrix()
    assert labels == read_labels == ["Dagster", "DuckDB", "박민지", "LanceDB"]
    assert np.array_equal(matrix, read)
    assert matrix[labels.index("박민지")].tolist() == pytest.approx(EMBEDDER.embed(["박민지"])[0].tolist())

    lancedb.connect(str(path)).open_table("entity_labels").delete("text = 'DuckDB'")  # another process
    add_labels(store, ["rdflib"])
    labels, _ = VectorStore(path, EMBEDDER.dimension, EMBEDDER.name).label_matrix()
    assert sorted(labels) == ["Dagster", "LanceDB", "rdflib", "박민지"]


def test_a_labels_table_of_one_row_per_mention_is_replaced(tmp_path: Path) -> None:
    """Homes built before labels were stored once per text: the old table is dropped, to be embedded again."""
    import lancedb
    import pyarrow as pa

    path = tmp_path / "lancedb"
    old = pa.schema([pa.field("doc_id", pa.string()), *schema("entity_labels", EMBEDDER.dimension, EMBEDDER.name)])
    lancedb.connect(str(path)).create_table("entity_labels", schema=old.with_metadata(
        schema("entity_labels", EMBEDDER.dimension, EMBEDDER.name).metadata))  # fmt: skip
    store = VectorStore(path, EMBEDDER.dimension, EMBEDDER.name)
    assert store.count("entity_labels") == 0
    assert "doc_id" not in store.table("entity_labels").schema.names
    assert add_labels(store, ["Dagster"]) == 1


def test_document_vectors_are_half_precision_and_a_float32_table_keeps_its_type(tmp_path: Path,
                                                                              filled: VectorStore) -> None:  # fmt: skip
    import lancedb
    import numpy as np
    import pyarrow as pa

    types = {name: filled.table(name).schema.field("vector").type.value_type for name in TABLES}
    assert types == {"chunks": pa.float16(), "triples": pa.float16(), "entity_labels": pa.float32()}
    # Half precision changes a cosine by about 1e-3: the nearest chunk is still the right one, with its score.
    query = EMBEDDER.embed([CHUNKS[KO][0]])[0]
    hit = filled.search_vector("chunks", query, k=1)[0]
    assert (hit["doc_id"], hit["chunk_index"]) == (KO, 0)
    assert hit["score"] == pytest.approx(1.0, abs=2e-3)

    # A home whose chunks table was written before half precision keeps float32 rows and still takes writes.
    path = tmp_path / "older"
    float32 = pa.schema([field if field.name != "vector" else pa.field(
        "vector", pa.list_(pa.float32(), EMBEDDER.dimension), nullable=False)
        for field in schema("chunks", EMBEDDER.dimension, EMBEDDER.name)],
        metadata=schema("chunks", EMBEDDER.dimension, EMBEDDER.name).metadata)  # fmt: skip
    lancedb.connect(str(path)).create_table("chunks", schema=float32)
    older = VectorStore(path, EMBEDDER.dimension, EMBEDDER.name)
    older.replace_documents("chunks", [EN], chunk_rows(EN, CHUNKS[EN]))
    assert older.table("chunks").schema.field("vector").type.value_type == pa.float32()
    stored = older.table("chunks").to_arrow().column("vector").combine_chunks().flatten().to_numpy()
    assert np.array_equal(stored.reshape(2, -1), EMBEDDER.embed(CHUNKS[EN]))


def test_full_text_before_the_index_is_built(store: VectorStore) -> None:
    store.replace_documents("chunks", [EN], chunk_rows(EN, CHUNKS[EN]))
    with pytest.raises(RuntimeError, match="create_fts_index"):
        store.search_text("Dagster")


def test_another_embedder_is_refused_until_reset(filled: VectorStore) -> None:
    reopened = VectorStore(filled.path, EMBEDDER.dimension, EMBEDDER.name)
    assert reopened.count("chunks") == 4  # the recorded embedder survives writes and reopening

    other = HashEmbedder(HashEmbedderConfig(dimension=128))
    switched = VectorStore(filled.path, other.dimension, other.name)
    with pytest.raises(VectorStoreMismatch, match="Re-embed everything"):
        switched.count("chunks")
    switched.reset()
    assert switched.count("chunks") == 0
    assert switched.table("chunks").schema.field("vector").type.list_size == 128


def test_fts_text_bigrams_cjk_runs_only() -> None:
    assert fts_text("데이터 파이프라인을 Dagster로") == "데이 이터 파이 이프 프라 라인 인을 dagster 로"
    assert fts_text("The Pipelines, 2024!") == "the pipelines 2024"
    assert fts_text("집") == "집"


def test_indexes_are_optimised_only_when_a_table_needs_it(filled: VectorStore) -> None:
    first = filled.refresh_indexes()  # the first refresh builds the BM25 index; nothing needs compacting yet
    assert first == {} and filled.has_fts_index()
    for round_ in range(MAX_SMALL_FRAGMENTS):  # each build's merge adds a small fragment
        filled.replace_documents("chunks", [f"doc-{round_}"], chunk_rows(f"doc-{round_}", [f"note {round_} on Kafka"]))
    assert "small fragments" in tidy_reason(filled.table("chunks"))
    assert tidy_reason(filled.table("triples")) is None
    assert set(filled.refresh_indexes()) == {"chunks"}
    assert tidy_reason(filled.table("chunks")) is None
    assert docs_of(filled.search_text("Kafka note 7"))[0] == "doc-7"  # found through the optimised index
    assert set(filled.refresh_indexes(force=True)) == set(TABLES)  # the consistency pass optimises every table


def test_an_edit_tidies_its_small_fragments_without_rewriting_indexed_buckets(store: VectorStore) -> None:
    # A full build's shape: one fragment per bucket partition (here 6 of 2,000 rows), indexed once built.
    for bucket in range(6):
        documents = [f"b{bucket}-{n}" for n in range(200)]
        texts = {doc: [f"{doc} section {k} on storage" for k in range(10)] for doc in documents}
        rows = [row for doc in documents for row in chunk_rows(doc, texts[doc], bucket)]
        store.replace_documents("chunks", documents, rows)
    assert store.refresh_indexes() == {}  # builds the BM25 and the vector index
    chunks = store.table("chunks")
    buckets = {fragment.fragment_id for fragment in chunks.to_lance().get_fragments()}
    assert len(buckets) == 6
    assert all(f.physical_rows >= small_fragment_rows(12_000) for f in chunks.to_lance().get_fragments())

    for round_ in range(MAX_SMALL_FRAGMENTS):  # each edit replaces one note of a bucket: a small fragment
        doc = f"b{round_ % 6}-{round_}"
        store.replace_documents("chunks", [doc], chunk_rows(doc, [f"edited note {round_} about Kafka"], round_ % 6))
    assert "small fragments" in tidy_reason(chunks)
    assert store.refresh_indexes() == {"chunks": f"{MAX_SMALL_FRAGMENTS} small fragments"}

    tidied = store.table("chunks")
    fragments = tidied.to_lance().get_fragments()
    assert buckets <= {fragment.fragment_id for fragment in fragments}  # no bucket fragment was rewritten
    assert len(fragments) == 7  # the edits' fragments became one
    assert tidy_reason(tidied) is None
    assert all(tidied.index_stats(index.name).num_unindexed_rows == 0 for index in tidied.list_indices())
    assert tidied.count_rows() == 12_000 - 20 * 10 + 20
    assert docs_of(store.search_text("edited note 13 Kafka"))[0] == "b1-13"
    old_rows = store.search_text("b1-13 section 4 storage", k=50)
    assert not [hit for hit in old_rows if hit["doc_id"] == "b1-13" and "section" in hit["text"]]  # still deleted
    edited = EMBEDDER.embed(["edited note 13 about Kafka"])[0]
    assert docs_of(store.search_vector("chunks", edited, k=1)) == ["b1-13"]

    assert store.refresh_indexes(force=True)["chunks"] == "requested"  # the consistency pass rewrites everything
    rewritten = {fragment.fragment_id for fragment in store.table("chunks").to_lance().get_fragments()}
    assert not rewritten & buckets and len(rewritten) < 7
    assert docs_of(store.search_text("edited note 13 Kafka"))[0] == "b1-13"


def test_cached_labels_grow_and_shrink_without_changing_a_matrix_handed_out_before() -> None:
    import numpy as np

    from engramrag.vectors.label_cache import CachedLabels

    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(40, 8)).astype(np.float32)
    cached = CachedLabels.of((1, "t1"), [f"l{i}" for i in range(16)], vectors[:16])
    handed = [(cached.matrix, cached.matrix.copy())]
    for step, start in enumerate(range(16, 40, 6)):  # room for some, then a larger buffer
        labels = [f"l{i}" for i in range(start, start + 6)]
        cached = cached.appended((2 + step, "t"), labels, vectors[start : start + 6])
        handed.append((cached.matrix, cached.matrix.copy()))
    assert cached.texts == tuple(f"l{i}" for i in range(40)) and np.array_equal(cached.matrix, vectors)
    shrunk = cached.without((9, "t9"), {"l3", "l39", "absent"})
    assert "l3" not in shrunk.texts and len(shrunk.texts) == 38
    assert np.array_equal(shrunk.matrix, np.delete(vectors, [3, 39], axis=0))
    assert all(np.array_equal(matrix, copy) for matrix, copy in handed)  # none changed under its holder
    assert not shrunk.matrix.flags.writeable
