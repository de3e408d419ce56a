"""What the lifecycle cost: per-build counts, extraction latency, tokens and money, store sizes, failures.

Every figure is read from what the lifecycle already records in the catalog (``builds``, ``extraction_runs``,
``llm_calls``, ``deletions``, ``rejected_documents``) and from the files of the home; nothing here is estimated.
Where a figure cannot be known (a model without a price) it is left empty and the row says why, so a chart never
shows a made-up number. Runs are numbered 1, 2, ... in the order they finished, the same numbering in every table, so
the tables can be drawn side by side and joined on ``run``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np
import pandas as pd

from engramrag.catalog.connection import catalog_reader, has_column, has_table
from engramrag.store import Home


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens, as a provider's price list states them."""

    input_per_million: float
    output_per_million: float


Prices = Mapping[str, ModelPrice]


class Cost(NamedTuple):
    """A cost in US dollars, or None when it cannot be known; ``note`` says how it was reached or why not."""

    usd: float | None
    note: str


# Every run any table knows of, numbered by the moment it finished. A run that failed before writing its
# ``builds`` row still appears through the extraction attempts and deletions it recorded.
RUNS = """runs AS (
    SELECT run_id, finished_at, row_number() OVER (ORDER BY finished_at, run_id) AS run
    FROM (
        SELECT run_id, max(finished_at) AS finished_at FROM (
            SELECT run_id, finished_at FROM builds
            UNION ALL SELECT run_id, finished_at FROM extraction_runs
            UNION ALL SELECT run_id, deleted_at FROM deletions
        ) GROUP BY run_id
    )
)"""

# A run that (re-)extracted every live document is a full rebuild; one that touched some is incremental.
MODE = """CASE
    WHEN b.extracted + b.failed = 0 AND b.deleted = 0 THEN 'no change'
    WHEN b.extracted + b.failed > 0 AND b.extracted + b.failed >= b.documents THEN 'full'
    ELSE 'incremental' END"""


