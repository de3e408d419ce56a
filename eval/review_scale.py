"""Resolution and revision at scale: how long the review assets take on a large built home, and their memory.

    python -m eval.review_scale [--home DIR] [--out DIR]

By default it reuses the 10,000-note home of ``eval.search_latency`` (build that first). It runs, in this
process and in order, what the ``resolution_candidates``, ``resolution_overlay``, ``supersession_candidates``
and ``accepted_supersessions`` assets run, each timed with ``time.perf_counter`` and with the process's peak
RSS after it, then prints the figures and writes ``eval/results/review-scale-YYYY-MM-DD-N.json`` (N: documents).
The home's catalog gains the candidate tables, as a build would; nothing else changes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_HOME = REPOSITORY / "eval" / ".work" / "search-latency" / "home-10000-s7"


def peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run(home_dir: Path) -> dict[str, Any]:
    from assets.partitions import BUCKET_COUNT
    from engramrag.embed.registry import make_embedder
    from engramrag.lifecycle.resolution import refresh_candidates, refresh_overlay
    from engramrag.lifecycle.revision import apply_supersessions, refresh_supersession_candidates
    from engramrag.store import Home
    from engramrag.vault.config import VaultConfig

    home = Home.at(home_dir)
    config = VaultConfig(bucket_count=BUCKET_COUNT)
    embedder = make_embedder(os.environ.get("ENGRAM_EMBEDDER", "hash"))  # the one the home was embedded with
    stages: dict[str, Any] = {}

    def timed(name: str, step):
        started = time.perf_counter()
        outcome = step()
        stages[name] = {"seconds": round(time.perf_counter() - started, 2), "peak_rss_mib": peak_rss_mib()}
        print(f"{name}: {stages[name]['seconds']} s, peak RSS {stages[name]['peak_rss_mib']} MiB", flush=True)
        return outcome

    candidates = timed("resolution_candidates", lambda: refresh_candidates(home, config, embedder))
    overlay, _ = timed("resolution_overlay", lambda: refresh_overlay(home, config))
    proposals, _ = timed("supersession_candidates", lambda: refresh_supersession_candidates(home, config))
    applied = timed("accepted_supersessions", lambda: apply_supersessions(home, config))
    return {
        "stages": stages,
        "candidates": vars(candidates),
        "overlay": {k: v for k, v in vars(overlay).items() if k not in ("blocked", "conflicts")}
        | {"blocked": len(overlay.blocked), "conflicts": len(overlay.conflicts)},
        "supersession": vars(proposals),
        "applied": {k: v for k, v in vars(applied).items() if k != "dormant"},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    parser.add_argument("--out", type=Path, default=REPOSITORY / "eval" / "results")
    args = parser.parse_args(argv)
    if not (args.home / "catalog.duckdb").exists():
        print(f"no built home at {args.home}; run `python -m eval.search_latency --documents 10000` first")
        return 2
    import duckdb

    from eval.musique import machine

    with duckdb.connect(str(args.home / "catalog.duckdb"), read_only=True) as catalog:
        documents = catalog.execute("SELECT count(*) FROM documents WHERE NOT gone").fetchone()[0]
        mentions = catalog.execute("SELECT count(*) FROM entities").fetchone()[0]
    print(f"home {args.home}: {documents:,} documents, {mentions:,} entity mentions")
    result = {
        "benchmark": "review-scale",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "home": str(args.home),
        "documents": documents,
        "entity_mentions": mentions,
        "command": "python -m eval.review_scale",
        "machine": machine(),
        **run(args.home),
    }
    print(json.dumps({k: result[k] for k in ("candidates", "overlay", "supersession", "applied")}, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / f"review-scale-{datetime.now(UTC):%Y-%m-%d}-{documents}.json"
    target.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written: {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
