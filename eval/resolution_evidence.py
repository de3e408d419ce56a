"""The resolution candidates step with and without the last run's evidence sentences, on a built home.

A build quotes evidence sentences again only for the keys whose mention rows or documents changed
(``resolve.evidence.EvidenceFinder``, catalog ``resolution_evidence``). This times
``lifecycle.resolution.refresh_candidates`` in a fresh process per run (as a build runs it: nothing cached in
memory), alternating a run with the stored evidence cleared (every key quoted) and a run that finds it (nothing
changed since, so every key's evidence is reused), and checks both wrote the same candidates. Both runs score every
pair (the stored pairs of ``resolve.scored_pairs`` are not trusted), so that only the evidence differs.

    python -m eval.resolution_evidence HOME [--rounds 2]

HOME is a built home, e.g. one kept by ``python -m eval.build_benchmark --sizes 10000 --keep DIR``. Its
``resolution_candidates`` and ``resolution_evidence`` tables are rewritten (with the same candidates).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from eval.build_benchmark import machine

ONE_RUN = """
import json, sys, time
import duckdb
from engramrag.embed.registry import make_embedder
from engramrag.lifecycle.resolution import refresh_candidates
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.resolve.scored_pairs import META_KEY
home = Home.at(sys.argv[1])
connection = duckdb.connect(str(home.catalog_path))
# Every pair is scored in both modes (without the stored pairs' token), so that only the evidence differs.
connection.execute("DELETE FROM meta WHERE key = ?", [META_KEY])
if sys.argv[2] == "cleared":
    connection.execute("DELETE FROM resolution_evidence")
connection.close()
started = time.perf_counter()
summary = refresh_candidates(home, VaultConfig(bucket_count=int(sys.argv[3])), make_embedder("hash"))
seconds = time.perf_counter() - started
connection = duckdb.connect(str(home.catalog_path), read_only=True)
rows = connection.execute("SELECT * FROM resolution_candidates ORDER BY left_key, right_key").fetchall()
connection.close()
print(json.dumps({"seconds": seconds, "candidates": summary.candidates, "quoted": summary.evidence_quoted,
                  "reused": summary.evidence_reused, "rows": repr(rows)}))
"""


def run(home: Path, mode: str, buckets: int) -> dict:
    done = subprocess.run([sys.executable, "-c", ONE_RUN, str(home), mode, str(buckets)], check=True,
                          capture_output=True, text=True)  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["rows"] = hashlib.sha256(result["rows"].encode()).hexdigest()[:16]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--buckets", type=int, default=16, help="The home's bucket count (ENGRAM_BUCKETS).")
    args = parser.parse_args(argv)
    info = machine()
    print(f"machine: {info['platform']}; {info['cpu_count']} CPUs ({info.get('cpu_model', '?')}); "
          f"Python {info['python']}")
    results = {"cleared": [], "kept": []}
    for _ in range(args.rounds):
        for mode in ("cleared", "kept"):
            result = run(args.home, mode, args.buckets)
            results[mode].append(result)
            print(f"{mode:>8}: {result['seconds']:6.1f} s  {result['candidates']:,} candidates, "
                  f"{result['quoted']:,} keys quoted, {result['reused']:,} reused, rows {result['rows']}")
    same = len({r["rows"] for rs in results.values() for r in rs}) == 1
    cleared = min(r["seconds"] for r in results["cleared"])
    kept = min(r["seconds"] for r in results["kept"])
    print(f"best of {args.rounds}: every key quoted {cleared:.1f} s, evidence reused {kept:.1f} s "
          f"({kept / cleared:.0%}); same candidates: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