def build_runs(catalog: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per finished build: how many live documents it saw, how many it extracted, left unchanged,
    failed, deleted, and the totals after it.

    ``mode`` is derived from the counts rather than from how the build was started: ``full`` when every live
    document was extracted (a first build, a new extractor, or a vault that changed everywhere), ``incremental``
    when only some were, ``no change`` when nothing was extracted or deleted. ``rejected`` and ``documents``
    are the home's totals when the run finished, not what the run itself added.
    """
    return catalog.execute(
        f"""WITH {RUNS}
        SELECT r.run, b.run_id, b.finished_at, b.documents, b.extracted, b.unchanged, b.failed, b.deleted,
               b.rejected, b.quads, b.statements, {MODE} AS mode
        FROM builds b JOIN runs r USING (run_id) ORDER BY r.run"""
    ).df()


def extraction_latency(catalog: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Extraction latency per run and extractor: p50 and p95 (interpolated percentiles), mean and total.

    A document's latency is the wall time of parsing it, running the extractor and building its graphs; it
    excludes writing the quad store and the catalog. Failed attempts count too: a timeout costs the time it took.
    """
    return catalog.execute(
        f"""WITH {RUNS}
        SELECT r.run, e.run_id, r.finished_at, e.extractor, count(*) AS documents,
               count(*) FILTER (e.status = 'failed') AS failed,
               quantile_cont(e.latency_ms, 0.5) AS p50_ms, quantile_cont(e.latency_ms, 0.95) AS p95_ms,
               avg(e.latency_ms) AS mean_ms, sum(e.latency_ms) AS total_ms
        FROM extraction_runs e JOIN runs r ON e.run_id IS NOT DISTINCT FROM r.run_id
        GROUP BY ALL ORDER BY r.run, e.extractor"""
    ).df()


def cost_of(model: str | None, tokens_in: int, tokens_out: int, prices: Prices) -> Cost:
    """The price of one extraction call. An extractor without a model (rules) spends nothing; a model without a
    price in ``prices`` gets no cost at all rather than a guess."""
    if model is None or model == "":
        if tokens_in or tokens_out:
            return Cost(None, "tokens were recorded without a model name, so no price applies")
        return Cost(0.0, "no model call")
    if not tokens_in and not tokens_out:
        return Cost(0.0, f"{model}: no tokens paid (answered from the response cache, or no answer)")
    price = prices.get(model)
    if price is None:
        return Cost(None, f"no price for model {model!r}: add it to the prices")
    usd = (tokens_in * price.input_per_million + tokens_out * price.output_per_million) / 1_000_000
    return Cost(usd, f"{model}: ${price.input_per_million:g} in / ${price.output_per_million:g} out per 1M tokens")


def document_costs(catalog: duckdb.DuckDBPyConnection, prices: Prices | None = None) -> pd.DataFrame:
    """Tokens in and out and the cost in US dollars of every extraction attempt, one row per document and run.

    ``cost_usd`` is empty (NA) where the price is unknown, with the reason in ``cost_note``.
    """
    frame = catalog.execute(
        f"""WITH {RUNS}
        SELECT r.run, e.run_id, r.finished_at, e.path, e.status, e.extractor, e.model, e.tokens_in, e.tokens_out
        FROM extraction_runs e JOIN runs r ON e.run_id IS NOT DISTINCT FROM r.run_id
        ORDER BY r.run, e.path"""
    ).df()
    return _priced(frame, prices)


def run_costs(costs: pd.DataFrame) -> pd.DataFrame:
    """Tokens and cost per run, from :func:`document_costs`. A run's cost is empty when any of its documents'
    costs is unknown: a partial sum would understate it. ``cost_note`` lists the documents' distinct notes."""
    columns = ["run", "run_id", "finished_at", "documents", "tokens_in", "tokens_out", "cost_usd",
               "cost_per_document_usd", "cost_note"]
    if costs.empty:
        return pd.DataFrame({name: [] for name in columns})
    # Grouped as columns: a loop over the groups grew with every build a resident builder made (one group per run).
    keys = ["run", "run_id", "finished_at"]
    grouped = costs.groupby(keys, dropna=False, sort=True)
    frame = grouped.agg(documents=("tokens_in", "size"), tokens_in=("tokens_in", "sum"),
                        tokens_out=("tokens_out", "sum")).reset_index()  # fmt: skip
    group = grouped.ngroup().to_numpy()  # each row's run, numbered as the frame's rows are
    unknown = np.bincount(group, weights=costs["cost_usd"].isna().to_numpy(), minlength=len(frame)) > 0
    total = pd.array(grouped["cost_usd"].sum().to_numpy(dtype=float), dtype="Float64")
    total[unknown] = pd.NA
    frame["cost_usd"] = total
    frame["cost_per_document_usd"] = total / frame["documents"].to_numpy()
    notes = pd.DataFrame({"group": group, "note": costs["cost_note"].to_numpy(dtype=object)}).dropna()
    notes = notes.drop_duplicates().sort_values(["group", "note"])
    joined = notes.groupby("group")["note"].agg("; ".join)
    frame["cost_note"] = joined.reindex(range(len(frame)), fill_value="").tolist()
    frame = frame.astype({"documents": "int64", "tokens_in": "int64", "tokens_out": "int64"})
    return frame[columns]


# The columns of ``llm_calls``, for a catalog written before the table existed (read-only, so it cannot gain it).
LLM_CALL_COLUMNS = {
    "run_id": "VARCHAR", "doc_id": "VARCHAR", "path": "VARCHAR", "bucket": "INTEGER", "segment": "INTEGER",
    "segments": "INTEGER", "model": "VARCHAR", "prompt_version": "VARCHAR", "tokens_in": "INTEGER",
    "tokens_out": "INTEGER", "requests": "INTEGER", "cached": "BOOLEAN", "status": "VARCHAR", "error": "VARCHAR",
    "latency_ms": "DOUBLE", "called_at": "TIMESTAMP",
}

# Per-call figures every aggregate below sums: paid tokens leave out cache hits (their answer was paid for in an
# earlier run, which already counts it), and latency percentiles are over calls that went to the server.
CALL_FIGURES = """count(*) AS calls,
    sum(c.requests)::BIGINT AS requests,
    sum(greatest(c.requests - 1, 0))::BIGINT AS retries,
    count(*) FILTER (c.status = 'failed') AS failed_calls,
    count(*) FILTER (c.cached) AS cache_hits,
    coalesce(sum(c.tokens_in) FILTER (NOT c.cached), 0)::BIGINT AS tokens_in,
    coalesce(sum(c.tokens_out) FILTER (NOT c.cached), 0)::BIGINT AS tokens_out,
    quantile_cont(c.latency_ms, 0.5) FILTER (NOT c.cached) AS p50_ms,
    quantile_cont(c.latency_ms, 0.95) FILTER (NOT c.cached) AS p95_ms,
    coalesce(sum(c.latency_ms), 0) AS latency_ms"""


def _calls_source(catalog: duckdb.DuckDBPyConnection) -> str:
    if has_table(catalog, "llm_calls"):
        return "llm_calls"
    columns = ", ".join(f"NULL::{kind} AS {name}" for name, kind in LLM_CALL_COLUMNS.items())
    return f"(SELECT {columns} WHERE false)"


def _unlocated(catalog: duckdb.DuckDBPyConnection) -> str:
    """The unlocated-quotes column of ``extraction_runs``; 0 in a catalog from before it (read-only readers)."""
    return "unlocated_quotes" if has_column(catalog, "extraction_runs", "unlocated_quotes") else "0"


def llm_documents(catalog: duckdb.DuckDBPyConnection, prices: Prices | None = None) -> pd.DataFrame:
    """Model calls per run and document: segments, calls, HTTP requests and retries, failed calls, cache hits,
    paid tokens in and out, call latency, and the cost in US dollars of the paid tokens.

    ``status`` and ``error`` are the document's extraction outcome in that run (``failed`` with the reason once
    its retries were exhausted). ``cost_usd`` is empty where the model has no price, with the reason in
    ``cost_note``.
    """
    frame = catalog.execute(
        f"""WITH {RUNS}, outcome AS (
            SELECT run_id, doc_id, any_value(status) AS status, any_value(error) AS error,
                   max({_unlocated(catalog)})::INTEGER AS unlocated_quotes
            FROM extraction_runs GROUP BY ALL
        )
        SELECT r.run, c.run_id, r.finished_at, c.path, c.model, c.prompt_version, o.status, o.error,
               coalesce(o.unlocated_quotes, 0) AS unlocated_quotes, max(c.segments) AS segments, {CALL_FIGURES}
        FROM {_calls_source(catalog)} c JOIN runs r ON c.run_id IS NOT DISTINCT FROM r.run_id
        LEFT JOIN outcome o ON c.run_id IS NOT DISTINCT FROM o.run_id AND c.doc_id = o.doc_id
        GROUP BY ALL ORDER BY r.run, c.path, c.model"""
    ).df()
    return _priced(frame, prices)


def llm_runs(catalog: duckdb.DuckDBPyConnection, documents: pd.DataFrame) -> pd.DataFrame:
    """Model calls per run and model: documents (and how many failed), calls, requests, retries, failed calls,
    cache hits, paid tokens, call latency p50/p95 (over the calls that went to the server) and the cost, summed
    from ``documents`` (:func:`llm_documents`). A run's cost is empty when any of its documents' costs is
    unknown: a partial sum would understate it."""
    frame = catalog.execute(
        f"""WITH {RUNS}, outcome AS (
            SELECT run_id, doc_id, bool_or(status = 'failed') AS failed,
                   max({_unlocated(catalog)})::INTEGER AS unlocated_quotes
            FROM extraction_runs GROUP BY ALL
        ), unlocated AS (
            SELECT run_id, sum(unlocated_quotes)::BIGINT AS unlocated_quotes FROM outcome GROUP BY ALL
        )
        SELECT r.run, c.run_id, r.finished_at, c.model, count(DISTINCT c.doc_id) AS documents,
               count(DISTINCT c.doc_id) FILTER (o.failed) AS failed_documents,
               coalesce(any_value(u.unlocated_quotes), 0)::BIGINT AS unlocated_quotes, {CALL_FIGURES}
        FROM {_calls_source(catalog)} c JOIN runs r ON c.run_id IS NOT DISTINCT FROM r.run_id
        LEFT JOIN outcome o ON c.run_id IS NOT DISTINCT FROM o.run_id AND c.doc_id = o.doc_id
        LEFT JOIN unlocated u ON c.run_id IS NOT DISTINCT FROM u.run_id
        GROUP BY ALL ORDER BY r.run, c.model"""
    ).df()
    totals, notes = [], []
    for run_id, model in zip(frame["run_id"], frame["model"], strict=True):
        group = documents[(documents["run_id"] == run_id) & _same(documents["model"], model)]
        known = not group.empty and not group["cost_usd"].isna().any()
        totals.append(float(group["cost_usd"].sum()) if known else None)
        # A document that paid nothing (cache hit, no answer) adds nothing to how the run's cost was reached.
        paid = group[(group["tokens_in"] + group["tokens_out"]) > 0]
        notes.append("; ".join(sorted(set((paid if not paid.empty else group)["cost_note"].dropna()))))
    frame["cost_usd"] = pd.array(totals, dtype="Float64")
    frame["cost_per_document_usd"] = frame["cost_usd"] / frame["documents"].where(frame["documents"] > 0)
    frame["cost_note"] = pd.array(notes, dtype="string")
    return frame


def _same(column: pd.Series, value: object) -> pd.Series:
    return column.isna() if pd.isna(value) else column == value


def _priced(frame: pd.DataFrame, prices: Prices | None) -> pd.DataFrame:
    """``frame`` with ``cost_usd`` (NA where the price is unknown) and ``cost_note`` from its model and token
    columns: one pricing rule for every table that shows a cost, so per-document and per-call costs agree."""
    # Priced once per distinct (model, tokens): a rules-only vault is one row per document of (none, 0, 0).
    known: dict[tuple, Cost] = {}
    costs = []
    for model, tokens_in, tokens_out in zip(frame["model"], frame["tokens_in"], frame["tokens_out"], strict=True):
        model = model if isinstance(model, str) else None
        cost = known.get(call := (model, tokens_in, tokens_out))
        if cost is None:
            cost = known[call] = cost_of(model, int(tokens_in), int(tokens_out), prices or {})
        costs.append(cost)
    frame["cost_usd"] = pd.array([cost.usd for cost in costs], dtype="Float64")
    frame["cost_note"] = pd.array([cost.note for cost in costs], dtype="string")
    return frame


def rebuild_times(catalog: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Extraction time per build, to compare incremental runs with full rebuilds.

    What is measured: the sum of the per-document extraction latencies of the run (see
    :func:`extraction_latency`), in seconds, failed attempts included, and the latencies of the extracted
    documents per extracted document (empty when the run extracted none: failures are not a document's cost
    of extraction, and a run of only failures has no such figure). It is not the run's wall
    time: syncing the vault, writing the stores, embedding and rebuilding the retrieval index are not included,
    because the catalog does not record when a run started.
    """
    return catalog.execute(
        f"""WITH {RUNS}, spent AS (
            SELECT run_id, sum(latency_ms) AS latency_ms,
                   sum(latency_ms) FILTER (status <> 'failed') AS extracted_ms
            FROM extraction_runs GROUP BY run_id
        )
        SELECT r.run, b.run_id, b.finished_at, {MODE} AS mode, b.extracted, b.failed,
               coalesce(s.latency_ms, 0) / 1000.0 AS extraction_seconds,
               s.extracted_ms / 1000.0 / nullif(b.extracted, 0) AS seconds_per_document
        FROM builds b JOIN runs r USING (run_id) LEFT JOIN spent s USING (run_id)
        ORDER BY r.run"""
    ).df()


def store_sizes(home: Home) -> pd.DataFrame:
    """The size on disk of each store of the home now (catalog, quads, LanceDB, PPR index, decisions)."""
    sizes = home.size_bytes()
    return pd.DataFrame({
        "store": list(sizes),
        "bytes": [int(size) for size in sizes.values()],
        "mebibytes": [size / 2**20 for size in sizes.values()],
    })


def failures(catalog: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Documents that failed extraction (the latest failure of each) and files the vault sync rejected.

    ``reason`` is the exception type for a failed extraction and the rejection code for a rejected file;
    ``message`` is the full error. ``still_failing`` is false once a later attempt succeeded or the document
    is gone; a rejected file stays rejected until it is fixed or removed, when the sync drops its row.
    """
    return catalog.execute(
        f"""WITH {RUNS}, latest AS (
            SELECT doc_id, status FROM extraction_runs
            QUALIFY row_number() OVER (PARTITION BY doc_id ORDER BY finished_at DESC) = 1
        ), failed AS (
            SELECT * FROM extraction_runs WHERE status = 'failed'
            QUALIFY row_number() OVER (PARTITION BY doc_id ORDER BY finished_at DESC) = 1
        )
        SELECT 'extraction failed' AS kind, f.path, split_part(coalesce(f.error, ''), ':', 1) AS reason,
               f.error AS message, f.run_id, r.run, f.finished_at AS occurred_at,
               (l.status = 'failed' AND d.doc_id IS NOT NULL AND NOT d.gone) AS still_failing
        FROM failed f JOIN latest l USING (doc_id)
        LEFT JOIN documents d USING (doc_id)
        LEFT JOIN runs r ON f.run_id IS NOT DISTINCT FROM r.run_id
        UNION ALL
        SELECT 'rejected', j.path, j.reason, j.message, j.run_id, r.run, j.detected_at, TRUE
        FROM rejected_documents j LEFT JOIN runs r ON j.run_id IS NOT DISTINCT FROM r.run_id
        ORDER BY still_failing DESC, occurred_at DESC, path"""
    ).df()


@dataclass(frozen=True)
class LifecycleMetrics:
    """Every lifecycle table of one home, read in one pass under the catalog's shared lock."""

    build_runs: pd.DataFrame
    extraction_latency: pd.DataFrame
    document_costs: pd.DataFrame
    run_costs: pd.DataFrame
    rebuild_times: pd.DataFrame
    store_sizes: pd.DataFrame
    failures: pd.DataFrame
    llm_runs: pd.DataFrame
    llm_documents: pd.DataFrame

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by name, in a fixed order: what the dashboard draws and an asset stores."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


def read_lifecycle_metrics(home: Home, prices: Prices | None = None) -> LifecycleMetrics | None:
    """All lifecycle tables of ``home``, or None when nothing was built there yet.

    Waits while a build holds the stores (see ``catalog_reader``) and raises ``StoreBusy`` past its timeout.
    A home folder that does not exist counts as not built and is not created.
    """
    if not home.catalog_path.exists():
        return None
    with catalog_reader(home) as catalog:
        if catalog is None:
            return None
        costs = document_costs(catalog, prices)
        calls = llm_documents(catalog, prices)
        return LifecycleMetrics(
            build_runs=build_runs(catalog),
            extraction_latency=extraction_latency(catalog),
            document_costs=costs,
            run_costs=run_costs(costs),
            rebuild_times=rebuild_times(catalog),
            store_sizes=store_sizes(home),
            failures=failures(catalog),
            llm_runs=llm_runs(catalog, calls),
            llm_documents=calls,
        )


def load_prices(path: str | Path) -> dict[str, ModelPrice]:
    """Model prices from a JSON or YAML file shaped ``{model: {input: USD per 1M, output: USD per 1M}}``.

    Prices change and differ by provider, so they come from the operator, never from a table in the code.
    """
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix.lower() == ".json":
        raw = json.loads(text)
    else:
        import yaml

        raw = yaml.safe_load(text) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping of model name to {{input: ..., output: ...}}")
    prices = {}
    for model, entry in raw.items():
        if not isinstance(entry, dict) or not {"input", "output"} <= set(entry):
            raise ValueError(f"{path}: the price of {model!r} needs both 'input' and 'output' (USD per 1M tokens)")
        prices[str(model)] = ModelPrice(float(entry["input"]), float(entry["output"]))
    return prices
