"""A model server that cannot be reached stops the build from sending it documents (issue 19, item 3).

Through the real CLI in a child process (`python -m pipelines.cli build --extractor openai`), with
ENGRAM_LLM_BASE_URL at a port on 127.0.0.1 where nothing listens, then at a real server (tests/llm_server.py)
that answers the first notes and dies. The breaker (engramrag/extract/llm/breaker.py) opens after
ENGRAM_LLM_UNREACHABLE_AFTER (3) connection attempts in a row that fail; the documents left are recorded as failed
without a request, so the next build retries them; stderr says once that the server is unreachable and what to
do; the exit code says some (4) or all (5) documents failed.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

from engramrag.extract.llm import LLMConfig, LLMExtractionFailed, OpenAIExtractor, ResponseCache
from engramrag.extract.llm.breaker import STOPPED, Breaker
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.markdown import parse_document
from pipelines.exit_codes import ALL_FAILED, OK, SOME_FAILED
from tests.llm_server import Drop, LLMServer, echo_responder

REPOSITORY = Path(__file__).resolve().parents[1]
NOTES = 12
THRESHOLD = 3  # LLMConfig.unreachable_after's default


def write_notes(vault: Path, count: int = NOTES) -> list[str]:
    paths = []
    for index in range(count):
        path = f"notes/n{index:02d}.md"
        (vault / path).parent.mkdir(parents=True, exist_ok=True)
        (vault / path).write_text(f"# Note {index}\n\nNote{index} Project works with Team{index} Group.\n", "utf-8")
        paths.append(path)
    return paths


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound for a moment, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def build(vault: Path, home: Path, base_url: str, **settings: str) -> subprocess.CompletedProcess:
    """`engram build --extractor openai` in a child process, with only these model settings."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("ENGRAM_", "DAGSTER_"))}
    environment |= {"ENGRAM_LLM_BASE_URL": base_url, "ENGRAM_LLM_MODEL": "test-model", "PYTHONPATH": str(REPOSITORY),
                    **settings}  # fmt: skip
    command = [sys.executable, "-m", "pipelines.cli", "build", "--vault", str(vault), "--home", str(home),
               "--extractor", "openai"]  # fmt: skip
    return subprocess.run(command, cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=600)


def run_id(done: subprocess.CompletedProcess) -> str:
    found = re.search(r"\[run ([^\]]+)\]", done.stdout)
    assert found, done.stdout + done.stderr[-3000:]
    return found.group(1)


def catalog(home: Path, query: str, parameters: list[Any]) -> list[tuple]:
    with Home.at(home).reading():
        connection = duckdb.connect(str(home / "catalog.duckdb"), read_only=True)
        try:
            return connection.execute(query, parameters).fetchall()
        finally:
            connection.close()


def unreachable_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "unreachable" in line]


def test_a_closed_port_stops_the_build_says_so_once_and_the_next_build_retries(tmp_path: Path) -> None:
    vault, home = tmp_path / "vault", tmp_path / "home"
    paths = write_notes(vault)
    url = f"http://127.0.0.1:{closed_port()}/v1"

    down = build(vault, home, url)  # the defaults: 4 documents at once, 4 transport retries each
    assert down.returncode == ALL_FAILED, down.stderr[-3000:]
    assert f"built {NOTES} documents: 0 extracted, {NOTES} failed (retried by the next build)" in down.stdout
    [line] = unreachable_lines(down.stderr)  # said once, with the address and what to do
    assert f"the model server at {url} is unreachable" in line
    assert "Start the server, or set ENGRAM_LLM_BASE_URL" in line and "Connection refused" in line
    assert all(down.stderr.count(path) <= 1 for path in paths)  # no reason printed twice per document

    run = run_id(down)
    failed = catalog(home, "SELECT path FROM extraction_runs WHERE run_id = ? AND status = 'failed'", [run])
    assert sorted(path for (path,) in failed) == paths  # in the run's record, so the next build retries them
    assert catalog(home, "SELECT count(*) FROM documents WHERE extracted_hash IS NULL", [])[0][0] == NOTES
    # Connection attempts are bounded by the breaker, not by documents × retries (here 12 × 5 = 60): at most the
    # threshold, plus one attempt of each other thread that was already under way.
    [(attempts,)] = catalog(home, "SELECT coalesce(sum(requests), 0) FROM llm_calls WHERE run_id = ?", [run])
    assert THRESHOLD <= attempts <= THRESHOLD + 4 - 1

    with LLMServer(responder=echo_responder) as server:
        up = build(vault, home, server.url)
    assert up.returncode == OK, up.stderr[-3000:]
    assert f"built {NOTES} documents: {NOTES} extracted, 0 failed, 0 unchanged" in up.stdout
    assert not unreachable_lines(up.stderr)


class DiesAfter:
    """A model that answers the first ``answers`` requests, then dies: the server stops listening (new
    connections are refused) and every request still reaching it on an open connection is dropped."""

    def __init__(self, answers: int) -> None:
        self.answers = answers
        self.server: LLMServer | None = None
        self.seen = 0
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Any:
        with self.lock:
            self.seen += 1
            alive = self.seen <= self.answers
            dying = self.seen == self.answers + 1
        if alive:
            return echo_responder(request)
        if dying:  # not from this handler's own thread's point of view: stop() waits for the serving loop
            threading.Thread(target=self.server.stop, daemon=True).start()
        return Drop()


