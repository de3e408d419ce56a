"""The retrieval index step on a built home, this source tree beside another (a snapshot of an earlier commit).

Times ``retrieve.index_build.build_retrieval_index(force=True)`` in a fresh process per run (as a build runs it:
nothing cached in memory; the import of LanceDB the step makes is included), alternating the trees, and compares
what each run published with what the run before it published: every table of ``index.duckdb`` (rows in order),
the graph, the label vectors and neighbour lists and the whole-note BM25's arrays (by value) and files. A change
meant to be faster only passes when every run's index equals the one before it.

    git worktree add /tmp/baseline <commit>
    python -m eval.index_rebuild HOME --baseline /tmp/baseline [--rounds 2]

HOME is a built home, e.g. one kept by ``python -m eval.build_benchmark --sizes 10000 --keep DIR``; each run
publishes a new index version in it (the step keeps the two latest).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from eval.build_benchmark import REPOSITORY, machine, parse_json_output, run_measured

ONE_RUN = """
import json, sys, time
from pathlib import Path
from engramrag.embed.registry import make_embedder
from engramrag.retrieve.index_build import build_retrieval_index
from engramrag.store import Home
from engramrag.vault.config import VaultConfig, configured_bucket_count
started = time.perf_counter()
summary = build_retrieval_index(Home(Path(sys.argv[1])), VaultConfig(bucket_count=configured_bucket_count()),
                                make_embedder(), force=True)
print(json.dumps({"seconds": time.perf_counter() - started, "version": summary.version, "edges": summary.edges,
                  "passages": summary.passages}))
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


def measured_run(tree: Path, home: Path) -> dict[str, Any]:
    """One forced rebuild with ``tree`` first on the path: wall and peak memory of that process alone."""
    with tempfile.TemporaryDirectory() as logs:
        measured = run_measured([sys.executable, "-c", ONE_RUN, str(home)], Path(logs) / "rebuild", cwd=tree,
                                env={**os.environ, "PYTHONPATH": str(tree)})  # fmt: skip
    if measured["exit_code"] != 0:
        raise RuntimeError(f"the rebuild with {tree} failed: {measured['stderr'][-2000:]}")
    result = parse_json_output(measured["stdout"]) or {}
    return {**result, "wall_s": measured["wall_s"], "peak_rss_mib": measured["peak_rss_mib"]}


def differences(home: Path, before: str, after: str) -> list[str]:
    folder = home / "ppr"
    done = subprocess.run([sys.executable, "-c", COMPARE, str(folder / before), str(folder / after)],
                          capture_output=True, text=True, check=True, cwd=REPOSITORY)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def kept_home_arguments(description: str, argv: list[str] | None) -> argparse.Namespace:
    """The options of a step timed on a kept home (this module's and ``eval.timeline_rebuild``'s): the home, a
    baseline source tree, the rounds and where the result goes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("home", type=Path)
    parser.add_argument("--baseline", type=Path, help="Another source tree (a git worktree of an earlier commit).")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPOSITORY / "eval" / "results")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = kept_home_arguments(__doc__.split("\n\n")[0], argv)
    info = machine()
    print(f"machine: {info['platform']}; {info['cpu_count']} CPUs ({info.get('cpu_model', '?')}); "
          f"Python {info['python']}")
    trees = {"baseline": args.baseline, "this tree": REPOSITORY} if args.baseline else {"this tree": REPOSITORY}
    runs: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        for name, tree in trees.items():
            run = {"tree": name, "path": str(tree), **measured_run(tree.resolve(), args.home)}
            if runs:
                run["differs_from_previous"] = differences(args.home, runs[-1]["version"], run["version"])
            runs.append(run)
            compared = run.get("differs_from_previous")
            print(f"{name:>10}: {run['seconds']:7.2f} s in the step, {run['wall_s']:7.2f} s wall, peak "
                  f"{run['peak_rss_mib']:,.0f} MiB; " + ("(the first run)" if compared is None else
                  "same index as the run before" if not compared else f"DIFFERS: {compared}"))
    best = {name: min(r["seconds"] for r in runs if r["tree"] == name) for name in trees}
    print("best: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in best.items()))
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / f"index-rebuild-{date.today().isoformat()}-{runs[0].get('passages', 0)}.json"
    target.write_text(json.dumps({"benchmark": "index_rebuild", "home": str(args.home), "machine": info,
                                  "runs": runs, "best_s": best}, indent=2))  # fmt: skip
    print(f"wrote {target}")
    same = all(not r.get("differs_from_previous") for r in runs)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
