"""Search over the example vault, built through the real Dagster assets: ranking, provenance, modes, the CLI,
incremental index updates, and an OpenAI-compatible embedding server started on 127.0.0.1."""

from __future__ import annotations

import io
import json
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import pytest

from assets.documents import document_quads, documents
from assets.resources import EngramStores
from assets.retrieval import document_embeddings, retrieval_index
from engramrag.embed.base import EmbeddingServerError
from engramrag.embed.hashing import HashEmbedder
from engramrag.retrieve import IndexMissing, Retriever, index_build, search
from engramrag.retrieve.config import IndexConfig
from engramrag.retrieve.context import AUTO_TURN_NOTICE
from engramrag.retrieve.index_build import ENTITY_DENSITY, ENTITY_VECTORS, NEIGHBOURS, build_retrieval_index
from engramrag.retrieve.published_index import current_index
from engramrag.store import Home
from engramrag.vault.config import VaultConfig, configured_bucket_count
from engramrag.vault.ids import bucket_key, bucket_of
from engramrag.vectors.lancedb_store import VectorStore
from pipelines.build import run_build
from pipelines.cli import main

EXAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "vault"
LEGS = {"lexical", "entity", "triple", "chunk", "bm25", "notes", "ppr"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Home]]:
    """The example vault built once (documents, quads, embeddings, index) for the read-only tests."""
    root = tmp_path_factory.mktemp("search")
    vault = root / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    with pytest.MonkeyPatch.context() as patch:
        for name in ("ENGRAM_HOME", "ENGRAM_VAULT", "ENGRAM_EXTRACTOR", "ENGRAM_EMBEDDER", "DAGSTER_HOME"):
            patch.delenv(name, raising=False)
        home = Home.at(root / "home")
        outcome = run_build(home, vault)
        assert outcome.success, outcome.errors
        yield vault, home


@pytest.fixture(scope="module")
def retriever(built: tuple[Path, Home]) -> Iterator[Retriever]:
    opened = Retriever.open(built[1])
    yield opened
    opened.close()


def docs(answer) -> list[str]:
    return [hit.doc for hit in answer.results]


def test_full_search_ranks_the_document_that_answers_with_provenance_and_legs(retriever: Retriever) -> None:
    answer = retriever.search("Who is the tech lead of Project Falcon?", k=5)
    assert "people/minji-park.md" in docs(answer)[:3]
    assert len(answer.results) == 5 and answer.warnings == []
    scores = [hit.score for hit in answer.results]
    assert scores == sorted(scores, reverse=True)
    for hit in answer.results:
        assert set(hit.legs) == LEGS
        assert hit.legs["ppr"] > 0
        assert hit.provenance["graph"].startswith("https://engramrag.org/vault/")
        assert hit.snippet
    top = answer.results[docs(answer).index("people/minji-park.md")]
    assert top.legs["lexical"] > 0 and top.legs["bm25"] > 0
    start, end = top.provenance["lines"]
    lines = (EXAMPLE_VAULT / top.doc).read_text(encoding="utf-8").splitlines()
    assert 1 <= start <= end <= len(lines)
    assert any(word in " ".join(lines[start - 1 : end]) for word in ("Minji", "lead", "Falcon"))
    assert top.provenance["statements"], "statements touching the seeds are named"
    assert "people/minji-park.md" in answer.context and len(answer.context) <= retriever.config.context_chars


def test_korean_question_finds_the_korean_person(retriever: Retriever) -> None:
    answer = retriever.search("김지훈은 무엇을 담당하나?", k=5)
    assert "people/김지훈.md" in docs(answer)[:3]


def test_two_hop_question_reaches_the_middle_document_only_through_the_graph(retriever: Retriever) -> None:
    # projects/heron.md names Project Heron and links to Tern; tools/tern.md (the middle hop) names neither
    # "Heron" nor any other word of the question, and says who owns Tern.
    question = "Who runs the system Heron depends on?"
    keyword = docs(retriever.search(question, k=20, ablation="bm25_only"))
    graph_off = docs(retriever.search(question, k=20, ablation="graph_off"))
    assert "tools/tern.md" not in keyword and "tools/tern.md" not in graph_off
    full = retriever.search(question, k=20)
    assert "tools/tern.md" in docs(full)
    assert "projects/heron.md" in docs(full)[:3]


