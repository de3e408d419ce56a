"""LLM extraction cost: how fast the ``openai`` extractor goes against a server of fixed latency, and how many
requests a one-document edit costs.

Model servers are slow per request and fast in parallel, so throughput is set by how many requests are in flight;
and a vault is edited one note at a time, so what an edit costs decides whether model extraction is affordable.
Both are measured through the real lifecycle (``pipelines.build.run_build`` with ``extractor="openai"``) against
the local OpenAI-compatible test server (tests/llm_server.py, answering every segment with ``echo_responder``):

  1. throughput: a synthetic vault of N documents (eval/synthetic_vault.py) is built into a fresh home once per
     concurrency (1, 4, 16 by default; ``ENGRAM_LLM_CONCURRENCY``), so the response cache of an earlier run
     cannot answer, with the server sleeping ``--latency`` seconds before each answer. Reported: wall time of the
     build and of its extraction step (``document_quads``, from the Dagster event log), documents/s and
     requests/s over the extraction step, and the requests the server counted;
  2. edit cost: a vault of ``--edit-documents`` documents is built once (server latency 0), then its largest
     note (the one with the most segments, the hardest case) gets one paragraph appended and the vault is built
     again. The requests the server counts in the second build are compared with that note's segment count
     after the edit (the aim: exactly those segments, nothing for the other notes).

    python -m eval.llm_extraction [--documents 120] [--latency 0.2] [--concurrency 1 4 16]
                                  [--edit-documents 1000] [--work /tmp/engram-llm-extraction]

The first build also pays for importing Dagster and the stores, so compare concurrencies by the extraction step's
time. The pending documents of all buckets share one pool of ``concurrency`` threads, and a document's segments
are asked one after another (later segments carry the earlier ones' entities as hints), so the requests in flight
are at most the concurrency and at most the documents still pending; ``peak_in_flight`` is what the server saw.

The server runs in this process on its own threads (its sleep releases the GIL, so it does not slow the build).
The result goes to ``eval/results/llm-extraction-YYYY-MM-DD.json`` with the machine it ran on; a second run on
the same day replaces it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from assets.partitions import BUCKET_COUNT
from engramrag.store import Home
from eval.build_benchmark import machine
from eval.synthetic_vault import generate_vault
from pipelines.build import run_build
from pipelines.instance import open_instance
from tests.llm_server import InFlight, LLMServer, echo_responder

REPOSITORY = Path(__file__).resolve().parents[1]
MODEL = "bench-model"
EXTRACTION_STEP = "document_quads"
EDIT = "\n\nAdded for the benchmark: Zephyrine reviewed this note with Quillon and agreed to keep it.\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=120, help="Documents of the throughput vault (default 120).")
    parser.add_argument("--latency", type=float, default=0.2, help="Server seconds per answer (default 0.2).")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16], help="Default: 1 4 16.")
    parser.add_argument("--edit-documents", type=int, default=1000,
                        help="Documents of the edit-cost vault (default 1000; 0 skips that part).")
    parser.add_argument("--segment-chars", type=int, default=None,
                        help="ENGRAM_LLM_SEGMENT_CHARS for every build (default: the extractor's 6000, which leaves "
                        "most synthetic notes in one segment; e.g. 800 gives the edited note several).")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", default="/tmp/engram-llm-extraction", help="Scratch folder for vaults and homes.")
    parser.add_argument("--out", default=str(REPOSITORY / "eval" / "results"))
    args = parser.parse_args(argv)
    if args.segment_chars is not None:
        os.environ["ENGRAM_LLM_SEGMENT_CHARS"] = str(args.segment_chars)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    throughput = [throughput_run(work, args.documents, args.seed, args.latency, c) for c in args.concurrency]
    edit = edit_cost(work, args.edit_documents, args.seed) if args.edit_documents > 0 else None
    result = {
        "measured_at": datetime.now(UTC).isoformat(),
        "config": {"documents": args.documents, "latency_s": args.latency, "concurrency": args.concurrency,
                   "edit_documents": args.edit_documents, "seed": args.seed, "model": MODEL,
                   "segment_chars": args.segment_chars, "buckets": BUCKET_COUNT,
                   "responder": "tests.llm_server.echo_responder"},
        "throughput": throughput,
        "edit": edit,
        "machine": machine(),
    }
    out = Path(args.out) / f"llm-extraction-{datetime.now(UTC).date()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    report(result)
    print(f"written to {out}")
    return 0


def throughput_run(work: Path, documents: int, seed: int, latency: float, concurrency: int) -> dict[str, Any]:
    """One build of a fresh vault copy into a fresh home at the given concurrency."""
    vault = work / f"vault-{documents}"
    if not vault.exists():
        generate_vault(vault, documents, seed)
    home = work / f"home-c{concurrency}"
    model = InFlight(latency)
    with LLMServer(responder=model) as server:
        figures = timed_build(home, vault, server, concurrency)
    extraction_s = figures["extraction_s"] or figures["build_s"]
    figures |= {
        "concurrency": concurrency,
        "peak_in_flight": model.most,
        "documents": documents,
        "documents_per_s": round(figures["extracted"] / extraction_s, 2),
        "requests_per_s": round(figures["server_requests"] / extraction_s, 2),
    }
    print(f"concurrency {concurrency:>2}: build {figures['build_s']:.1f} s, extraction {extraction_s:.1f} s, "
          f"{figures['server_requests']} requests", file=sys.stderr)
    return figures


def edit_cost(work: Path, documents: int, seed: int) -> dict[str, Any]:
    """Build a vault, append a paragraph to its note with the most segments, build again; count requests."""
    vault, home = work / f"edit-vault-{documents}", work / "edit-home"
    generate_vault(vault, documents, seed)
    with LLMServer(latency_s=0.0, responder=echo_responder) as server:
        first = timed_build(home, vault, server, concurrency=16)
        target = _most_segmented(home)
        path = vault / target
        path.write_text(path.read_text(encoding="utf-8") + EDIT, encoding="utf-8")
        second = timed_build(home, vault, server, concurrency=16)
        asked = sorted({request_path(r) for r in server.requests[first["server_requests"]:]})
    segments = segment_count(path, target)
    calls = _calls_of_run(home, second["run_id"])
    return {
        "documents": documents,
        "edited": target,
        "segments_after_edit": segments,
        "first_build": first,
        "second_build": second,
        "edit_requests": second["server_requests"],
        "paths_asked": asked,
        "llm_calls_second_build": calls,
        "exactly_the_segments": second["server_requests"] == segments and asked == [target],
    }


def timed_build(home: Path, vault: Path, server: LLMServer, concurrency: int) -> dict[str, Any]:
    """Run one build against ``server`` and return its timings and the requests the server counted during it."""
    os.environ.update({
        "ENGRAM_LLM_BASE_URL": server.url,
        "ENGRAM_LLM_MODEL": MODEL,
        "ENGRAM_LLM_API_KEY": "benchmark",
        "ENGRAM_LLM_CONCURRENCY": str(concurrency),
        "ENGRAM_LLM_TIMEOUT_S": "60",
    })  # fmt: skip
    before = len(server.requests)
    started = time.perf_counter()
    outcome = run_build(Home.at(home), vault, extractor="openai")
    build_s = time.perf_counter() - started
    if not outcome.success:
        raise RuntimeError(f"the build into {home} failed: {outcome.errors}")
    extracted, failed = _extraction_counts(home, outcome.run_id)
    return {
        "run_id": outcome.run_id,
        "build_s": round(build_s, 3),
        "extraction_s": _step_seconds(Home.at(home), outcome.run_id, EXTRACTION_STEP),
        "server_requests": len(server.requests) - before,
        "extracted": extracted,
        "failed": failed,
    }


def _step_seconds(home: Home, run_id: str, step_key: str) -> float | None:
    """Wall time of one step of the run, from its start and success events in the home's Dagster instance."""
    with open_instance(home) as instance:
        stamps: dict[str, float] = {}
        for entry in instance.all_logs(run_id):
            event = entry.dagster_event
            if event is None or entry.step_key != step_key:
                continue
            if event.event_type_value in ("STEP_START", "STEP_SUCCESS"):
                stamps[event.event_type_value] = entry.timestamp
    if "STEP_START" in stamps and "STEP_SUCCESS" in stamps:
        return round(stamps["STEP_SUCCESS"] - stamps["STEP_START"], 3)
    return None


