"""`engram build --dry-run` leaves the disk as it found it: no home folder for a home that does not exist, and in a
built home not one file created, changed or touched, while it still counts the answers of the response cache
(also those a running build has so far only in the cache's write-ahead log). The CLI runs in a child process
against a real model server on 127.0.0.1 (tests/llm_server.py) that must receive no request."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engramrag.decisions.store import DecisionsStore
from engramrag.extract.llm import LLMConfig, OpenAIExtractor, ResponseCache, ResponseCacheError
from engramrag.extract.llm.cache import CACHE_FILE, CacheKey
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.markdown import parse_document
from pipelines.build import run_build
from tests.conftest import build_environment
from tests.llm_server import LLMServer, echo_responder, segment_of, server_error
from tests.test_llm_lifecycle import (
    LONG,
    MODEL,
    SEGMENT_CHARS,
    llm_environment,
    segment_count,
    write_prices,
    write_vault,
)

REPOSITORY = Path(__file__).resolve().parents[1]
NOTES = {
    "notes/alpha.md": "# Alpha\n\nAlpha Project runs on Dagster and keeps its catalog in DuckDB.\n",
    "notes/beta.md": "# Beta\n\nBeta Team reviews Alpha Project every Monday with Grace Hopper.\n",
    LONG: "# Long\n\n" + "".join(
        f"## Section {name}\n\n{name} Service talks to Kafka Broker and writes Parquet Files. " * 2 + "\n\n"
        for name in ("Orion", "Vega", "Lyra", "Draco")
    ),
}


class LastSegmentFails:
    """The model answers every segment except the long note's last one: its earlier answers stay in the cache."""

    def __call__(self, request: dict[str, Any]) -> Any:
        segment = segment_of(request)
        done, total = segment["part"].split(" of ")
        if segment["document"] == LONG and done == total:
            return server_error(500)
        return echo_responder(request)


@dataclass
class Built:
    home: Path
    vault: Path
    server: LLMServer
    long_segments: int


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """One `openai` build of a small vault in which the long note's last segment always fails, so the next build
    must extract that note again and its other segments are answered by the cache. The server stays up."""
    root = tmp_path_factory.mktemp("dry-run")
    vault = write_vault(root / "vault", NOTES)
    with LLMServer(responder=LastSegmentFails()) as server, build_environment(), pytest.MonkeyPatch.context() as patch:
        llm_environment(patch, server.url, write_prices(root / "prices.json"), ENGRAM_LLM_MAX_RETRIES="0")
        outcome = run_build(Home.at(root / "home"), vault, extractor="openai")
        assert outcome.success, outcome.errors
        yield Built(root / "home", vault, server, segment_count(vault, LONG))


