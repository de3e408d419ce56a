"""The retrieval index step on a built home, this source tree beside another (a snapshot of an earlier commit).

Times ``retrieve.index_build.build_retrieval_index(force=True)`` in a fresh process per run (as a build runs it:
nothing cached in memory; the import of LanceDB the step makes is included), alternating the trees, and compares
what each run published with what the run before it published: every table of ``index.duckdb`` (rows in order),
the graph, the label vectors and neighbour lists and the whole-note BM25's arrays (by value) and files. A change
meant to be faster only passes when every run's index equals the one before it.

    git worktree add /tmp/baseline <commit>
    python -m eval.index_rebuild HOME --baseline /tmp/baseline [--rounds 2] [--resident 6]

``--resident N``: each run rebuilds N times in its process, as ``engram watch`` builds again and again (the collector
off, as in a build), and its time is the median of the rebuilds after the second: what an edit's index step costs a
resident builder, its kept rows and lists in memory.

HOME is a built home, e.g. one kept by ``python -m eval.build_benchmark --sizes 10000 --keep DIR``; each run
publishes a new index version in it (the step keeps the two latest).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from eval.build_benchmark import REPOSITORY, machine, parse_json_output, run_measured

ONE_RUN = """
import gc, json, statistics, sys, time
from pathlib import Path
from engramrag.embed.registry import make_embedder
from engramrag.retrieve.index_build import build_retrieval_index
from engramrag.store import Home
from engramrag.vault.config import VaultConfig, configured_bucket_count
repeats = int(sys.argv[2])
if repeats > 1:
    gc.disable()  # as a resident builder builds (pipelines.build.collector_off)
each = []
for _ in range(repeats):
    started = time.perf_counter()
    summary = build_retrieval_index(Home(Path(sys.argv[1])), VaultConfig(bucket_count=configured_bucket_count()),
                                    make_embedder(), force=True)
    each.append(time.perf_counter() - started)
print(json.dumps({"seconds": statistics.median(each[2:] or each), "each_s": each, "version": summary.version,
                  "edges": summary.edges, "passages": summary.passages}))
"""

COMPARE = """
import json, sys
from pathlib import Path
import duckdb, numpy as np
before, after = Path(sys.argv[1]), Path(sys.argv[2])
different = []
# The rows search reads behind the edges, by value: a table of index.duckdb before format 13, a file since.
EDGE_STATEMENTS = ("SELECT src::BIGINT, dst::BIGINT, doc_node::BIGINT, doc_id::VARCHAR, statement_id, "
                   "subject::VARCHAR, predicate::VARCHAR, label::VARCHAR, object::VARCHAR, role::VARCHAR, "
                   "line_start::BIGINT, line_end::BIGINT FROM {} WHERE src <> dst")
def edge_statements(folder, db):
    if (folder / "edge_statements.arrow").exists():
        import pyarrow as pa, pyarrow.ipc as ipc
        rows = ipc.open_file(pa.memory_map(str(folder / "edge_statements.arrow"))).read_all()
        return duckdb.sql(EDGE_STATEMENTS.format("rows")).to_arrow_table()
    return db.sql(EDGE_STATEMENTS.format("edge_statements") + " ORDER BY rowid").to_arrow_table()
with duckdb.connect(str(before / "index.duckdb"), read_only=True) as a, \\
        duckdb.connect(str(after / "index.duckdb"), read_only=True) as b:
    tables = "SELECT table_name FROM information_schema.tables WHERE table_name <> 'edge_statements' ORDER BY 1"
    for (name,) in a.execute(tables).fetchall():
        query = f"SELECT * FROM {name} ORDER BY rowid"
        if not a.sql(query).to_arrow_table().equals(b.sql(query).to_arrow_table()):
            different.append(name)
    if not edge_statements(before, a).equals(edge_statements(after, b)):
        different.append("edge_statements")
for name in ("graph.npz", "neighbours.npz", "entity_vectors.npy", "entity_density.npy"):
    x, y = np.load(before / name), np.load(after / name)
    pairs = [(x[k], y[k]) for k in x.files] if name.endswith(".npz") else [(x, y)]
    if not all(np.array_equal(p, q) for p, q in pairs):
        different.append(name)