def _catalog(home: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(home / "catalog.duckdb"), read_only=True)


def _extraction_counts(home: Path, run_id: str) -> tuple[int, int]:
    with _catalog(home) as catalog:
        ok, failed = catalog.execute(
            "SELECT count(*) FILTER (status = 'ok'), count(*) FILTER (status <> 'ok') FROM extraction_runs "
            "WHERE run_id = ?", [run_id]
        ).fetchone()
    return int(ok), int(failed)


def _most_segmented(home: Path) -> str:
    with _catalog(home) as catalog:
        return catalog.execute(
            "SELECT path FROM llm_calls GROUP BY path ORDER BY max(segments) DESC, path LIMIT 1"
        ).fetchone()[0]


def _calls_of_run(home: Path, run_id: str) -> dict[str, Any]:
    with _catalog(home) as catalog:
        rows, paid, cached, requests, paths = catalog.execute(
            "SELECT count(*), count(*) FILTER (NOT cached), count(*) FILTER (cached), coalesce(sum(requests), 0), "
            "count(DISTINCT path) FROM llm_calls WHERE run_id = ?", [run_id]
        ).fetchone()
    return {"rows": rows, "paid": paid, "cached": cached, "requests": int(requests), "documents": paths}


def segment_count(path: Path, relative: str) -> int:
    """Segments of the edited note as the extractor splits it, with the settings the build read."""
    from engramrag.extract.llm import LLMConfig
    from engramrag.extract.llm.segments import split_segments
    from engramrag.vault.config import VaultConfig
    from engramrag.vault.markdown import parse_document

    config = LLMConfig.from_environment()
    document = parse_document(path.read_bytes(), relative, VaultConfig(bucket_count=BUCKET_COUNT))
    return len(split_segments(document, config.segment_chars, config.max_segments))