def test_auto_turn_uses_no_embedding_returns_at_most_eight_and_warns(built: tuple[Path, Home]) -> None:
    class RefusingEmbedder(HashEmbedder):
        def embed(self, texts):
            raise AssertionError("auto_turn must not embed")

    opened = Retriever.open(built[1], embedder=RefusingEmbedder())
    try:
        answer = opened.search("Falcon catalog database decision", mode="auto_turn", k=20)
    finally:
        opened.close()
    assert 0 < len(answer.results) <= 8
    assert AUTO_TURN_NOTICE in answer.warnings and AUTO_TURN_NOTICE in answer.context
    assert all(hit.legs["chunk"] == 0 and hit.legs["entity"] == 0 for hit in answer.results)


def test_cli_search_json_shape(built: tuple[Path, Home]) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["search", "Which database did Falcon choose for its catalog?", "--home", str(built[1].root),
                     "-k", "4", "--json"])
    assert code == 0
    payload = json.loads(out.getvalue())
    assert {"query", "mode", "results", "context", "warnings"} <= set(payload)
    assert payload["mode"] == "full" and len(payload["results"]) == 4
    for result in payload["results"]:
        assert {"doc", "title", "score", "snippet", "legs", "provenance"} <= set(result)
        assert set(result["legs"]) == LEGS
        assert set(result["provenance"]) == {"graph", "statements", "lines"}
        assert (EXAMPLE_VAULT / result["doc"]).exists()
    auto = io.StringIO()
    with redirect_stdout(auto):
        assert main(["search", "박민지", "--home", str(built[1].root), "--mode", "auto_turn", "--json"]) == 0
    assert json.loads(auto.getvalue())["warnings"] == [AUTO_TURN_NOTICE]


def test_search_before_any_build_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(IndexMissing, match="engram build"):
        search("anything", Home.at(tmp_path / "empty"))


def stores(vault: Path, home: Home) -> EngramStores:
    return EngramStores(home=str(home.root), vault=str(vault))


def run_bucket(vault: Path, home: Home, relative_path: str, instance: dg.DagsterInstance) -> None:
    """One bucket through documents -> quads -> embeddings, then the unpartitioned index, as a sensor run does."""
    key = bucket_key(bucket_of(relative_path, 16))
    resources = {"engram": stores(vault, home)}
    partitioned = dg.materialize(
        [documents, document_quads, document_embeddings], partition_key=key, instance=instance, resources=resources
    )
    assert partitioned.success
    assert dg.materialize([retrieval_index], instance=instance, resources=resources).success


def vector_rows(home: Home, doc_id: str) -> dict[str, int]:
    store = VectorStore.for_home(home, HashEmbedder())
    return {table: store.count(table, f"doc_id = '{doc_id}'") for table in ("chunks", "triples")}


def zanzibar_labels(home: Home) -> set[str]:
    return {label for label in VectorStore.for_home(home, HashEmbedder()).stored_labels() if "Zanzibar" in label}