def test_a_server_that_dies_during_the_build_opens_the_breaker_too(tmp_path: Path) -> None:
    vault, home = tmp_path / "vault", tmp_path / "home"
    paths = write_notes(vault)
    answers, concurrency, retries = 5, 2, 2
    model = DiesAfter(answers)
    model.server = server = LLMServer(responder=model).start()
    url = server.url
    try:
        done = build(
            vault,
            home,
            url,
            ENGRAM_LLM_CONCURRENCY=str(concurrency),
            ENGRAM_LLM_MAX_RETRIES=str(retries),
            ENGRAM_LLM_TIMEOUT_S="20",
        )
    finally:
        server.stop()
    assert done.returncode == SOME_FAILED, done.stderr[-3000:]
    failed = NOTES - answers
    assert f"built {NOTES} documents: {answers} extracted, {failed} failed (retried by the next build)" in done.stdout
    [line] = unreachable_lines(done.stderr)
    assert f"the model server at {url} is unreachable" in line and "ENGRAM_LLM_BASE_URL" in line
    assert all(done.stderr.count(path) <= 1 for path in paths)

    run = run_id(done)
    rows = catalog(home, "SELECT status, count(*) FROM extraction_runs WHERE run_id = ? GROUP BY status", [run])
    assert dict(rows) == {"ok": answers, "failed": failed}
    # After the death: each thread's open connection dropped once, then refused connections until the breaker
    # opened (the threshold, plus the other thread's attempt under way); before the breaker the failed documents
    # would have taken 3 attempts each (21).
    [(attempts,)] = catalog(
        home, "SELECT coalesce(sum(requests), 0) FROM llm_calls WHERE run_id = ? AND status = 'failed'", [run]
    )
    assert attempts <= concurrency + THRESHOLD + concurrency - 1
    status = json.loads(
        subprocess.run([sys.executable, "-m", "pipelines.cli", "status", "--home", str(home), "--json"],
                       cwd=REPOSITORY, capture_output=True, text=True, timeout=120, check=True).stdout
    )  # fmt: skip
    assert status["failed"] == failed  # still failing: the next build retries them


# --- the breaker itself, in process ------------------------------------------------------------------------------


def test_only_failures_in_a_row_open_the_breaker_and_any_reply_resets_the_count() -> None:
    breaker = Breaker("http://127.0.0.1:9/v1", threshold=3, setting="ENGRAM_LLM_BASE_URL")
    assert not breaker.unreachable("ConnectError: refused") and not breaker.unreachable("ConnectError: refused")
    breaker.reached()  # an HTTP 500 is a reply: the server is there
    assert not breaker.unreachable("ConnectError: refused") and not breaker.unreachable("ConnectError: refused")
    assert breaker.unreachable("ConnectTimeout: timed out") and breaker.is_open
    breaker.reached()  # open for the rest of the run
    assert breaker.is_open and "3 connection attempts in a row failed, the last with ConnectTimeout" in (
        breaker.message()
    )
    never = Breaker("http://127.0.0.1:9/v1", threshold=0, setting="ENGRAM_LLM_BASE_URL")
    assert not any(never.unreachable("ConnectError: refused") for _ in range(10))


def test_the_request_that_opens_the_breaker_is_not_retried_and_later_ones_are_not_sent(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    config = LLMConfig(base_url=url, model="m", max_retries=4, timeout_s=5)
    extractor = OpenAIExtractor(config, ResponseCache(tmp_path / "cache.sqlite"))
    first = parse_document(b"# One\n\nAlpha Project runs on Dagster.\n", "one.md", VaultConfig())
    with pytest.raises(LLMExtractionFailed) as failure:
        extractor.extract(first)  # 3 refused attempts of its 5, then it stops
    [call] = failure.value.calls
    assert (call.requests, call.status) == (THRESHOLD, "failed") and STOPPED in failure.value.reason
    assert extractor.server_unreachable is not None and url in extractor.server_unreachable

    second = parse_document(b"# Two\n\nBeta Team reviews it.\n", "two.md", VaultConfig())
    with pytest.raises(LLMExtractionFailed) as failure:
        extractor.extract(second)
    assert failure.value.calls == [] and STOPPED in failure.value.reason  # nothing sent, nothing to account


def test_a_breaker_that_never_opens_keeps_the_transport_retries(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    config = LLMConfig(base_url=url, model="m", max_retries=3, timeout_s=5, unreachable_after=0)
    extractor = OpenAIExtractor(config, ResponseCache(tmp_path / "cache.sqlite"))
    document = parse_document(b"# One\n\nAlpha Project runs on Dagster.\n", "one.md", VaultConfig())
    with pytest.raises(LLMExtractionFailed, match=r"could not get an answer .* \(4 times\)"):
        extractor.extract(document)
    assert extractor.server_unreachable is None
