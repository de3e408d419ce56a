"""Model extraction in the lifecycle, against a real OpenAI-compatible server on 127.0.0.1 (tests/llm_server.py):
builds that call it, per-call accounting in ``llm_calls``, failures retried by the next build only, a one-document
edit that costs exactly its segments, `engram cost`, `engram build --dry-run`, a killed build resumed without
paying twice, and documents extracted at once, within a bucket and across buckets."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from engramrag.extract.llm import PROMPT_VERSION, LLMConfig, OpenAIExtractor, ResponseCache
from engramrag.extract.llm.cache import CacheKey
from engramrag.extract.llm.segments import split_segments
from engramrag.lifecycle.extraction import extract_documents
from engramrag.lifecycle.sync import sync_documents
from engramrag.metrics.lifecycle import ModelPrice, read_lifecycle_metrics
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.markdown import parse_document
from pipelines.build import run_build
from pipelines.cli import main as engram
from tests.conftest import build_environment
from tests.llm_server import InFlight, LLMServer, echo_responder, segment_of, server_error

REPOSITORY = Path(__file__).resolve().parents[1]
MODEL = "test-model"
PRICE_IN, PRICE_OUT = 1.5, 6.0  # USD per million tokens
SEGMENT_CHARS = 200
MAX_RETRIES = 2
BROKEN = "notes/broken.md"
LONG = "notes/long.md"

NOTES = {
    "notes/alpha.md": "# Alpha\n\nAlpha Project runs on Dagster and keeps its catalog in DuckDB.\n",
    "notes/beta.md": "# Beta\n\nBeta Team reviews Alpha Project every Monday with Grace Hopper.\n",
    BROKEN: "# Broken\n\nThis note only ever gets a server error from the Model Server.\n",
    LONG: "# Long\n\n" + "".join(
        f"## Section {name}\n\n{name} Service talks to Kafka Broker and writes Parquet Files. " * 2 + "\n\n"
        for name in ("Orion", "Vega", "Lyra", "Draco")
    ),
}


def llm_environment(patch: pytest.MonkeyPatch, url: str, prices: Path, **extra: str) -> None:
    settings = {
        "ENGRAM_LLM_BASE_URL": url,
        "ENGRAM_LLM_MODEL": MODEL,
        "ENGRAM_LLM_API_KEY": "test-key",
        "ENGRAM_LLM_MAX_RETRIES": str(MAX_RETRIES),
        "ENGRAM_LLM_SEGMENT_CHARS": str(SEGMENT_CHARS),
        "ENGRAM_LLM_TIMEOUT_S": "20",
        "ENGRAM_PRICES": str(prices),
        **extra,
    }
    for name, value in settings.items():
        patch.setenv(name, value)


def write_vault(root: Path, notes: dict[str, str]) -> Path:
    for relative, text in notes.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def write_prices(path: Path, model: str = MODEL) -> Path:
    path.write_text(json.dumps({model: {"input": PRICE_IN, "output": PRICE_OUT}}), encoding="utf-8")
    return path


def segment_count(vault: Path, relative: str) -> int:
    document = parse_document((vault / relative).read_bytes(), relative, VaultConfig())
    return len(split_segments(document, SEGMENT_CHARS, 16))


def catalog_rows(home: Home, query: str, parameters: list | None = None) -> list[tuple]:
    with home.reading():
        connection = duckdb.connect(str(home.catalog_path), read_only=True)
        try:
            return connection.execute(query, parameters or []).fetchall()
        finally:
            connection.close()


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = engram(list(argv))
    return code, out.getvalue()


class Responder:
    """The model: a valid extraction of any segment, except that the broken note gets HTTP 500 until healed."""

    def __init__(self) -> None:
        self.broken = True

    def __call__(self, request: dict[str, Any]) -> Any:
        if self.broken and segment_of(request)["document"] == BROKEN:
            return server_error(500)
        return echo_responder(request)


@dataclass
class Build:
    """One build and what the server saw during it."""

    run_id: str
    requests: list[dict[str, Any]]
    usages: list[tuple[int, int]]
    paths: Counter = field(default_factory=Counter)


@dataclass
class Scenario:
    home: Home
    vault: Path
    prices: Path
    server: LLMServer
    dry_before_first: dict[str, Any]
    dry_before_edit: dict[str, Any]
    dry_requests: list[int]
    builds: list[Build]
    long_segments_before: int
    long_segments_after: int


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """Four builds of one small vault through the model server: the first (one note always answered 500), the
    next after the server healed (only the failed note is asked), one with nothing changed, and one after a
    one-document edit. Dry runs before the first build and before the edit."""
    root = tmp_path_factory.mktemp("llm-lifecycle")
    vault = write_vault(root / "vault", NOTES)
    prices = write_prices(root / "prices.json")
    home_dir = root / "home"
    responder = Responder()
    with LLMServer(responder=responder) as server, build_environment(), pytest.MonkeyPatch.context() as patch:
        llm_environment(patch, server.url, prices)
        builds: list[Build] = []
        dry_requests: list[int] = []

        def dry_run() -> dict[str, Any]:
            before = len(server.requests)
            code, out = run_cli("build", "--dry-run", "--json", "--vault", str(vault), "--home", str(home_dir),
                                "--extractor", "openai")
            assert code == 0, out
            dry_requests.append(len(server.requests) - before)
            return json.loads(out)

        def build() -> None:
            before = len(server.requests), len(server.usages)
            outcome = run_build(Home.at(home_dir), vault, extractor="openai")
            assert outcome.success, outcome.errors
            requests = server.requests[before[0]:]
            builds.append(Build(outcome.run_id, requests, server.usages[before[1]:],
                                Counter(segment_of(request)["document"] for request in requests)))

        dry_before_first = dry_run()
        build()  # 1: everything; the broken note fails after its retries
        responder.broken = False
        build()  # 2: only the failed note is asked again
        build()  # 3: nothing changed: no request at all
        long_before = segment_count(vault, LONG)
        with open(vault / LONG, "a", encoding="utf-8") as handle:
            handle.write("\nOrion Service moved to the Helix Cluster last week.\n")
        dry_before_edit = dry_run()
        build()  # 4: exactly the edited note's segments
        yield Scenario(Home.at(home_dir), vault, prices, server, dry_before_first, dry_before_edit, dry_requests,
                       builds, long_before, segment_count(vault, LONG))


def test_the_first_build_extracts_through_the_server_and_isolates_the_failing_note(scenario: Scenario) -> None:
    first = scenario.builds[0]
    assert set(first.paths) == set(NOTES)
    assert first.paths[BROKEN] == MAX_RETRIES + 1  # the client's transport retries, then the failure
    assert first.paths[LONG] == scenario.long_segments_before > 1
    extracted = dict(catalog_rows(scenario.home, "SELECT path, status FROM extraction_runs WHERE run_id = ?",
                                  [first.run_id]))
    assert extracted == {**dict.fromkeys(NOTES, "ok"), BROKEN: "failed"}
    (error,) = catalog_rows(scenario.home, "SELECT error FROM extraction_runs WHERE run_id = ? AND path = ?",
                            [first.run_id, BROKEN])[0]
    assert error.startswith("LLMExtractionFailed: ") and BROKEN in error and "500" in error
    entities = dict(catalog_rows(scenario.home, "SELECT path, count(*) FROM entities e JOIN documents USING (doc_id)"
                                                " GROUP BY path"))
    assert entities["notes/alpha.md"] >= 3  # Alpha, Project, Dagster... as the echo model named them
    statements = catalog_rows(scenario.home, "SELECT DISTINCT s.extractor FROM statements s "
                                             "JOIN documents USING (doc_id) WHERE path = 'notes/alpha.md'")
    assert statements == [(f"openai/{PROMPT_VERSION}/{MODEL}",)]


def test_llm_calls_rows_account_for_every_request_and_the_reported_usage(scenario: Scenario) -> None:
    first = scenario.builds[0]
    calls = pd.DataFrame(
        catalog_rows(scenario.home, "SELECT path, segment, segments, model, tokens_in, tokens_out, requests, cached,"
                                    " status, error FROM llm_calls WHERE run_id = ? ORDER BY path, segment",
                     [first.run_id]),
        columns=["path", "segment", "segments", "model", "tokens_in", "tokens_out", "requests", "cached", "status",
                 "error"],
    )
    assert int(calls["requests"].sum()) == len(first.requests)
    assert calls.groupby("path")["requests"].sum().to_dict() == dict(first.paths)
    assert not calls["cached"].any() and set(calls["model"]) == {MODEL}
    assert (int(calls["tokens_in"].sum()), int(calls["tokens_out"].sum())) == tuple(map(sum, zip(*first.usages,
                                                                                                  strict=True)))
    broken = calls[calls["path"] == BROKEN].iloc[0]
    assert (broken["status"], broken["requests"], broken["tokens_in"]) == ("failed", MAX_RETRIES + 1, 0)
    assert "500" in broken["error"]
    long = calls[calls["path"] == LONG]
    assert long["segment"].tolist() == list(range(scenario.long_segments_before))
    assert set(long["segments"]) == {scenario.long_segments_before}
    runs = dict(catalog_rows(scenario.home, "SELECT path, tokens_in FROM extraction_runs WHERE run_id = ?",
                             [first.run_id]))
    assert runs == calls.groupby("path")["tokens_in"].sum().to_dict()


def test_the_next_build_asks_only_for_the_failed_note_and_an_unchanged_vault_costs_nothing(
    scenario: Scenario,
) -> None:
    second, unchanged = scenario.builds[1], scenario.builds[2]
    assert dict(second.paths) == {BROKEN: 1}
    assert catalog_rows(scenario.home, "SELECT path, status FROM extraction_runs WHERE run_id = ?",
                        [second.run_id]) == [(BROKEN, "ok")]
    failures = read_lifecycle_metrics(scenario.home).failures.set_index("path")
    assert not failures.loc[BROKEN, "still_failing"]
    assert unchanged.requests == []
    assert catalog_rows(scenario.home, "SELECT count(*) FROM llm_calls WHERE run_id = ?", [unchanged.run_id]) == [(0,)]


def test_a_one_document_edit_costs_exactly_its_segments(scenario: Scenario) -> None:
    edit = scenario.builds[3]
    assert dict(edit.paths) == {LONG: scenario.long_segments_after}
    parts = [segment_of(request)["part"] for request in edit.requests]
    assert parts == [f"{index + 1} of {scenario.long_segments_after}" for index in range(scenario.long_segments_after)]
    assert catalog_rows(scenario.home, "SELECT count(*), sum(requests) FROM llm_calls WHERE run_id = ?",
                        [edit.run_id]) == [(scenario.long_segments_after, scenario.long_segments_after)]


def test_cost_equals_the_reported_usage_times_the_prices(scenario: Scenario) -> None:
    metrics = read_lifecycle_metrics(scenario.home, {MODEL: ModelPrice(PRICE_IN, PRICE_OUT)})
    runs = metrics.llm_runs.set_index("run_id")
    for build in scenario.builds:
        if not build.requests:
            assert build.run_id not in runs.index
            continue
        tokens_in = sum(usage[0] for usage in build.usages)
        tokens_out = sum(usage[1] for usage in build.usages)
        row = runs.loc[build.run_id]
        assert (row["tokens_in"], row["tokens_out"]) == (tokens_in, tokens_out)
        assert row["cost_usd"] == pytest.approx((tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1e6, rel=1e-12)
        assert row["requests"] == len(build.requests)


def test_engram_cost_json_reports_runs_documents_and_totals(scenario: Scenario) -> None:
    code, out = run_cli("cost", "--home", str(scenario.home.root), "--json", "--prices", str(scenario.prices))
    assert code == 0
    report = json.loads(out)
    all_usage = [usage for build in scenario.builds for usage in build.usages]
    tokens_in, tokens_out = sum(u[0] for u in all_usage), sum(u[1] for u in all_usage)
    totals = report["totals"]
    assert totals["requests"] == sum(len(build.requests) for build in scenario.builds)
    assert (totals["tokens_in"], totals["tokens_out"]) == (tokens_in, tokens_out)
    assert totals["cost_usd"] == pytest.approx((tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1e6, rel=1e-12)
    assert totals["retries"] == MAX_RETRIES and totals["failed_calls"] == 1
    assert report["unpriced_models"] == []
    first = next(run for run in report["runs"] if run["run_id"] == scenario.builds[0].run_id)
    assert (first["documents"], first["failed_documents"], first["retries"], first["cache_hits"]) == (4, 1, 2, 0)
    assert first["p50_ms"] > 0 and first["p95_ms"] >= first["p50_ms"]
    broken = next(row for row in report["documents"]
                  if row["run_id"] == scenario.builds[0].run_id and row["path"] == BROKEN)
    assert broken["status"] == "failed" and "500" in broken["error"] and broken["cost_usd"] == 0.0

    code, out = run_cli("cost", "--home", str(scenario.home.root), "--json", "--run", scenario.builds[3].run_id,
                        "--prices", str(scenario.prices))
    only = json.loads(out)
    assert code == 0 and [row["path"] for row in only["documents"]] == [LONG]
    assert only["totals"]["requests"] == scenario.long_segments_after


def test_an_unpriced_model_is_named_and_gets_no_cost(scenario: Scenario, tmp_path: Path) -> None:
    other = write_prices(tmp_path / "other.json", model="another-model")
    code, out = run_cli("cost", "--home", str(scenario.home.root), "--json", "--prices", str(other))
    report = json.loads(out)
    assert code == 0 and report["unpriced_models"] == [MODEL]
    assert report["totals"]["cost_usd"] is None
    assert all("no price for model 'test-model'" in run["cost_note"] for run in report["runs"])


def test_dry_runs_call_nothing_and_estimate_the_segments_the_build_uses(scenario: Scenario) -> None:
    assert scenario.dry_requests == [0, 0]
    first = scenario.dry_before_first
    used = catalog_rows(scenario.home, "SELECT count(*) FROM llm_calls WHERE run_id = ?",
                        [scenario.builds[0].run_id])[0][0]
    assert first["documents"] == len(NOTES) and first["segments"] == used
    assert first["cached_segments"] == 0 and first["cost_usd"] > 0
    assert first["cost_usd"] == pytest.approx((first["tokens_in"] * PRICE_IN + first["tokens_out"] * PRICE_OUT) / 1e6)
    edit = scenario.dry_before_edit
    assert [row["path"] for row in edit["per_document"]] == [LONG]
    assert edit["per_document"][0]["reason"] == "changed"
    assert edit["segments"] == edit["requests"] == scenario.long_segments_after


def test_a_dry_run_of_a_new_home_creates_no_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = write_vault(tmp_path / "vault", NOTES)
    home = tmp_path / "home"
    with LLMServer(responder=echo_responder) as server:
        llm_environment(monkeypatch, server.url, write_prices(tmp_path / "prices.json"))
        monkeypatch.setenv("ENGRAM_HOME", "")
        code, out = run_cli("build", "--dry-run", "--vault", str(vault), "--home", str(home), "--extractor", "openai")
        assert server.requests == []
    assert code == 0 and "nothing was called and nothing was written" in out
    assert f"{len(NOTES)} documents would be extracted" in out
    assert not (home / "catalog.duckdb").exists() and not (home / "quads").exists()

    code, out = run_cli("build", "--dry-run", "--json", "--vault", str(vault), "--home", str(home),
                        "--extractor", "rules")
    rules = json.loads(out)
    assert code == 0 and rules["documents"] == len(NOTES)
    assert (rules["segments"], rules["tokens_in"], rules["cost_usd"]) == (0, 0, 0.0)


def test_stored_metrics_tables_hold_the_model_calls(scenario: Scenario) -> None:
    """The metrics asset ran at the end of every build: its llm tables are in the catalog."""
    stored = catalog_rows(scenario.home, "SELECT run_id, requests FROM metrics_llm_runs ORDER BY run")
    assert stored == [(build.run_id, len(build.requests)) for build in scenario.builds if build.requests]
    documents = catalog_rows(scenario.home, "SELECT count(*) FROM metrics_llm_documents")[0][0]
    assert documents == len(NOTES) + 1 + 1  # build 1: four notes; build 2: the broken one; build 4: the long one


def test_costs_page_shows_model_calls(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ENGRAM_HOME", str(scenario.home.root))
    monkeypatch.setenv("ENGRAM_PRICES", str(scenario.prices))
    app = AppTest.from_file(str(REPOSITORY / "dashboards" / "app.py"), default_timeout=60)
    app.switch_page("views/costs.py")
    app.run()
    assert not app.exception
    assert "Model calls" in [header.value for header in app.subheader]
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Requests"] == str(sum(len(build.requests) for build in scenario.builds))
    assert metrics["Retries"] == str(MAX_RETRIES) and metrics["Failed documents"] == "1"
    assert metrics["Model cost"].startswith("$")
    tables = [frame.value for frame in app.dataframe]
    per_document = next(table for table in tables if "why it failed" in table.columns or "error" in table.columns)
    assert BROKEN in per_document["path"].tolist()


# --- resuming a killed build ----------------------------------------------------------------------------------


def test_a_killed_build_resumes_without_asking_again_for_what_was_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`engram build` in a child process is killed (SIGKILL) once the server answered some notes and the cache
    kept them; the next `engram build` asks only for the notes whose answers were not kept. One bucket, so the
    killed build wrote nothing to the catalog: everything it paid for survives only in the response cache."""
    notes = {f"notes/n{index:02d}.md": f"# Note {index}\n\nNote{index} Project works with Team{index} Group.\n"
             for index in range(8)}
    vault = write_vault(tmp_path / "vault", notes)
    home = Home.at(tmp_path / "home")
    log = tmp_path / "builds.log"
    command = [sys.executable, "-m", "pipelines.cli", "build", "--vault", str(vault), "--home", str(home.root),
               "--extractor", "openai", "--json"]
    with LLMServer(responder=echo_responder, latency_s=0.3) as server, build_environment():
        llm_environment(monkeypatch, server.url, write_prices(tmp_path / "prices.json"), ENGRAM_LLM_CONCURRENCY="1")
        environment = {**os.environ, "ENGRAM_HOME": str(home.root), "ENGRAM_BUCKETS": "1",
                       "PYTHONPATH": str(REPOSITORY)}
        with open(log, "ab") as errors:
            child = subprocess.Popen(command, cwd=REPOSITORY, env=environment, stdout=subprocess.DEVNULL,
                                     stderr=errors, start_new_session=True)
            cache = None
            try:
                deadline = time.monotonic() + 240
                while time.monotonic() < deadline and child.poll() is None:
                    if cache is None and (home.root / "llm_cache.sqlite").exists():
                        cache = ResponseCache.for_home(home)
                    if cache is not None and len(cache) >= 3:
                        break
                    time.sleep(0.05)
                assert child.poll() is None, f"the build ended before it was killed: {log.read_text()[-2000:]}"
                os.killpg(child.pid, signal.SIGKILL)
            finally:
                child.wait(timeout=60)
            asked_before_kill = len(server.requests)
            kept = {path for path in notes if _cached(cache, vault, path)}
            assert 3 <= len(kept) < len(notes)

            resumed_build = subprocess.run(command, cwd=REPOSITORY, env=environment, stdout=subprocess.PIPE,
                                           stderr=errors, timeout=600, check=False)
        assert resumed_build.returncode == 0, log.read_text()[-3000:]
        run_id = json.loads(resumed_build.stdout)["run_id"]
        resumed = Counter(segment_of(request)["document"] for request in server.requests[asked_before_kill:])
    assert not kept & set(resumed), f"asked again for answered notes: {sorted(kept & set(resumed))}"
    assert set(resumed) == set(notes) - kept and set(resumed.values()) == {1}
    every = Counter(segment_of(request)["document"] for request in server.requests)
    assert all(count <= 2 for count in every.values())  # only a request in flight at the kill is asked twice
    assert sum(every.values()) <= len(notes) + 1
    assert catalog_rows(home, "SELECT count(*) FROM documents WHERE extracted_hash = body_hash")[0][0] == len(notes)
    assert catalog_rows(home, "SELECT DISTINCT run_id FROM extraction_runs") == [(run_id,)]
    hits = {row[0] for row in catalog_rows(home, "SELECT path FROM llm_calls WHERE run_id = ? AND cached", [run_id])}
    assert hits == kept
    paid = catalog_rows(home, "SELECT path, tokens_in FROM extraction_runs WHERE run_id = ?", [run_id])
    assert {path for path, tokens in paid if tokens == 0} == kept