def test_index_follows_an_edit_and_a_delete(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    home = Home.at(tmp_path / "home")
    with dg.DagsterInstance.ephemeral() as instance:
        resources = {"engram": stores(vault, home)}
        everything = [documents, document_quads, document_embeddings, retrieval_index]
        assert dg.materialize(
            everything,
            instance=instance,
            resources=resources,
            tags={"dagster/asset_partition_range_start": "00", "dagster/asset_partition_range_end": "15"},
        ).success
        first_index = current_index(home)
        with duckdb.connect(str(home.catalog_path), read_only=True) as catalog:
            doc_id = catalog.execute("SELECT doc_id FROM documents WHERE path = 'tools/grafana.md'").fetchone()[0]
            links = {row[0] for row in catalog.execute(
                "SELECT statement_id FROM statements WHERE predicate = 'links_to' AND role = 'assertion'").fetchall()}
        before = vector_rows(home, doc_id)
        assert before["chunks"] > 0 and before["triples"] > 0 and not zanzibar_labels(home)
        # Links between notes are graph edges, not triple vectors (they were 63% of the triples at 10,000 notes).
        embedded = VectorStore.for_home(home, HashEmbedder()).table("triples").to_arrow().column("statement_id")
        assert len(links) > 20 and embedded.length() > 100 and not links & set(embedded.to_pylist())

        note = vault / "tools" / "grafana.md"
        note.write_text(note.read_text(encoding="utf-8") + "\n## Zanzibar panel\n\nThe Zanzibar panel tracks OCR.\n",
                        encoding="utf-8")
        run_bucket(vault, home, "tools/grafana.md", instance)
        assert current_index(home) != first_index
        # A new entity: the entity vectors are written anew, not shared with the index before.
        assert (current_index(home) / ENTITY_VECTORS).stat().st_ino != (first_index / ENTITY_VECTORS).stat().st_ino
        opened = Retriever.open(home)
        try:
            assert docs(opened.search("Zanzibar panel", k=3))[0] == "tools/grafana.md"
            passages = opened.index.manifest["passages"]
        finally:
            opened.close()
        after = vector_rows(home, doc_id)
        assert after["chunks"] >= before["chunks"]
        assert zanzibar_labels(home)  # the new note's label, embedded once
        chunk_texts = VectorStore.for_home(home, HashEmbedder()).table("chunks").search().where(
            f"doc_id = '{doc_id}'").select(["text"]).to_list()
        assert any("Zanzibar" in row["text"] for row in chunk_texts)

        note.unlink()
        run_bucket(vault, home, "tools/grafana.md", instance)
        opened = Retriever.open(home)
        try:
            assert "tools/grafana.md" not in docs(opened.search("Zanzibar panel Grafana dashboards", k=10))
            assert opened.index.manifest["passages"] == passages - 1
        finally:
            opened.close()
        assert vector_rows(home, doc_id) == {"chunks": 0, "triples": 0}
        assert not zanzibar_labels(home)  # no note mentions it any more
        with duckdb.connect(str(home.catalog_path), read_only=True) as catalog:
            remaining = catalog.execute("SELECT count(*) FROM embedded_documents WHERE doc_id = ?", [doc_id])
            assert remaining.fetchone() == (0,)

        untouched = current_index(home)
        assert dg.materialize([retrieval_index], instance=instance, resources=resources).success
        assert current_index(home) == untouched, "an unchanged vault does not rebuild the index"
        # Rebuilt with the same entities, vectors and neighbour lists: those files are the earlier index's, linked.
        build_retrieval_index(home, VaultConfig(bucket_count=configured_bucket_count()), HashEmbedder(), force=True)
        rebuilt = current_index(home)
        assert rebuilt != untouched
        for name in (ENTITY_VECTORS, ENTITY_DENSITY, NEIGHBOURS):
            assert (rebuilt / name).stat().st_ino == (untouched / name).stat().st_ino, name
        # The next build of this process compares against the entity files it wrote, kept in memory; read back from
        # the files they are the same.
        remembered = index_build._previous_neighbours(rebuilt, HashEmbedder(), IndexConfig())
        index_build._resident_entities.clear()
        read = index_build._previous_neighbours(rebuilt, HashEmbedder(), IndexConfig())
        assert remembered is not None and read is not None
        entities = json.loads((rebuilt / "manifest.json").read_text())["entities"]
        assert remembered[1] == read[1] and len(read[1]) == entities > 0
        assert np.array_equal(remembered[2], read[2])
        assert np.array_equal(remembered[0].indices, read[0].indices)
        assert np.array_equal(remembered[0].similarities, read[0].similarities)
        assert not isinstance(remembered[2], np.memmap) and isinstance(read[2], np.memmap)
        opened = Retriever.open(home)
        try:
            assert docs(opened.search("Grafana dashboards", k=3))
        finally:
            opened.close()


class EmbeddingServer:
    """A real OpenAI-compatible /v1/embeddings server on 127.0.0.1, answering with hash vectors."""

    def __init__(self) -> None:
        self.requests = 0
        embedder = HashEmbedder()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.requests += 1
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vectors = np.asarray(embedder.embed(texts))
                payload = {
                    "object": "list",
                    "model": body["model"],
                    "data": [
                        {"object": "embedding", "index": i, "embedding": vector.tolist()}
                        for i, vector in enumerate(vectors)
                    ],
                    "usage": {"prompt_tokens": 0, "total_tokens": 0},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> EmbeddingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_build_and_search_through_an_openai_compatible_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for name in ("projects/heron.md", "tools/tern.md", "people/hyunwoo-jung.md"):
        (vault / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXAMPLE_VAULT / name, vault / name)
    for name in ("ENGRAM_HOME", "ENGRAM_VAULT", "ENGRAM_EXTRACTOR", "ENGRAM_EMBEDDER", "DAGSTER_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = Home.at(tmp_path / "home")
    with EmbeddingServer() as server:
        monkeypatch.setenv("ENGRAM_EMBED_BASE_URL", server.url)
        monkeypatch.setenv("ENGRAM_EMBED_MODEL", "test-embedder")
        outcome = run_build(home, vault, embedder="openai")
        assert outcome.success, outcome.errors
        served = server.requests
        assert served > 0
        opened = Retriever.open(home)
        try:
            assert opened.embedder.name.startswith("openai/")
            answer = opened.search("Who owns Tern?", k=3)
        finally:
            opened.close()
        assert server.requests > served, "the query was embedded by the server"
        assert "tools/tern.md" in docs(answer)
        assert answer.results[0].legs["entity"] > 0 or answer.results[0].legs["chunk"] > 0

    # The server is gone: a full search says which server failed instead of answering without it, and an
    # auto_turn search, which embeds nothing, still answers.
    opened = Retriever.open(home)
    try:
        with pytest.raises(EmbeddingServerError, match=r"127\.0\.0\.1"):
            opened.search("Who owns Tern?")
        # (In this three-note vault every note names Tern and none says "owns": asked that way, the memory
        # rightly reports low confidence, and auto_turn would inject only its notice.)
        assert "tools/tern.md" in docs(opened.search("Who is the owner of Tern?", mode="auto_turn"))
    finally:
        opened.close()
    # And a build that needs the server fails with the reason, leaving the previous index in place.
    index_before = current_index(home)
    (vault / "tools" / "tern.md").write_text("# Tern\n\nNow owned by Sarah Lee.\n", encoding="utf-8")
    failed = run_build(home, vault, embedder="openai")
    assert not failed.success
    assert any("127.0.0.1" in error for error in failed.errors)
    assert current_index(home) == index_before


# The note each README question must rank first, and why it answers. A question added to README without an entry
# here fails the test below, so the front page never shows an example whose first result is wrong.
README_ANSWERS = {
    "Who is the tech lead of Project Falcon?": {"people/minji-park.md"},  # "the tech lead of Project Falcon"
    # Both notes say it in so many words: 김지훈.md "하는 일" (the cluster he runs), grafana.md "담당자: 김지훈".
    "김지훈은 무엇을 담당하나?": {"people/김지훈.md", "tools/grafana.md"},
    "Who owns Tern?": {"tools/tern.md"},  # "Owner: Hyunwoo Jung"
}
README_SEARCH = re.compile(r'engram search "([^"]+)"(?:[^\n]*?--mode (\w+))?')


def test_every_readme_question_ranks_its_answer_first(built: tuple[Path, Home]) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    asked = {(question, mode or "full") for question, mode in README_SEARCH.findall(readme)}
    assert {question for question, _ in asked} == set(README_ANSWERS), "a README question without its answer here"
    for question, mode in sorted(asked):
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["search", question, "--home", str(built[1].root), "--mode", mode, "--json"]) == 0
        first = json.loads(out.getvalue())["results"][0]["doc"]
        assert first in README_ANSWERS[question], f"{question!r} ({mode}) ranks {first} first"
