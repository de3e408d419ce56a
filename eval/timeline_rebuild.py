"""The timeline step on a built home: this source tree reading every note again and keeping what each note says
alone from the last run, beside another source tree (a snapshot of an earlier commit).

Times ``lifecycle.timeline.refresh_timeline`` in a fresh process per run (as a build runs it, nothing cached in
memory), in rounds of: each tree (the baseline, when given, then this one) with ``derive_all`` (every note read
and derived again, as the first run or the consistency pass does) and as an edit's build runs it (the notes' facts
kept from the run before; a tree from before the kept facts reads every note both times). After each run the
step's tables (``property_values``, ``document_supersessions``, ``timeline_quads``) are copied aside; this tree's
runs must all give the same tables, or the command exits 1. The rows a baseline run gives differently are counted
and shown (an older tree may order or break ties otherwise).

    git worktree add /tmp/baseline <commit>
    python -m eval.timeline_rebuild HOME [--baseline /tmp/baseline] [--rounds 2]

HOME is a built home, e.g. one kept by ``python -m eval.build_benchmark --sizes 10000 --keep DIR``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

import duckdb

from eval.build_benchmark import REPOSITORY, machine, parse_json_output, run_measured
from eval.index_rebuild import kept_home_arguments

TABLES = ("property_values", "document_supersessions", "timeline_quads")

ONE_RUN = """
import inspect, json, sys, time
from pathlib import Path
import duckdb
from engramrag.lifecycle.timeline import refresh_timeline
from engramrag.store import Home
from engramrag.vault.config import VaultConfig, configured_bucket_count
home, copies, derive_all = Home(Path(sys.argv[1])), Path(sys.argv[2]), sys.argv[3] == "1"
options = {"derive_all": True} if derive_all else {}
if options and "derive_all" not in inspect.signature(refresh_timeline).parameters:
    options = {}  # a tree from before the kept facts reads every note anyway
started = time.perf_counter()
summary = refresh_timeline(home, VaultConfig(bucket_count=configured_bucket_count()), **options)
seconds = time.perf_counter() - started
with duckdb.connect(str(home.catalog_path), read_only=True) as catalog:
    for table in sys.argv[4:]:
        catalog.execute(f"COPY (SELECT * FROM {table}) TO '{copies / table}.parquet' (FORMAT parquet)")
print(json.dumps({"seconds": seconds, "values": summary.values, "pairs": summary.declared + summary.proposed,
                  "notes_derived": getattr(summary, "notes_derived", None),
                  "notes_kept": getattr(summary, "notes_kept", None)}))
"""


def measured_run(tree: Path, home: Path, copies: Path, derive_all: bool) -> dict[str, Any]:
    """One run of the step with ``tree`` first on the path: wall and peak memory of that process alone."""
    copies.mkdir(parents=True)
    command = [sys.executable, "-c", ONE_RUN, str(home), str(copies), "1" if derive_all else "0", *TABLES]
    measured = run_measured(command, copies / "run", cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)})
    if measured["exit_code"] != 0:
        raise RuntimeError(f"the timeline with {tree} failed: {measured['stderr'][-2000:]}")
    result = parse_json_output(measured["stdout"]) or {}
    return {**result, "wall_s": measured["wall_s"], "peak_rss_mib": measured["peak_rss_mib"]}


def rows_differing(before: Path, after: Path) -> dict[str, int]:
    """Per table, the rows in one copy and not the other (both ways), where there are any."""
    found = {}
    for table in TABLES:
        a, b = f"'{before / table}.parquet'", f"'{after / table}.parquet'"
        count = duckdb.sql(
            f"SELECT (SELECT count(*) FROM (SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})) + "
            f"(SELECT count(*) FROM (SELECT * FROM {b} EXCEPT ALL SELECT * FROM {a}))"
        ).fetchall()[0][0]
        if count:
            found[table] = int(count)
    return found


def main(argv: list[str] | None = None) -> int:
    args = kept_home_arguments(__doc__.split("\n\n")[0], argv)
    info = machine()
    print(f"machine: {info['platform']}; {info['cpu_count']} CPUs ({info.get('cpu_model', '?')}); "
          f"Python {info['python']}")
    trees = [("baseline", args.baseline)] if args.baseline else []
    trees.append(("this tree", REPOSITORY))
    kinds = [(f"{name}, {mode}", tree, derive_all) for name, tree in trees
             for mode, derive_all in (("every note", True), ("kept notes", False))]  # fmt: skip
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        copied: list[Path] = []
        for round_number in range(args.rounds):
            for name, tree, derive_all in kinds:
                copies = Path(scratch) / f"{round_number}-{name.replace(' ', '-')}"
                runs.append({"tree": name, "path": str(tree.resolve()),
                             **measured_run(tree.resolve(), args.home, copies, derive_all)})  # fmt: skip
                copied.append(copies)
                print(f"  round {round_number + 1}, {name}: {runs[-1]['seconds']:.2f} s", flush=True)
        reference = next(c for run, c in zip(runs, copied, strict=True) if not run["tree"].startswith("baseline"))
        for run, copies in zip(runs, copied, strict=True):
            baseline = run["tree"].startswith("baseline")
            key = "rows_differing_from_this_tree" if baseline else "differs_from_this_tree"
            run[key] = rows_differing(reference, copies)
    for run in runs:
        compared = run.get("differs_from_this_tree")
        verdict = (f"rows differing from this tree: {run.get('rows_differing_from_this_tree') or 'none'}"
                   if run["tree"].startswith("baseline") else
                   "same tables as this tree's first run" if not compared else f"DIFFERS: {compared}")  # fmt: skip
        notes = "" if run.get("notes_derived") is None else (
            f"; notes derived {run['notes_derived']:,}, kept {run['notes_kept']:,}"
        )
        print(f"{run['tree']:>24}: {run['seconds']:7.2f} s in the step, {run['wall_s']:7.2f} s wall, peak "
              f"{run['peak_rss_mib']:,.0f} MiB{notes}; {verdict}")
    best = {name: min(r["seconds"] for r in runs if r["tree"] == name) for name, _, _ in kinds}
    print("best: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in best.items()))
    args.out.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(args.home / "catalog.duckdb"), read_only=True) as catalog:
        notes = catalog.execute("SELECT count(*) FROM documents WHERE NOT gone").fetchone()[0]
    target = args.out / f"timeline-rebuild-{date.today().isoformat()}-{notes}.json"
    target.write_text(json.dumps({"benchmark": "timeline_rebuild", "home": str(args.home), "notes": notes,
                                  "machine": info, "runs": runs, "best_s": best}, indent=2))  # fmt: skip
    print(f"wrote {target}")
    return 0 if all(not r.get("differs_from_this_tree") for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
