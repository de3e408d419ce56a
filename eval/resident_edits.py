"""One-note edits through `engram watch`'s resident builder on a kept home: what an edit costs a person who keeps the
watcher running, beside ``eval.edit_rebuild``'s fresh `engram build` process per edit.

The watcher (``pipelines.watch.watch``, the loop `engram watch` runs) is started in this process on a home kept by
``python -m eval.build_benchmark --keep DIR``. Before its first build one note is edited (the benchmark's own edit),
so that build also pays for any code change since the home was built; it is reported apart. After each build the
next note is edited, and the watcher finds the change the way it always does (``plan_changes``) and builds again.
Each edit's time runs from the moment the note was written to the end of its build, so it includes noticing the
change; the steps' seconds are read from the home's Dagster instance.

    python -m eval.resident_edits --home DIR [--rounds 3] [--edit sentence|new-name]

``--edit new-name`` appends a sentence naming something no note named before (``build_benchmark.name_something_new``):
the edits that add keys, which cost more than the default one (a sentence taken out, a known one added).

Writes ``eval/results/resident-edits-DATE.json``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from eval.build_benchmark import REPOSITORY, edit_one_document, machine, name_something_new, step_times
from eval.edit_rebuild import kept_folder, unused_result_path

EDITS = {"sentence": edit_one_document, "new-name": name_something_new}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True, help="Kept folder (vault/ and home/) to edit and build.")
    parser.add_argument("--rounds", type=int, default=3, help="Measured edits (after one warm-up edit).")
    parser.add_argument("--seed", type=int, default=300, help="Seed of the warm-up edit; each round adds one.")
    parser.add_argument("--out", type=Path, default=REPOSITORY / "eval" / "results")
    parser.add_argument("--edit", choices=sorted(EDITS), default="sentence",
                        help="sentence: one taken out, a known one appended; new-name: one naming something new.")
    args = parser.parse_args()
    edit = EDITS[args.edit]
    kept = kept_folder(args.home)
    print(f"machine: {machine()}")

    from engramrag.store import Home  # imported after the arguments are read: `--help` stays instant
    from pipelines.watch import WatchSettings, watch

    runs: list[dict[str, Any]] = []
    warm: dict[str, Any] = {}
    edited = {"path": edit(kept / "vault", args.seed)["path"], "at": time.perf_counter()}

    def on_build(outcome, seconds: float) -> None:
        done = time.perf_counter()
        steps = (step_times(kept / "home", outcome.run_id) or {}).get("steps") or {}
        run = {
            "edited": edited["path"], "success": outcome.success, "build_s": round(seconds, 2),
            "edit_to_built_s": round(done - edited["at"], 2),
            "outside_steps_s": round(seconds - sum(steps.values()), 2),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "steps": {name: round(value, 2) for name, value in sorted(steps.items(), key=lambda item: -item[1])},
        }  # fmt: skip
        if not warm:
            warm.update(run)
            print(f"warm-up edit {run['edit_to_built_s']:.2f} s (pays for a code change; not counted)", flush=True)
        else:
            runs.append(run)
            top = ", ".join(f"{step} {value:.2f}" for step, value in list(run["steps"].items())[:4])
            print(f"edit {len(runs)}: {run['edit_to_built_s']:7.2f} s from the save to the built stores (build "
                  f"{run['build_s']:.2f} s, {run['outside_steps_s']:.2f} s outside the steps); {top}", flush=True)
        if len(runs) < args.rounds:
            edited.update(path=edit(kept / "vault", args.seed + len(runs) + 1)["path"],
                          at=time.perf_counter())  # fmt: skip

    settings = WatchSettings(interval_s=0.1, max_builds=args.rounds + 1)
    watch(Home.at(kept / "home"), kept / "vault", settings, on_build)
    median = statistics.median(run["edit_to_built_s"] for run in runs) if runs else None
    print(f"median edit: {median} s over {len(runs)} edits")
    target = unused_result_path(args.out, "resident-edits")
    target.write_text(json.dumps({"machine": machine(), "command": sys.argv, "home": str(kept), "edit": args.edit,
                                  "warm_up": warm,
                                  "runs": runs, "median_edit_s": median}, indent=2))  # fmt: skip
    print(f"wrote {target}")
    return 0 if all(run["success"] for run in [warm, *runs]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