def _cached(cache: ResponseCache | None, vault: Path, path: str) -> bool:
    document = parse_document((vault / path).read_bytes(), path, VaultConfig())
    return cache is not None and cache.get(CacheKey(document.body_hash, 0, MODEL, PROMPT_VERSION), None) is not None


# --- several documents at once --------------------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_bucket_is_extracted_with_the_extractors_concurrency(tmp_path: Path, concurrency: int) -> None:
    notes = {f"n{index}.md": f"# N{index}\n\nNote{index} Alpha{index} Beta{index}.\n" for index in range(8)}
    vault = write_vault(tmp_path / "vault", notes)
    home = Home.at(tmp_path / "home")
    config = VaultConfig(bucket_count=1)
    model = InFlight(0.25, failing="n3.md")
    with LLMServer(responder=model) as server:
        llm = LLMConfig(base_url=server.url, model=MODEL, max_retries=0, concurrency=concurrency)
        extractor = OpenAIExtractor(llm, ResponseCache.for_home(home))
        sync_documents(home, vault, config, [0], "run-1")
        started = time.perf_counter()
        summary = extract_documents(home, config, [0], extractor, "run-1")
        elapsed = time.perf_counter() - started
    assert model.most == concurrency
    assert summary.extracted == sorted(set(notes) - {"n3.md"})  # path order, whatever finished first
    assert list(summary.failed) == ["n3.md"] and "500" in summary.failed["n3.md"]
    assert summary.model_requests == len(server.requests) == len(notes)
    if concurrency > 1:
        assert elapsed < 8 * 0.25 * 0.75
    rows = catalog_rows(home, "SELECT path, status FROM extraction_runs ORDER BY path")
    assert rows == [(path, "failed" if path == "n3.md" else "ok") for path in sorted(notes)]
    assert catalog_rows(home, "SELECT count(*), sum(requests) FROM llm_calls") == [(len(notes), len(notes))]


