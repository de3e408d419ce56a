"""Lifecycle metrics read from a real home: the example vault built, one document edited, built again."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from engramrag.metrics import (
    Cost,
    ModelPrice,
    cost_of,
    load_prices,
    read_lifecycle_metrics,
)
from engramrag.metrics.lifecycle import run_costs
from engramrag.store import Home
from pipelines.build import run_build
from tests.conftest import build_environment

EXAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "vault"
EDITED = "projects/falcon.md"
STORES = ("catalog", "quads", "lancedb", "ppr")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Home, Path, list[str]]]:
    """Two builds of one home: the whole example vault, then after editing one document and adding a file that
    cannot be read."""
    root = tmp_path_factory.mktemp("metrics")
    vault = root / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    with build_environment():
        home = Home.at(root / "home")
        first = run_build(home, vault)
        assert first.success, first.errors
        with open(vault / EDITED, "a", encoding="utf-8") as handle:
            handle.write("\nFalcon's catalog moved to a new disk after the review.\n")
        (vault / "broken.md").write_bytes(b"# Broken\x00\x01 not text")
        second = run_build(home, vault)
        assert second.success, second.errors
        yield home, vault, [first.run_id, second.run_id]


def markdown_count(vault: Path) -> int:
    return sum(1 for path in vault.rglob("*.md") if path.name != "broken.md")


def test_per_run_rows_show_a_full_build_then_one_document_extracted(built) -> None:
    home, vault, run_ids = built
    runs = read_lifecycle_metrics(home).build_runs
    total = markdown_count(vault)
    assert runs["run_id"].tolist() == run_ids
    assert runs["run"].tolist() == [1, 2]
    first, second = runs.iloc[0], runs.iloc[1]
    assert (first["documents"], first["extracted"], first["unchanged"], first["mode"]) == (total, total, 0, "full")
    assert (second["documents"], second["extracted"], second["unchanged"]) == (total, 1, total - 1)
    assert second["mode"] == "incremental"
    assert (second["failed"], second["deleted"], second["rejected"]) == (0, 0, 1)
    assert first["quads"] > 20 * total and first["statements"] > 5 * total


def test_latency_percentiles_are_numbers_per_run_and_extractor(built) -> None:
    home, vault, run_ids = built
    latency = read_lifecycle_metrics(home).extraction_latency
    assert latency["run_id"].tolist() == run_ids
    assert latency["extractor"].tolist() == ["rules", "rules"]
    assert latency["documents"].tolist() == [markdown_count(vault), 1]
    for row in latency.itertuples():
        assert math.isfinite(row.p50_ms) and math.isfinite(row.p95_ms)
        assert 0 < row.p50_ms <= row.p95_ms
    single = latency.iloc[1]
    assert single["p50_ms"] == pytest.approx(single["p95_ms"]) == pytest.approx(single["total_ms"])


def test_rules_extraction_costs_nothing_and_says_why(built) -> None:
    home, vault, _ = built
    metrics = read_lifecycle_metrics(home, {"gpt-4o-mini": ModelPrice(0.15, 0.6)})
    costs = metrics.document_costs
    assert len(costs) == markdown_count(vault) + 1
    assert (costs["cost_usd"] == 0).all()
    assert set(costs["cost_note"]) == {"no model call"}
    assert (costs.loc[costs["run"] == 2, "path"]).tolist() == [EDITED]
    per_run = metrics.run_costs
    assert per_run["documents"].tolist() == [markdown_count(vault), 1]
    assert per_run["cost_usd"].tolist() == [0.0, 0.0]


def test_rebuild_times_sum_the_extraction_latencies_of_each_run(built) -> None:
    home, _, _ = built
    metrics = read_lifecycle_metrics(home)
    times = metrics.rebuild_times
    assert times["mode"].tolist() == ["full", "incremental"]
    expected = metrics.extraction_latency["total_ms"] / 1000
    assert times["extraction_seconds"].tolist() == pytest.approx(expected.tolist())
    assert times["seconds_per_document"].iloc[1] == pytest.approx(times["extraction_seconds"].iloc[1])


def test_store_sizes_are_positive_and_match_the_home(built) -> None:
    home, _, _ = built
    sizes = read_lifecycle_metrics(home).store_sizes.set_index("store")
    for store in STORES:
        assert sizes.loc[store, "bytes"] > 0
    assert sizes["bytes"].to_dict() == home.size_bytes()
    assert sizes.loc["catalog", "mebibytes"] == pytest.approx(home.catalog_path.stat().st_size / 2**20)


def test_rejected_file_is_listed_with_its_reason(built) -> None:
    home, _, run_ids = built
    failures = read_lifecycle_metrics(home).failures
    assert failures[["kind", "path", "reason", "run_id", "run"]].values.tolist() == [
        ["rejected", "broken.md", "binary", run_ids[1], 2]
    ]
    assert "NUL" in failures["message"].iloc[0]
    assert bool(failures["still_failing"].iloc[0])


def test_tables_bundle_every_table_by_name(built) -> None:
    home, _, _ = built
    tables = read_lifecycle_metrics(home).tables()
    assert list(tables) == ["build_runs", "extraction_latency", "document_costs", "run_costs", "rebuild_times",
                            "store_sizes", "failures", "llm_runs", "llm_documents"]
    assert all(isinstance(frame, pd.DataFrame) for frame in tables.values())
    model_tables = {"llm_runs", "llm_documents"}
    assert all(not frame.empty for name, frame in tables.items() if name not in model_tables)
    assert all(tables[name].empty for name in model_tables)  # rules extraction calls no model


def test_model_prices_and_failed_attempts_on_a_copy_of_the_catalog(built, tmp_path: Path) -> None:
    """A model run recorded in a copy of the real catalog: the priced model gets its exact cost, the unknown one
    None with the reason, and a failure that a later attempt fixed is no longer open."""
    home, _, _ = built
    copy = Home.at(tmp_path / "copy")
    shutil.copyfile(home.catalog_path, copy.catalog_path)
    connection = duckdb.connect(str(copy.catalog_path))
    try:
        doc_id, path, bucket = connection.execute(
            "SELECT doc_id, path, bucket FROM documents WHERE path = ?", [EDITED]
        ).fetchone()
        other_id, other_path, other_bucket = connection.execute(
            "SELECT doc_id, path, bucket FROM documents WHERE path <> ? ORDER BY path LIMIT 1", [EDITED]
        ).fetchone()
        later = connection.execute("SELECT max(finished_at) FROM builds").fetchone()[0] + timedelta(hours=1)
        rows = [
            ("llm-run", doc_id, path, bucket, "failed", "openai", "1", "priced-model", 900.0, 0, 0, 0,
             "TimeoutError: no answer within 60 s", later),
            ("llm-run", doc_id, path, bucket, "ok", "openai", "1", "priced-model", 1200.0, 2_000_000, 500_000, 10,
             None, later + timedelta(seconds=1)),
            ("llm-run", other_id, other_path, other_bucket, "failed", "openai", "1", "mystery-model", 300.0, 1000,
             0, 0, "ValueError: bad JSON", later),
        ]
        columns = ("run_id, doc_id, path, bucket, status, extractor, extractor_version, model, latency_ms, tokens_in, "
                   "tokens_out, quads, error, finished_at")
        connection.executemany(f"INSERT INTO extraction_runs ({columns}) VALUES ({', '.join('?' * 14)})", rows)
    finally:
        connection.close()

    metrics = read_lifecycle_metrics(copy, {"priced-model": ModelPrice(input_per_million=3, output_per_million=12)})
    llm = metrics.document_costs[metrics.document_costs["run_id"] == "llm-run"].sort_values(["path", "tokens_in"])
    assert llm["run"].unique().tolist() == [3]
    priced = llm[llm["model"] == "priced-model"]
    assert priced["cost_usd"].tolist() == pytest.approx([0.0, 2 * 3 + 0.5 * 12])
    unknown = llm[llm["model"] == "mystery-model"].iloc[0]
    assert pd.isna(unknown["cost_usd"])
    assert "no price for model 'mystery-model'" in unknown["cost_note"]
    run = metrics.run_costs.set_index("run_id").loc["llm-run"]
    assert pd.isna(run["cost_usd"]) and "mystery-model" in run["cost_note"]
    assert (run["tokens_in"], run["tokens_out"], run["documents"]) == (2_001_000, 500_000, 3)

    failed = metrics.failures[metrics.failures["kind"] == "extraction failed"].set_index("path")
    assert failed.loc[path, "reason"] == "TimeoutError" and not failed.loc[path, "still_failing"]
    assert failed.loc[other_path, "reason"] == "ValueError" and failed.loc[other_path, "still_failing"]
    assert metrics.failures.iloc[0]["path"] in {other_path, "broken.md"}  # open failures come first
    assert bool(metrics.failures.iloc[0]["still_failing"])


def test_cost_of_never_guesses_a_price() -> None:
    prices = {"m": ModelPrice(1.0, 4.0)}
    assert cost_of(None, 0, 0, prices) == Cost(0.0, "no model call")
    assert cost_of("m", 1_000_000, 250_000, prices).usd == pytest.approx(2.0)
    unknown = cost_of("other", 10, 10, prices)
    assert unknown.usd is None and "no price for model 'other'" in unknown.note
    assert cost_of(None, 5, 0, prices).usd is None


def test_prices_load_from_yaml_and_json_and_reject_half_prices(tmp_path: Path) -> None:
    (tmp_path / "prices.yaml").write_text("gpt-4o-mini:\n  input: 0.15\n  output: 0.6\n", encoding="utf-8")
    (tmp_path / "prices.json").write_text(json.dumps({"m": {"input": 1, "output": 2}}), encoding="utf-8")
    (tmp_path / "half.yaml").write_text("m:\n  input: 1\n", encoding="utf-8")
    assert load_prices(tmp_path / "prices.yaml") == {"gpt-4o-mini": ModelPrice(0.15, 0.6)}
    assert load_prices(tmp_path / "prices.json") == {"m": ModelPrice(1.0, 2.0)}
    with pytest.raises(ValueError, match="needs both 'input' and 'output'"):
        load_prices(tmp_path / "half.yaml")


def test_a_home_without_a_build_has_no_metrics_and_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert read_lifecycle_metrics(Home(missing)) is None
    assert not missing.exists()
    assert read_lifecycle_metrics(Home.at(tmp_path / "empty")) is None


def test_the_metrics_tables_have_their_defined_columns_even_when_empty(built) -> None:
    # Issue 16: the metrics step made each table from its frame, so an empty one (no model calls with the rules
    # extractor) had NULL-typed columns. They are defined in catalog/schema.py; an older table is remade.
    from engramrag.catalog.schema import METRICS_TABLES, metrics_table
    from engramrag.lifecycle.metrics_tables import store_lifecycle_metrics
    from engramrag.vault.config import VaultConfig

    home, _, _ = built

    def shapes() -> dict[str, list[tuple[str, str]]]:
        with home.reading():
            connection = duckdb.connect(str(home.catalog_path), read_only=True)
            try:
                return {
                    name: [tuple(row) for row in connection.execute(
                        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
                        "ORDER BY ordinal_position", [metrics_table(name)]).fetchall()]
                    for name in METRICS_TABLES
                }  # fmt: skip
            finally:
                connection.close()

    assert shapes() == {name: [tuple(c) for c in columns] for name, columns in METRICS_TABLES.items()}
    with home.writing():
        connection = duckdb.connect(str(home.catalog_path))
        try:  # a table as the metrics step made it before: from an empty frame
            connection.execute("DROP TABLE metrics_llm_runs")
            connection.execute("CREATE TABLE metrics_llm_runs AS SELECT NULL AS run, NULL AS model WHERE false")
            connection.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")  # a catalog from before
        finally:
            connection.close()
    counts = store_lifecycle_metrics(home, VaultConfig(bucket_count=16))
    assert counts["llm_runs"] == 0 and counts["build_runs"] == 2
    assert shapes() == {name: [tuple(c) for c in columns] for name, columns in METRICS_TABLES.items()}


def test_run_costs_sum_each_run_and_leave_a_run_with_an_unknown_price_empty() -> None:
    """Pure: the per-run table from document rows, runs in order, a run without a run id kept apart."""
    costs = pd.DataFrame({
        "run": [2, 1, 2, 1, 3],
        "run_id": ["b", "a", "b", "a", None],
        "finished_at": ["t2", "t1", "t2", "t1", "t3"],
        "tokens_in": [10, 1, 30, 2, 0],
        "tokens_out": [1, 0, 3, 0, 0],
        "cost_usd": pd.array([0.25, 0.0, None, 0.0, 0.0], dtype="Float64"),
        "cost_note": pd.array(["m: priced", "no model call", "no price for model 'x'", "no model call", None],
                              dtype="string"),
    })  # fmt: skip
    per_run = run_costs(costs)
    assert per_run["run"].tolist() == [1, 2, 3]
    assert per_run["documents"].tolist() == [2, 2, 1]
    assert per_run["tokens_in"].tolist() == [3, 40, 0] and per_run["tokens_out"].tolist() == [0, 4, 0]
    assert per_run["cost_usd"].iloc[0] == 0.0 and pd.isna(per_run["cost_usd"].iloc[1])
    assert pd.isna(per_run["cost_per_document_usd"].iloc[1]) and per_run["cost_per_document_usd"].iloc[2] == 0.0
    assert per_run["cost_note"].tolist() == ["no model call", "m: priced; no price for model 'x'", ""]
    assert pd.isna(per_run["run_id"].iloc[2])


def test_store_sizes_sum_the_files_under_each_store_without_following_links(tmp_path) -> None:
    home = Home.at(tmp_path / "home")
    (home.lancedb_path / "chunks.lance" / "_versions").mkdir(parents=True)
    (home.lancedb_path / "chunks.lance" / "_versions" / "1.manifest").write_bytes(b"x" * 100)
    (home.lancedb_path / "chunks.lance" / "data.lance").write_bytes(b"y" * 23)
    (home.lancedb_path / "elsewhere").symlink_to(tmp_path)  # a link is not walked into
    home.catalog_path.parent.mkdir(parents=True, exist_ok=True)
    home.catalog_path.write_bytes(b"z" * 7)
    sizes = home.size_bytes()
    assert sizes["lancedb"] == 123 and sizes["catalog"] == 7 and sizes["quads"] == 0
