"""One-note edits through `engram build` on two kept homes, this source tree beside another, alternating.

The build benchmark measures one edit per tree, in runs that may be hours apart on a machine whose speed drifts
(the same steps took 1.3-1.9 times as long on some days). This takes two homes kept by
``python -m eval.build_benchmark --keep DIR`` (one built by each tree, or two copies of one), edits one ordinary
note in each vault before each build (the benchmark's own edit, a new seed each round) and runs `engram build` as a
fresh process with each tree first on the path, alternating, so both trees' edits share the machine's state. A
first edit per tree is run and reported apart: after a code change every global step recomputes what it keeps.

    git worktree add /tmp/baseline <commit>
    python -m eval.edit_rebuild --home DIR_A --baseline-home DIR_B --baseline /tmp/baseline [--rounds 3]
    python -m eval.edit_rebuild --home DIR_A --rounds 2     # this tree only (one kept home: 100,000 notes)

DIR_A and DIR_B are ``--keep`` folders (each with ``vault/`` and ``home/``; the latest ``engram-bench-*`` inside
is taken). Writes ``eval/results/edit-rebuild-DATE.json``: per run the wall time, CPU, peak memory, the steps'
seconds from the home's Dagster instance and the time outside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from eval.build_benchmark import (
    REPOSITORY,
    edit_one_document,
    machine,
    parse_json_output,
    run_measured,
    step_times,
)


def kept_folder(folder: Path) -> Path:
    """The folder holding ``vault/`` and ``home/``: ``folder`` itself, or its latest ``engram-bench-*``."""
    if (folder / "home").is_dir():
        return folder
    found = sorted(folder.glob("engram-bench-*"), key=lambda path: path.stat().st_mtime)
    if not found:
        raise SystemExit(f"{folder} holds no kept home (vault/ and home/): run eval.build_benchmark --keep {folder}")
    return found[-1]


def edit_build(tree: Path, kept: Path, seed: int) -> dict[str, Any]:
    """Edit one note of ``kept``'s vault, then one `engram build` with ``tree`` first on the path."""
    edited = edit_one_document(kept / "vault", seed)
    # The module, not the installed script: the script imports the entry point of the tree it was installed from.
    command = [sys.executable, "-m", "pipelines.cli", "build", "--vault", str(kept / "vault"), "--home",
               str(kept / "home"), "--json"]  # fmt: skip
    with tempfile.TemporaryDirectory() as logs:
        measured = run_measured(command, Path(logs) / "edit", cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)})
    summary = parse_json_output(measured["stdout"]) or {}
    if measured["exit_code"] != 0 or (summary.get("last_build") or {}).get("extracted") != 1:
        raise RuntimeError(f"the edit build with {tree} did not extract one note: {measured['stderr'][-2000:]}")
    steps = (step_times(kept / "home", summary.get("run_id")) or {}).get("steps") or {}
    inside = sum(steps.values())
    return {
        "edited": edited.get("path"), "wall_s": measured["wall_s"], "cpu_s": round(measured["user_s"] +
        measured["sys_s"], 2), "peak_rss_mib": measured["peak_rss_mib"], "load_1m": measured["load_1m"],
        "steps": {name: round(seconds, 2) for name, seconds in sorted(steps.items(), key=lambda item: -item[1])},
        "outside_steps_s": round(measured["wall_s"] - inside, 2),
    }  # fmt: skip


def unused_result_path(folder: Path, stem: str) -> Path:
    """``folder/<stem>-<today>.json``, numbered when a run earlier today wrote that file (it is kept)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{stem}-{date.today().isoformat()}.json"
    for number in range(2, 100):
        if not target.exists():
            break
        target = folder / f"{stem}-{date.today().isoformat()}-{number}.json"
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True, help="Kept folder this tree builds.")
    parser.add_argument("--baseline-home", type=Path, help="Kept folder the baseline tree builds (with --baseline).")
    parser.add_argument("--baseline", type=Path, help="Source tree to compare with (else: this tree only).")
    parser.add_argument("--rounds", type=int, default=3, help="Measured edits per tree (after one warm-up each).")
    parser.add_argument("--seed", type=int, default=100, help="Seed of the first round's edit.")
    parser.add_argument("--out", type=Path, default=REPOSITORY / "eval" / "results")
    args = parser.parse_args()
    if (args.baseline is None) != (args.baseline_home is None):
        parser.error("--baseline and --baseline-home go together")
    trees = {"this tree": (REPOSITORY, kept_folder(args.home))}
    if args.baseline is not None:
        trees = {"baseline": (args.baseline.resolve(), kept_folder(args.baseline_home)), **trees}
    print(f"machine: {machine()}")
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    warm = {}
    for name, (tree, kept) in trees.items():
        warm[name] = edit_build(tree, kept, args.seed - 1)
        print(f"{name:>10}: warm-up edit {warm[name]['wall_s']:.2f} s (after a code change, not counted)")
    for round_number in range(args.rounds):
        for name, (tree, kept) in trees.items():
            run = edit_build(tree, kept, args.seed + round_number)
            runs[name].append(run)
            top = ", ".join(f"{step} {seconds:.2f}" for step, seconds in list(run["steps"].items())[:4])
            print(f"{name:>10}: {run['wall_s']:7.2f} s wall, {run['outside_steps_s']:5.2f} s outside the steps; {top}")
    medians = {name: statistics.median(run["wall_s"] for run in listed) for name, listed in runs.items()}
    ratio = ""
    if "baseline" in medians:
        ratio = f"; this tree / baseline = {medians['this tree'] / medians['baseline']:.3f}"
    print("median: " + ", ".join(f"{name} {value:.2f} s" for name, value in medians.items()) + ratio)
    target = unused_result_path(args.out, "edit-rebuild")
    target.write_text(json.dumps({
        "machine": machine(), "command": sys.argv, "trees": {name: str(tree) for name, (tree, _) in trees.items()},
        "homes": {name: str(kept) for name, (_, kept) in trees.items()}, "warm_up": warm, "runs": runs,
        "median_wall_s": medians,
    }, indent=2))  # fmt: skip
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