def test_documents_of_different_buckets_share_the_extractors_concurrency(tmp_path: Path) -> None:
    """Sixteen buckets with about one document each: a pool per bucket would have one request in flight, one
    pool across the buckets has the configured four, and writes still come out in bucket then path order."""
    notes = {f"n{index:02d}.md": f"# N{index}\n\nNote{index} Gamma{index} Delta{index}.\n" for index in range(12)}
    vault = write_vault(tmp_path / "vault", notes)
    home = Home.at(tmp_path / "home")
    config = VaultConfig(bucket_count=16)
    buckets = list(range(16))
    model = InFlight(0.3, failing="n05.md")
    with LLMServer(responder=model) as server:
        llm = LLMConfig(base_url=server.url, model=MODEL, max_retries=0, concurrency=4)
        extractor = OpenAIExtractor(llm, ResponseCache.for_home(home))
        sync_documents(home, vault, config, buckets, "run-1")
        by_bucket = catalog_rows(home, "SELECT bucket, path FROM documents ORDER BY bucket, path")
        assert max(Counter(bucket for bucket, _ in by_bucket).values()) <= 3  # spread thin over the buckets
        summary = extract_documents(home, config, buckets, extractor, "run-1")
    assert model.most == 4
    assert summary.extracted == [path for _, path in by_bucket if path != "n05.md"]
    assert list(summary.failed) == ["n05.md"]
    assert summary.model_requests == len(server.requests) == len(notes)
    written = catalog_rows(home, "SELECT path, status FROM extraction_runs ORDER BY bucket, path")
    assert written == [(path, "failed" if path == "n05.md" else "ok") for _, path in by_bucket]
    assert catalog_rows(home, "SELECT count(*) FROM documents WHERE extracted_hash = body_hash") == [(11,)]


def test_a_copy_of_the_catalog_without_llm_calls_still_reads(scenario: Scenario, tmp_path: Path) -> None:
    """A catalog from before the table existed (read-only readers cannot add it) gives empty model tables."""
    copy = Home.at(tmp_path / "copy")
    shutil.copyfile(scenario.home.catalog_path, copy.catalog_path)
    connection = duckdb.connect(str(copy.catalog_path))
    try:
        connection.execute("DROP TABLE llm_calls")
    finally:
        connection.close()
    metrics = read_lifecycle_metrics(copy)
    assert metrics.llm_runs.empty and metrics.llm_documents.empty
    assert not metrics.document_costs.empty