def request_path(request: dict[str, Any]) -> str:
    from tests.llm_server import segment_of

    return str(segment_of(request).get("document"))


def report(result: dict[str, Any]) -> None:
    config = result["config"]
    print(f"throughput: {config['documents']} documents, server latency {config['latency_s']} s per answer")
    print(f"{'conc':>5} {'build s':>8} {'extract s':>10} {'docs/s':>8} {'req/s':>8} {'requests':>9} {'peak':>5} "
          f"{'ok':>5} {'failed':>6}")
    for run in result["throughput"]:
        extraction = f"{run['extraction_s']:.1f}" if run["extraction_s"] is not None else "n/a"
        print(f"{run['concurrency']:>5} {run['build_s']:>8.1f} {extraction:>10} {run['documents_per_s']:>8.2f} "
              f"{run['requests_per_s']:>8.2f} {run['server_requests']:>9} {run['peak_in_flight']:>5} "
              f"{run['extracted']:>5} {run['failed']:>6}")
    edit = result["edit"]
    if edit:
        print(f"edit: {edit['documents']}-document vault, first build {edit['first_build']['build_s']:.1f} s "
              f"({edit['first_build']['server_requests']} requests); edited {edit['edited']} "
              f"({edit['segments_after_edit']} segments)")
        print(f"      second build {edit['second_build']['build_s']:.1f} s: {edit['edit_requests']} requests for "
              f"{edit['paths_asked']}; exactly that document's segments: {edit['exactly_the_segments']}")
    m = result["machine"]
    print(f"machine: {m.get('cpu_model')} × {m.get('cpu_count')}, {m.get('memory_gib')} GiB, "
          f"Python {m.get('python')}, {m.get('platform')}")


if __name__ == "__main__":
    raise SystemExit(main())