def dry_run(vault: Path, home: Path, cwd: Path) -> dict[str, Any]:
    """The real CLI in a child process, run from ``cwd`` with no ENGRAM_HOME (so a default home would land there)."""
    command = [sys.executable, "-m", "pipelines.cli", "build", "--dry-run", "--json", "--vault", str(vault),
               "--home", str(home), "--extractor", "openai"]
    environment = {**os.environ, "ENGRAM_HOME": "", "PYTHONPATH": str(REPOSITORY)}
    done = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def snapshot(root: Path, skip: tuple[str, ...] = ()) -> dict[str, tuple]:
    """Every file's bytes (hashed) and mtime, and every folder's entries and mtime, under ``root``."""
    found: dict[str, tuple] = {}
    for folder, folders, files in os.walk(root):
        found[folder] = ("folder", sorted(folders + files), os.stat(folder).st_mtime_ns)
        for name in files:
            path = Path(folder) / name
            if name not in skip:
                found[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return found


def test_a_dry_run_of_a_home_that_does_not_exist_creates_nothing(built: Built, tmp_path: Path) -> None:
    home = tmp_path / "not" / "yet" / "home"
    asked = len(built.server.requests)
    report = dry_run(built.vault, home, tmp_path)
    assert not (tmp_path / "not").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == []  # no default home (.engram) in the working folder
    assert len(built.server.requests) == asked
    assert report["documents"] == len(NOTES) and report["unchanged"] == 0
    assert {row["reason"] for row in report["per_document"]} == {"new"}
    assert report["cached_segments"] == 0 and report["requests"] == report["segments"] > len(NOTES)


def test_a_dry_run_of_a_built_home_touches_no_file_and_counts_the_cached_segments(built: Built, tmp_path: Path) -> None:
    assert (built.home / CACHE_FILE).is_file() and not (built.home / f"{CACHE_FILE}-wal").exists()
    before = snapshot(built.home)
    asked = len(built.server.requests)
    report = dry_run(built.vault, built.home, tmp_path)
    assert snapshot(built.home) == before
    assert len(built.server.requests) == asked
    assert report["unchanged"] == len(NOTES) - 1
    (long,) = report["per_document"]
    assert (long["path"], long["reason"]) == (LONG, "pending")
    assert (long["segments"], long["cached_segments"]) == (built.long_segments, built.long_segments - 1)
    assert report["requests"] == 1 and long["tokens_in"] > 0


def test_a_dry_run_reads_the_decisions_store_without_migrating_or_touching_it(built: Built, tmp_path: Path) -> None:
    """An agent's pending note in learned/ makes the estimate consult the decisions store. The estimate still
    holds the note back, and the store (here one an older program left, schema version 2) stays as it was:
    no migration, no -wal or -shm file, no changed byte or mtime."""
    home, vault = tmp_path / "home", tmp_path / "vault"
    shutil.copytree(built.home, home)
    shutil.copytree(built.vault, vault)
    (vault / "learned").mkdir()
    (vault / "learned" / "agent-idea.md").write_text(
        "---\ntitle: Agent idea\nstatus: pending\n---\n# Agent idea\n\nAn agent wrote this.\n", encoding="utf-8"
    )
    DecisionsStore.for_home(Home(home))  # the store, at the current schema
    with closing(sqlite3.connect(home / "decisions.sqlite")) as connection:
        connection.execute("PRAGMA user_version = 2")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for leftover in ("decisions.sqlite-wal", "decisions.sqlite-shm"):
        (home / leftover).unlink(missing_ok=True)
    before = snapshot(home)
    report = dry_run(vault, home, tmp_path)
    assert snapshot(home) == before
    assert "waiting for a person's approval" in report["rejected"]["learned/agent-idea.md"]
    with closing(sqlite3.connect(f"{(home / 'decisions.sqlite').as_uri()}?mode=ro", uri=True)) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 2


def test_a_dry_run_reads_answers_a_running_build_has_only_in_the_write_ahead_log(built: Built, tmp_path: Path) -> None:
    """A connection holds the cache open (as a running build does) while a new note is answered: its answer is in
    the ``-wal`` file, not in the main file. The dry run counts it and changes neither file."""
    home, vault = tmp_path / "home", tmp_path / "vault"
    shutil.copytree(built.home, home)
    shutil.copytree(built.vault, vault)
    new = "notes/gamma.md"
    write_vault(vault, {new: "# Gamma\n\nGamma Pipeline feeds Alpha Project.\n"})
    document = parse_document((vault / new).read_bytes(), new, VaultConfig())
    cache_file = home / CACHE_FILE
    holder = sqlite3.connect(cache_file)
    try:
        holder.execute("SELECT count(*) FROM responses").fetchone()
        config = LLMConfig(base_url=built.server.url, model=MODEL, api_key="test-key", segment_chars=SEGMENT_CHARS)
        OpenAIExtractor(config, ResponseCache(cache_file)).extract(document)
        wal = home / f"{CACHE_FILE}-wal"
        assert wal.stat().st_size > 0
        with closing(sqlite3.connect(f"{cache_file.as_uri()}?immutable=1", uri=True)) as main_file_only:
            rows = main_file_only.execute("SELECT count(*) FROM responses WHERE body_hash = ?", [document.body_hash])
            assert rows.fetchone() == (0,)  # the answer is only in the -wal file
        before = snapshot(home, skip=(f"{CACHE_FILE}-shm",))
        asked = len(built.server.requests)
        report = dry_run(vault, home, tmp_path)
        assert snapshot(home, skip=(f"{CACHE_FILE}-shm",)) == before
        assert len(built.server.requests) == asked
    finally:
        holder.close()
    estimates = {row["path"]: row for row in report["per_document"]}
    assert set(estimates) == {LONG, new}
    assert (estimates[new]["reason"], estimates[new]["segments"], estimates[new]["cached_segments"]) == ("new", 1, 1)
    assert estimates[new]["tokens_in"] == 0 and report["requests"] == 1


def test_a_read_only_cache_of_a_missing_file_is_empty_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "home" / CACHE_FILE
    cache = ResponseCache(path, read_only=True)
    key = CacheKey("hash", 0, MODEL, "v1")
    assert len(cache) == 0 and cache.get(key, None) is None
    with pytest.raises(ResponseCacheError, match="read-only"):
        cache.put(key, "input", {"entities": []}, 1, 1, 1, 1.0)
    assert not (tmp_path / "home").exists()
    ResponseCache(path).put(key, "input", {"entities": []}, 3, 4, 1, 1.0)
    answer = cache.get(key, "input")
    assert answer is not None and (answer.tokens_in, answer.tokens_out) == (3, 4)
    assert sorted(child.name for child in path.parent.iterdir()) == [CACHE_FILE]
