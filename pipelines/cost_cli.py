"""`engram cost` and `engram build --dry-run`: what model extraction cost, and what the next build would cost.

Both only read: the cost report reads the catalog's ``llm_calls`` through ``engramrag.metrics.lifecycle`` (the
same figures the dashboard draws), and the dry run asks the extractor for estimates, which never call the model.
Prices come from the file named by ENGRAM_PRICES (or ``--prices``); a model without a price is named, never
guessed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engramrag.store import Home
from pipelines.cli_options import home_option as _home

if TYPE_CHECKING:  # pandas and the metrics load only when a command runs, not for every `engram` call
    import pandas as pd

    from engramrag.metrics.lifecycle import Prices

PRICES_ENV = "ENGRAM_PRICES"  # as engramrag.lifecycle.metrics_tables and the dashboard read it

RUN_COLUMNS = ["run", "run_id", "finished_at", "model", "documents", "failed_documents", "calls", "requests",
               "retries", "failed_calls", "cache_hits", "tokens_in", "tokens_out", "p50_ms", "p95_ms", "cost_usd",
               "cost_note", "unlocated_quotes"]
DOCUMENT_COLUMNS = ["run", "run_id", "path", "model", "status", "segments", "calls", "requests", "retries",
                    "failed_calls", "cache_hits", "tokens_in", "tokens_out", "latency_ms", "cost_usd", "cost_note",
                    "error", "unlocated_quotes"]


def add_commands(commands: Any) -> None:
    """Register `engram cost` on the top-level subparsers."""
    cost = commands.add_parser(
        "cost", help="Model calls per run and per document: tokens, cost, latency p50/p95, retries, failures."
    )
    _home(cost)
    cost.add_argument("--run", help="Only this run: its run id, or its number (1 is the first run).")
    prices_option(cost)
    cost.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    cost.set_defaults(handler=cost_report)


def prices_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prices", default=os.environ.get(PRICES_ENV),
        help=f"Prices file, YAML or JSON: model: {{input: USD per 1M tokens, output: ...}} (default: {PRICES_ENV}).",
    )


def cost_report(args: argparse.Namespace) -> int:
    """Print what the model calls of a home cost, per run and per document."""
    from engramrag.metrics.lifecycle import read_lifecycle_metrics

    home = Home(Path(args.home).expanduser().resolve())  # Home.at would create a home that was never built
    prices = _prices(args.prices)
    metrics = read_lifecycle_metrics(home, prices) if home.root.is_dir() else None
    if metrics is None:
        print(f"engram: nothing is built in {home.root}; run `engram build --vault DIR --home {args.home}`",
              file=sys.stderr)
        return 1
    runs, documents = metrics.llm_runs, metrics.llm_documents
    if args.run:
        runs, documents = _only_run(runs, args.run), _only_run(documents, args.run)
        if runs.empty and not _known_run(metrics.build_runs, args.run):
            print(f"engram: no run {args.run!r} in {home.root}; `engram cost --home {args.home}` lists them",
                  file=sys.stderr)
            return 1
    report = {
        "home": str(home.root),
        "prices_file": args.prices or None,
        "unpriced_models": _unpriced(runs, prices),
        "totals": _totals(runs),
        "runs": _records(runs, RUN_COLUMNS),
        "documents": _records(documents, DOCUMENT_COLUMNS),
    }
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    else:
        _print_report(report, metrics.build_runs)
    return 0


def dry_run(args: argparse.Namespace) -> int:
    """`engram build --dry-run`: the documents the build would extract and their estimated tokens and cost."""
    if not args.vault:
        print("engram: pass --vault DIR (or set ENGRAM_VAULT).", file=sys.stderr)
        return 2
    from engramrag.extract.registry import make_extractor
    from engramrag.lifecycle.estimate import estimate_build
    from engramrag.vault.config import VaultConfig, configured_bucket_count

    home = Home(Path(args.home).expanduser().resolve())  # Home.at would create the folder of a new home
    vault = Path(args.vault).expanduser().resolve()
    extractor = make_extractor(args.extractor, home=home, read_only=True)
    config = VaultConfig(bucket_count=configured_bucket_count())
    estimate = estimate_build(home, vault, config, extractor, _prices(os.environ.get(PRICES_ENV)), full=args.full)
    figures = estimate.to_json()
    if args.json:
        print(json.dumps({"dry_run": True, **figures}, indent=2, ensure_ascii=False))
        return 0
    cost = "unknown" if estimate.cost.usd is None else f"${estimate.cost.usd:,.4f}"
    print(f"dry run ({estimate.extractor}): {figures['documents']} documents would be extracted "
          f"({estimate.unchanged} unchanged, {len(estimate.rejected)} rejected) in {len(estimate.buckets)} buckets")
    print(f"  segments: {estimate.segments} ({estimate.cached_segments} answered by the response cache, "
          f"{figures['requests']} requests)")
    print(f"  tokens to pay (estimated): {estimate.tokens_in:,} in, {estimate.tokens_out:,} out")
    print(f"  cost (estimated): {cost}  [{estimate.cost.note}]")
    for document in estimate.documents:
        print(f"    {document.path} ({document.reason}): {document.segments} segments, "
              f"{document.cached_segments} cached, ~{document.tokens_in:,} in / ~{document.tokens_out:,} out")
    print("nothing was called and nothing was written")
    return 0


def _prices(path: str | None) -> Prices:
    from engramrag.metrics.lifecycle import load_prices

    return load_prices(path) if path else {}


def _only_run(frame: pd.DataFrame, wanted: str) -> pd.DataFrame:
    by_number = frame["run"].astype(str) == wanted.lstrip("#")
    return frame[(frame["run_id"] == wanted) | by_number]


def _known_run(builds: pd.DataFrame, wanted: str) -> bool:
    return bool(((builds["run_id"] == wanted) | (builds["run"].astype(str) == wanted.lstrip("#"))).any())


def _unpriced(runs: pd.DataFrame, prices: Prices) -> list[str]:
    paid = runs[(runs["tokens_in"] + runs["tokens_out"]) > 0]
    return sorted({model for model in paid["model"].dropna() if model not in prices})


def _totals(runs: pd.DataFrame) -> dict[str, Any]:
    counts = {name: int(runs[name].sum()) for name in ("documents", "failed_documents", "calls", "requests",
                                                       "retries", "failed_calls", "cache_hits", "tokens_in",
                                                       "tokens_out", "unlocated_quotes")}
    known = not runs["cost_usd"].isna().any()
    return {"runs": int(runs["run_id"].nunique()), **counts,
            "cost_usd": float(runs["cost_usd"].sum()) if known else None}


def _records(frame: pd.DataFrame, columns: list[str]) -> list[dict[str, Any]]:
    return [{name: _plain(value) for name, value in row.items()} for row in frame[columns].to_dict("records")]


def _plain(value: Any) -> Any:
    """A JSON value: NA and NaN become null, numpy numbers plain numbers, timestamps ISO text."""
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if hasattr(value, "item"):
        return value.item()
    return value


def _print_report(report: dict[str, Any], builds: pd.DataFrame) -> None:
    if not report["runs"]:
        extracted = int(builds["extracted"].sum()) if not builds.empty else 0
        print(f"no model calls recorded in {report['home']}: the {extracted} extractions so far called no model "
              "(cost $0). Build with --extractor openai to extract with a model.")
        return
    for run in report["runs"]:
        print(f"run #{run['run']} {run['run_id']} ({run['finished_at']}), model {run['model']}: "
              f"{run['documents']} documents ({run['failed_documents']} failed), {run['calls']} calls, "
              f"{run['requests']} requests ({run['retries']} retries, {run['failed_calls']} failed calls, "
              f"{run['cache_hits']} cache hits)")
        print(f"    tokens {run['tokens_in']:,} in / {run['tokens_out']:,} out; latency p50 {_ms(run['p50_ms'])} "
              f"p95 {_ms(run['p95_ms'])}; cost {_usd(run['cost_usd'])}  [{run['cost_note']}]")
        if run["unlocated_quotes"]:
            print(f"    {run['unlocated_quotes']} quotes not found verbatim in their documents: those items were "
                  "kept without a span")
    print("per document:")
    for row in report["documents"]:
        failure = f"  FAILED: {row['error']}" if row["status"] == "failed" else ""
        if row["unlocated_quotes"]:
            failure = f", {row['unlocated_quotes']} quotes not found in the text{failure}"
        print(f"  #{row['run']} {row['path']}: {row['segments']} segments, {row['requests']} requests "
              f"({row['retries']} retries, {row['cache_hits']} cache hits), {row['tokens_in']:,} in / "
              f"{row['tokens_out']:,} out, {_usd(row['cost_usd'])}{failure}")
    totals = report["totals"]
    print(f"total: {totals['requests']} requests, {totals['tokens_in']:,} tokens in, {totals['tokens_out']:,} out, "
          f"cost {_usd(totals['cost_usd'])}")
    if report["unpriced_models"]:
        where = report["prices_file"] or f"a prices file named by {PRICES_ENV}"
        print(f"no price for {', '.join(report['unpriced_models'])}: add it to {where} "
              "(model: {input: USD per 1M tokens, output: USD per 1M tokens})", file=sys.stderr)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.6f}"