for path in sorted((before / "notes_bm25").iterdir()):
    other = after / "notes_bm25" / path.name
    # Arrays by value (an index type may narrow: scipy keeps indptr int32 while it fits), other files by bytes.
    same = (np.array_equal(np.load(path), np.load(other)) if path.suffix == ".npy"
            else path.read_bytes() == other.read_bytes())
    if not same:
        different.append(f"notes_bm25/{path.name}")
print(json.dumps(different))
"""


def measured_run(tree: Path, home: Path, repeats: int = 1) -> dict[str, Any]:
    """One process with ``tree`` first on the path that rebuilds (forced) ``repeats`` times: wall and peak memory of
    that process alone."""
    with tempfile.TemporaryDirectory() as logs:
        command = [sys.executable, "-c", ONE_RUN, str(home), str(repeats)]
        measured = run_measured(command, Path(logs) / "rebuild", cwd=tree,
                                env={**os.environ, "PYTHONPATH": str(tree)})  # fmt: skip
    if measured["exit_code"] != 0:
        raise RuntimeError(f"the rebuild with {tree} failed: {measured['stderr'][-2000:]}")
    result = parse_json_output(measured["stdout"]) or {}
    return {**result, "wall_s": measured["wall_s"], "peak_rss_mib": measured["peak_rss_mib"]}


def differences(before: Path, after: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", COMPARE, str(before), str(after)],
                          capture_output=True, text=True, check=True, cwd=REPOSITORY)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def kept_home_arguments(description: str, argv: list[str] | None, resident: bool = False) -> argparse.Namespace:
    """The options of a step timed on a kept home (this module's and ``eval.timeline_rebuild``'s): the home, a
    baseline source tree, the rounds and where the result goes; ``resident``: also how many times a run rebuilds in
    its process."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("home", type=Path)
    parser.add_argument("--baseline", type=Path, help="Another source tree (a git worktree of an earlier commit).")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPOSITORY / "eval" / "results")
    if resident:
        parser.add_argument("--resident", type=int, default=1, metavar="N",
                            help="Rebuilds per process; a run's time is the median of those after the second.")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = kept_home_arguments(__doc__.split("\n\n")[0], argv, resident=True)
    info = machine()
    print(f"machine: {info['platform']}; {info['cpu_count']} CPUs ({info.get('cpu_model', '?')}); "
          f"Python {info['python']}")
    trees = {"baseline": args.baseline, "this tree": REPOSITORY} if args.baseline else {"this tree": REPOSITORY}
    runs: list[dict[str, Any]] = []
    # The index the run before published, copied: the step keeps only the two latest versions in the home.
    previous = Path(tempfile.mkdtemp(prefix="index-rebuild-")) / "previous"
    for _ in range(args.rounds):
        for name, tree in trees.items():
            run = {"tree": name, "path": str(tree), **measured_run(tree.resolve(), args.home, args.resident)}
            published = args.home / "ppr" / run["version"]
            if runs:
                run["differs_from_previous"] = differences(previous, published)
            shutil.rmtree(previous, ignore_errors=True)
            shutil.copytree(published, previous)
            runs.append(run)
            compared = run.get("differs_from_previous")
            print(f"{name:>10}: {run['seconds']:7.2f} s in the step, {run['wall_s']:7.2f} s wall, peak "
                  f"{run['peak_rss_mib']:,.0f} MiB; " + ("(the first run)" if compared is None else
                  "same index as the run before" if not compared else f"DIFFERS: {compared}"))
    best = {name: min(r["seconds"] for r in runs if r["tree"] == name) for name in trees}
    median = {name: statistics.median(r["seconds"] for r in runs if r["tree"] == name) for name in trees}
    print("best: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in best.items()) + "; median: "
          + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in median.items()))
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / f"index-rebuild-{date.today().isoformat()}-{runs[0].get('passages', 0)}.json"
    target.write_text(json.dumps({"benchmark": "index_rebuild", "home": str(args.home), "machine": info,
                                  "resident": args.resident, "runs": runs, "best_s": best, "median_s": median},
                                 indent=2))  # fmt: skip
    print(f"wrote {target}")
    shutil.rmtree(previous.parent, ignore_errors=True)
    same = all(not r.get("differs_from_previous") for r in runs)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
