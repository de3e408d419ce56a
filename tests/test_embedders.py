"""The hash embedder (offline default) and the OpenAI-compatible embedder against a real local HTTP server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from engramrag.embed import Embedder, EmbeddingServerError, HashEmbedderConfig, make_embedder
from engramrag.embed.base import OpenAIEmbedderConfig, config_help
from engramrag.embed.hashing import HashEmbedder
from engramrag.embed.openai_compatible import OpenAIEmbedder


def cosine(embedder: Embedder, a: str, b: str) -> float:
    vectors = embedder.embed([a, b])
    return float(vectors[0] @ vectors[1])


# --- hash embedder ----------------------------------------------------------------------------------------


def test_hash_vectors_are_normalised_float32_rows_in_order() -> None:
    embedder = HashEmbedder()
    texts = ["PostgreSQL", "박민지는 회의에 참석했다", "", "   ", "Dagster로 옮긴다"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (5, 512)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(vectors[1], embedder.embed([texts[1]])[0])  # a row does not depend on its batch
    assert embedder.embed([]).shape == (0, 512)
    assert isinstance(embedder, Embedder)


def test_hash_is_deterministic_across_processes() -> None:
    texts = ["PostgreSQL 16 migration", "데이터 파이프라인을 옮겼다"]
    here = HashEmbedder().embed(texts)
    script = (
        "import sys, json; from engramrag.embed.hashing import HashEmbedder; "
        f"print(json.dumps(HashEmbedder().embed({texts!r}).tolist()))"
    )
    # A fresh interpreter has another str-hash salt: the vectors must not depend on it.
    other = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    np.testing.assert_array_equal(here, np.asarray(json.loads(other.stdout), dtype=np.float32))


def test_hash_settings_change_the_vectors_and_the_name() -> None:
    base = HashEmbedder()
    seeded = HashEmbedder(HashEmbedderConfig(seed="other"))
    assert base.name != seeded.name
    assert not np.array_equal(base.embed(["Dagster"]), seeded.embed(["Dagster"]))
    assert HashEmbedder(HashEmbedderConfig(dimension=64)).embed(["x"]).shape == (1, 64)


def test_hash_similarity_orders_related_above_unrelated_english() -> None:
    embedder = HashEmbedder()
    related = cosine(embedder, "PostgreSQL", "Postgres")
    assert related > 0.5
    for unrelated in ("Dagster", "Kubernetes", "박민지"):
        assert related > cosine(embedder, "PostgreSQL", unrelated) + 0.3
    assert cosine(embedder, "data pipeline migration", "migrating the data pipelines") > cosine(
        embedder, "data pipeline migration", "quarterly budget review"
    )


def test_hash_similarity_orders_related_above_unrelated_korean() -> None:
    embedder = HashEmbedder()
    related = cosine(embedder, "박민지", "박민지는")
    assert related > 0.4
    for unrelated in ("김철수", "이서연이", "PostgreSQL"):
        assert related > cosine(embedder, "박민지", unrelated) + 0.2
    assert cosine(embedder, "데이터 파이프라인", "파이프라인을 옮겼다") > cosine(
        embedder, "데이터 파이프라인", "회의록 정리"
    )
    # A particle glued to a Latin name does not hide the name.
    assert cosine(embedder, "Dagster로", "Dagster") > 0.8


def test_hash_jamo_option_relates_inflections() -> None:
    syllables = HashEmbedder()
    jamo = HashEmbedder(HashEmbedderConfig(jamo=True))
    assert cosine(jamo, "했다", "한다") > cosine(syllables, "했다", "한다")
    assert cosine(jamo, "박민지", "박민지는") > cosine(jamo, "박민지", "김철수")


def test_hash_is_fast_enough() -> None:
    words = ["alpha", "beta", "gamma", "delta", "Dagster", "PostgreSQL", "migration"]
    words += ["데이터", "파이프라인", "회의", "결정", "박민지는"]
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, size=6)) + f" item{i}" for i in range(2000)]
    started = time.perf_counter()
    vectors = HashEmbedder().embed(texts)
    assert vectors.shape == (2000, 512)
    assert time.perf_counter() - started < 5.0  # ~0.1 s here; generous for a loaded 2-core machine


def test_registry_and_config_help(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_embedder("hash", dimension=128).dimension == 128
    with pytest.raises(ValueError, match="unknown embedder"):
        make_embedder("word2vec")
    with pytest.raises(ValueError, match="unknown setting"):
        make_embedder("hash", dimensions=128)
    monkeypatch.setenv("ENGRAM_EMBED_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ENGRAM_EMBED_MODEL", "env-model")
    monkeypatch.setenv("ENGRAM_EMBED_API_KEY", "secret")
    from_env = make_embedder("openai")
    assert isinstance(from_env, OpenAIEmbedder)
    assert (from_env.config.base_url, from_env.config.model, from_env.config.api_key) == (
        "http://127.0.0.1:9/v1",
        "env-model",
        "secret",
    )
    assert make_embedder("openai", model="given").config.model == "given"
    monkeypatch.delenv("ENGRAM_EMBED_MODEL")
    with pytest.raises(ValueError, match="ENGRAM_EMBED_MODEL"):
        make_embedder("openai")
    assert "ENGRAM_EMBED_BASE_URL" in config_help(OpenAIEmbedderConfig)["base_url"]
    assert all(config_help(HashEmbedderConfig).values())


# --- OpenAI-compatible embedder against a real local server -----------------------------------------------

DIMENSION = 6


def fake_vector(text: str) -> list[float]:
    """A deterministic, text-dependent vector, deliberately not normalised."""
    codes = [ord(ch) for ch in text] or [0]
    return [float(len(text) + 1), float(sum(codes) % 97), float(codes[0] % 13), 1.0, 2.0, float(len(codes) % 5)]


class EmbeddingServer:
    """A minimal /v1/embeddings server: records every request, can fail the first ones with HTTP 500."""

    def __init__(self, fail_first: int = 0) -> None:
        self.fail_first = fail_first
        self.requests: list[dict] = []
        self.statuses: list[int] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if self.path != "/v1/embeddings":
                    return self._reply(404, {"error": {"message": f"no route {self.path}"}})
                if len(server.requests) <= server.fail_first:
                    return self._reply(500, {"error": {"message": "model is loading"}}, {"retry-after-ms": "10"})
                texts = body["input"]
                data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(texts)]
                data.reverse()  # answer out of order: the client must sort by index
                tokens = sum(len(t) for t in texts)
                self._reply(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body["model"],
                        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                    },
                )

            def _reply(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
                server.statuses.append(status)
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> EmbeddingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as running:
        yield running


def expected(texts: list[str]) -> np.ndarray:
    raw = np.asarray([fake_vector(t) for t in texts], dtype=np.float32)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def test_openai_embedder_batches_keeps_order_and_normalises(server: EmbeddingServer) -> None:
    embedder = make_embedder("openai", base_url=server.base_url, model="test-embed", api_key="k", batch_size=4)
    texts = [f"text number {i} 데이터" for i in range(10)] + [""]
    vectors = embedder.embed(texts)
    assert len(server.requests) == 3  # 11 texts in batches of 4
    assert [len(r["body"]["input"]) for r in server.requests] == [4, 4, 3]
    assert all(r["body"]["model"] == "test-embed" for r in server.requests)
    assert all(r["body"]["encoding_format"] == "float" for r in server.requests)
    assert server.requests[0]["auth"] == "Bearer k"
    assert server.requests[-1]["body"]["input"][-1] == " "  # an empty text is sent as a space
    assert vectors.shape == (11, DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[:10], expected(texts[:10]), rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert embedder.dimension == DIMENSION
    assert embedder.name == "openai/test-embed"


def test_openai_embedder_learns_dimension_with_one_probe(server: EmbeddingServer) -> None:
    embedder = OpenAIEmbedder(OpenAIEmbedderConfig(base_url=server.base_url, model="m"))
    assert embedder.dimension == DIMENSION
    assert len(server.requests) == 1
    assert embedder.dimension == DIMENSION
    assert len(server.requests) == 1
    assert embedder.embed([]).shape == (0, DIMENSION)


def test_openai_embedder_rejects_a_dimension_change(server: EmbeddingServer) -> None:
    embedder = OpenAIEmbedder(OpenAIEmbedderConfig(base_url=server.base_url, model="m", dimension=1024))
    with pytest.raises(EmbeddingServerError, match="expected 1024"):
        embedder.embed(["a"])


def test_openai_embedder_retries_a_server_error() -> None:
    with EmbeddingServer(fail_first=2) as server:
        embedder = make_embedder("openai", base_url=server.base_url, model="m", max_retries=3)
        vectors = embedder.embed(["retry me"])
    assert server.statuses == [500, 500, 200]
    np.testing.assert_allclose(vectors, expected(["retry me"]), rtol=1e-6)


def test_openai_embedder_gives_up_after_retries_with_the_status() -> None:
    with EmbeddingServer(fail_first=10) as server:
        embedder = make_embedder("openai", base_url=server.base_url, model="m", max_retries=1)
        with pytest.raises(EmbeddingServerError, match="HTTP 500") as raised:
            embedder.embed(["x"])
    assert server.statuses == [500, 500]
    assert server.base_url in str(raised.value)


def test_openai_embedder_closed_port_names_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"  # nothing listens here any more
    embedder = make_embedder("openai", base_url=url, model="m", max_retries=0, timeout=5)
    with pytest.raises(EmbeddingServerError) as raised:
        embedder.embed(["x"])
    message = str(raised.value)
    assert url in message
    assert "server running" in message
    assert "ENGRAM_EMBED_BASE_URL" in message
