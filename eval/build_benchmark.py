"""Build benchmark: how fast `engram build` turns a synthetic vault into the stores, and how little it redoes.

For each vault size it generates a deterministic synthetic vault (eval/synthetic_vault.py) in a temporary
folder and times the real command line, each build a separate process (`engram build --vault V --home H
--json`):

  full         the first build, from an empty home;
  noop         a rebuild with nothing changed;
  edit_one     a rebuild after editing one document (one sentence removed, one appended);
  delete_rename  a rebuild after deleting one document and renaming another (skip with --no-delete-rename).

It reports wall time (time.perf_counter around the process), CPU time and peak resident memory of the build
process (from os.wait4's rusage), documents per second of the full build, the incremental/full wall-time
ratio (aim: below 2% at 10,000 documents), the step durations Dagster recorded for the run, the size of each
store in the home folder, the counts of `engram status --json`, and each build's `last_build` figures. It
prints a loud FAIL line when the edit_one build did not extract exactly one document, and keeps going.

    python -m eval.build_benchmark [--sizes 1000 10000] [--out eval/results]

The result is written to ``<out>/build-YYYY-MM-DD.json`` with the configuration, the machine and the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from eval.synthetic_vault import generate_vault

REPOSITORY = Path(__file__).resolve().parents[1]
INCREMENTAL_TARGET = 0.02  # incremental wall time / full wall time, at 10,000 documents
STEP_TIMES = """
import json, sys
import dagster as dg
with dg.DagsterInstance.get() as instance:
    run = instance.get_run_record_by_id(sys.argv[1])
    stats = instance.get_run_step_stats(sys.argv[1])
    out = {"run_s": (run.end_time - run.start_time) if run and run.end_time and run.start_time else None,
           "steps": {s.step_key: round(s.end_time - s.start_time, 3) for s in stats if s.end_time and s.start_time}}
print(json.dumps(out))
"""


# --- running the command line ------------------------------------------------------------------------------


def engram_command() -> list[str]:
    """The installed `engram` script beside this interpreter, else the module."""
    script = Path(sys.executable).parent / "engram"
    return [str(script)] if script.exists() else [sys.executable, "-m", "pipelines.cli"]


def run_measured(
    command: list[str], log: Path, cwd: Path = REPOSITORY, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``command`` (in ``cwd``, with ``env`` or this process's environment) to completion; wall time by
    perf_counter, CPU and peak RSS from os.wait4's rusage."""
    load_before = os.getloadavg()[0]
    with open(log.with_suffix(".out"), "wb") as out, open(log.with_suffix(".err"), "wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, cwd=cwd, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "exit_code": process.returncode,
        "wall_s": round(wall, 3),
        "user_s": round(usage.ru_utime, 3),
        "sys_s": round(usage.ru_stime, 3),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),  # Linux reports kilobytes
        # other work on the machine inflates wall time (CPU time much less): the 1-minute load before and after
        "load_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "stdout": log.with_suffix(".out").read_text(encoding="utf-8", errors="replace"),
        "stderr": log.with_suffix(".err").read_text(encoding="utf-8", errors="replace"),
    }


def parse_json_output(text: str) -> dict[str, Any] | None:
    """The JSON object a `--json` command printed, ignoring anything printed before it."""
    match = re.search(r"^\{", text, re.MULTILINE)
    if not match:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[match.start():])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def build(vault: Path, home: Path, logs: Path, name: str, extractor: str) -> dict[str, Any]:
    command = [*engram_command(), "build", "--vault", str(vault), "--home", str(home), "--json"]
    if extractor:
        command += ["--extractor", extractor]
    digest = source_digest()
    measured = run_measured(command, logs / f"{name}-build")
    summary = parse_json_output(measured["stdout"])
    result = {key: value for key, value in measured.items() if key not in ("stdout", "stderr")}
    result["summary"] = summary
    result["source_digest"] = digest
    if measured["exit_code"] != 0 or summary is None:
        lines = measured["stderr"].strip().splitlines()
        causes = [line.strip() for line in lines if re.search(r"(Exception|Error): ", line)]
        result["stderr_tail"] = list(dict.fromkeys(causes))[-6:] + (lines[-6:] or ["(no standard error)"])
    if summary:
        result["last_build"] = summary.get("last_build")
        result["buckets_run"] = len(summary.get("buckets") or [])
        result["checks"] = summary.get("checks")
        result["dagster"] = step_times(home, summary.get("run_id"))
    status = run_measured([*engram_command(), "status", "--home", str(home), "--json"], logs / f"{name}-status")
    status_json = parse_json_output(status["stdout"]) or {}
    result["status"] = {key: status_json.get(key) for key in ("documents", "quads", "statements", "rejected", "failed")}
    result["stores"] = store_sizes(home)
    return result


def compacted_quads(quads: Path, copy: Path) -> dict[str, Any]:
    """The quad store's size once RocksDB has compacted it, measured on a copy. Oxigraph's bulk loader writes
    compressed files, but its RocksDB settings compact into uncompressed ones: the same 7.48 M quads were 1.29 GiB
    freshly bulk-loaded and 2.06 GiB compacted, and a store edited for a while reaches the compacted size. The
    steady state is this figure, not the one right after a build."""
    shutil.copytree(quads, copy)
    started = time.perf_counter()
    store = ox.Store(str(copy))
    store.optimize()
    del store
    size = store_sizes(copy)["total"]
    shutil.rmtree(copy, ignore_errors=True)
    return {**size, "seconds": round(time.perf_counter() - started, 1)}


def step_times(home: Path, run_id: str | None) -> dict[str, Any] | None:
    """Step durations Dagster recorded for the run, read from the home's instance in a separate process."""
    if not run_id:
        return None
    environment = {**os.environ, "DAGSTER_HOME": str(home / "dagster")}
    done = subprocess.run([sys.executable, "-c", STEP_TIMES, run_id], capture_output=True, text=True,
                          env=environment, cwd=REPOSITORY, check=False)
    return parse_json_output(done.stdout) if done.returncode == 0 else {"error": done.stderr.strip()[-500:]}


def store_sizes(home: Path) -> dict[str, Any]:
    """Apparent bytes and allocated bytes (what du counts) of the home and of each entry in it."""

    def measure(path: Path) -> tuple[int, int, int]:
        if path.is_file():
            stat = path.stat()
            return stat.st_size, stat.st_blocks * 512, 1
        size = blocks = files = 0
        for root, _, names in os.walk(path):
            for name in names:
                try:
                    stat = os.lstat(os.path.join(root, name))
                except FileNotFoundError:
                    continue
                size, blocks, files = size + stat.st_size, blocks + stat.st_blocks * 512, files + 1
        return size, blocks, files

    entries = {}
    for entry in sorted(home.iterdir()) if home.exists() else []:
        size, disk, files = measure(entry)
        entries[entry.name + ("/" if entry.is_dir() else "")] = {"bytes": size, "disk_bytes": disk, "files": files}
    size, disk, files = measure(home)
    return {"total": {"bytes": size, "disk_bytes": disk, "files": files}, "entries": entries}


# --- changing the vault ------------------------------------------------------------------------------------

SENTENCE_END = re.compile(r"(?<=\.)\s+")


def _candidates(vault: Path) -> list[Path]:
    """Ordinary notes (not DECISIONS.md, not ADRs), sorted, so the choice is reproducible."""
    return sorted(
        path for path in vault.rglob("*.md")
        if path.name != "DECISIONS.md" and path.relative_to(vault).parts[0] != "adr"
    )


def edit_one_document(vault: Path, seed: int) -> dict[str, str]:
    """Remove one sentence from a prose paragraph of one note and append a new sentence at its end."""
    rng = random.Random(seed)
    candidates = _candidates(vault)
    rng.shuffle(candidates)
    for path in candidates:
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        body_start = lines.index("---", 1) + 1 if lines and lines[0] == "---" else 0
        for index in range(body_start, len(lines)):
            line = lines[index]
            if not line or line[0] in "-#0123456789|>[" or ": " in line[:24]:
                continue
            sentences = SENTENCE_END.split(line)
            if len(sentences) < 3:
                continue
            removed = sentences.pop(1)
            lines[index] = " ".join(sentences)
            added = "Added by the build benchmark: the weekly review moved to Thursday at 15:00."
            new_text = "\n".join(lines).rstrip("\n") + f"\n\n{added}\n"
            path.write_text(new_text, encoding="utf-8")
            return {"path": path.relative_to(vault).as_posix(), "removed": removed, "appended": added}
    raise RuntimeError(f"{vault}: no note has a paragraph of three sentences to edit")


def name_something_new(vault: Path, seed: int) -> dict[str, str]:
    """Append to one note a sentence naming an organisation and a component no note named before (an invented
    word, from ``seed``): an edit that adds keys, so resolution's surface pairs, the index's nodes and their
    neighbour lists change, where ``edit_one_document``'s fixed sentence mostly names what is already known."""
    rng = random.Random(seed)
    path = rng.choice(_candidates(vault))
    word = "".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(3)).title()
    added = f"{word} Labs now owns the {word} Gateway rollout."
    text = path.read_text(encoding="utf-8").rstrip("\n") + f"\n\n{added}\n"
    path.write_text(text, encoding="utf-8")
    return {"path": path.relative_to(vault).as_posix(), "removed": "", "appended": added}


def delete_and_rename(vault: Path, seed: int, avoid: str) -> dict[str, str]:
    """Delete one note and rename another (same folder, new file name, same content)."""
    rng = random.Random(seed + 1)
    candidates = [path for path in _candidates(vault) if path.relative_to(vault).as_posix() != avoid]
    deleted, renamed = rng.sample(candidates, 2)
    deleted.unlink()
    target = renamed.with_name(renamed.stem + "-renamed.md")
    renamed.rename(target)
    return {
        "deleted": deleted.relative_to(vault).as_posix(),
        "renamed_from": renamed.relative_to(vault).as_posix(),
        "renamed_to": target.relative_to(vault).as_posix(),
    }


# --- one size ----------------------------------------------------------------------------------------------


def resident_phase(scratch: Path, logs: Path, rounds: int, seed: int, full_wall_s: float | None) -> dict[str, Any]:
    """``rounds`` one-note edits through `engram watch`'s resident builder on this run's home
    (``eval.resident_edits``, its own process after a warm-up edit), and their median against this run's full
    build."""
    command = [sys.executable, "-m", "eval.resident_edits", "--home", str(scratch), "--rounds", str(rounds),
               "--seed", str(seed + 1000), "--out", str(logs)]  # fmt: skip
    measured = run_measured(command, logs / "resident-edits")
    written = sorted(logs.glob("resident-edits-*.json"), key=lambda path: path.stat().st_mtime)
    record = json.loads(written[-1].read_text()) if measured["exit_code"] == 0 and written else {}
    median = record.get("median_edit_s")
    ratio = round(median / full_wall_s, 5) if median and full_wall_s else None
    return {"command": command, "exit_code": measured["exit_code"], "median_edit_s": median, "ratio": ratio,
            "target_met": ratio is not None and ratio < INCREMENTAL_TARGET,
            "edits_s": [run["edit_to_built_s"] for run in record.get("runs", [])]}  # fmt: skip


def bench_size(
    size: int, seed: int, extractor: str, delete_rename: bool, keep: Path | None, resident_edits: int = 0
) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix=f"engram-bench-{size}-"))
    vault, home, logs = scratch / "vault", scratch / "home", scratch / "logs"
    logs.mkdir(parents=True)
    result: dict[str, Any] = {"documents": size, "scratch": str(scratch), "failures": []}
    try:
        started = time.perf_counter()
        generate_vault(vault, size, seed)
        files = list(vault.rglob("*.md"))
        result["vault"] = {
            "generate_s": round(time.perf_counter() - started, 3),
            "files": len(files),
            "bytes": sum(path.stat().st_size for path in files),
        }
        say(f"[{size}] vault: {len(files)} notes, {result['vault']['bytes'] / 1e6:.1f} MB, "
            f"generated in {result['vault']['generate_s']:.1f}s")

        runs: dict[str, Any] = {}
        result["runs"] = runs
        say(f"[{size}] full build ...")
        runs["full"] = build(vault, home, logs, "full", extractor)
        report_run(size, "full", runs["full"])
        expect(result, "full", runs["full"], extracted=size)

        say(f"[{size}] no-change rebuild ...")
        runs["noop"] = build(vault, home, logs, "noop", extractor)
        report_run(size, "noop", runs["noop"])
        expect(result, "noop", runs["noop"], extracted=0, deleted=0)

        change = edit_one_document(vault, seed)
        say(f"[{size}] rebuild after editing {change['path']} ...")
        runs["edit_one"] = build(vault, home, logs, "edit_one", extractor)
        runs["edit_one"]["change"] = change
        report_run(size, "edit_one", runs["edit_one"])
        expect(result, "edit_one", runs["edit_one"], extracted=1, deleted=0)

        if delete_rename:
            change = delete_and_rename(vault, seed, avoid=change["path"])
            say(f"[{size}] rebuild after deleting {change['deleted']} and renaming {change['renamed_from']} ...")
            runs["delete_rename"] = build(vault, home, logs, "delete_rename", extractor)
            runs["delete_rename"]["change"] = change
            report_run(size, "delete_rename", runs["delete_rename"])
            # A rename is a new path: one new document to extract, two paths whose graphs go.
            expect(result, "delete_rename", runs["delete_rename"], extracted=1, deleted=2, loud=False)

        if resident_edits:
            result["resident"] = resident_phase(scratch, logs, resident_edits, seed, runs["full"]["wall_s"])
            resident = result["resident"]
            say(f"[{size}] {resident_edits} edits through `engram watch` (one process, the same run): median "
                f"{resident['median_edit_s']} s = {100 * (resident['ratio'] or 0):.2f}% of the full build "
                f"(aim < {100 * INCREMENTAL_TARGET:.0f}%): {'MET' if resident['target_met'] else 'NOT MET'}")

        result["quads_compacted"] = compacted_quads(home / "quads", scratch / "quads-compacted")
        say(f"[{size}] quad store once compacted: {result['quads_compacted']['bytes'] / 2**30:.2f} GiB")
        full, incremental = runs["full"], runs["edit_one"]
        result["full_docs_per_s"] = round(size / full["wall_s"], 2) if full["wall_s"] else None
        result["incremental_ratio"] = round(incremental["wall_s"] / full["wall_s"], 5) if full["wall_s"] else None
        result["noop_ratio"] = round(runs["noop"]["wall_s"] / full["wall_s"], 5) if full["wall_s"] else None
        if size >= 10_000:
            met = result["incremental_ratio"] is not None and result["incremental_ratio"] < INCREMENTAL_TARGET
            result["incremental_target_met"] = met
            say(f"[{size}] incremental/full = {100 * (result['incremental_ratio'] or 0):.2f}% "
                f"(aim < {100 * INCREMENTAL_TARGET:.0f}%): {'MET' if met else 'NOT MET'}")
    finally:
        if keep is not None:
            destination = keep / scratch.name
            shutil.move(str(scratch), destination)
            result["kept_at"] = str(destination)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return result


def expect(result: dict[str, Any], name: str, run: dict[str, Any], loud: bool = True, **wanted: int) -> None:
    """Compare the run's last_build figures with what the change should have caused."""
    problems = []
    if run["exit_code"] != 0:
        problems.append(f"exit code {run['exit_code']}")
    last = run.get("last_build") or {}
    for key, value in wanted.items():
        if last.get(key) != value:
            problems.append(f"{key} = {last.get(key)} (expected {value})")
    for key in ("failed", "rejected"):
        if last.get(key):
            problems.append(f"{key} = {last.get(key)}")
    if run.get("checks") and not all(run["checks"].values()):
        problems.append("failed checks: " + ", ".join(k for k, ok in run["checks"].items() if not ok))
    run["expected"] = wanted
    run["as_expected"] = not problems
    if problems:
        label = "FAIL" if loud else "NOTE"
        line = f"{label} [{result['documents']}] {name}: " + "; ".join(problems)
        result["failures" if loud else "notes"] = [*result.get("failures" if loud else "notes", []), line]
        bar = "!" * 100 if loud else ""
        say("\n".join(part for part in (bar, line, bar) if part))
        for tail in run.get("stderr_tail", []):
            say(f"    {tail}")


# --- reporting ---------------------------------------------------------------------------------------------


def say(message: str) -> None:
    print(message, flush=True)


def report_run(size: int, name: str, run: dict[str, Any]) -> None:
    last = run.get("last_build") or {}
    steps = (run.get("dagster") or {}).get("steps") or {}
    step_text = ", ".join(f"{key} {value:.1f}s" for key, value in sorted(steps.items(), key=lambda kv: -kv[1])[:4])
    run_s = (run.get("dagster") or {}).get("run_s")
    say(f"[{size}] {name}: {run['wall_s']:.2f}s wall" + (f" (Dagster run {run_s:.1f}s)" if run_s else "")
        + f", {run['user_s'] + run['sys_s']:.1f}s CPU, "
        f"peak {run['peak_rss_mib']:.0f} MiB, exit {run['exit_code']}; extracted {last.get('extracted')}, "
        f"unchanged {last.get('unchanged')}, deleted {last.get('deleted')}"
        + (f"; steps: {step_text}" if step_text else ""))


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    info["packages"] = {}
    for package in ("dagster", "duckdb", "pyoxigraph", "rdflib", "lancedb"):
        try:
            info["packages"][package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            info["packages"][package] = None
    info["source_digest"] = source_digest()
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPOSITORY,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, cwd=REPOSITORY,
                               check=True).stdout.strip()
        info["git"] = {"commit": commit, "dirty": bool(dirty)}
    except (OSError, subprocess.CalledProcessError):
        info["git"] = None
    return info


def source_digest() -> str:
    """A digest of the Python sources the build runs (engramrag/, assets/, pipelines/), so results taken while
    the working tree differs from the commit can still be told apart."""
    digest = hashlib.sha256()
    for folder in ("engramrag", "assets", "pipelines"):
        for path in sorted((REPOSITORY / folder).rglob("*.py")):
            digest.update(path.relative_to(REPOSITORY).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:.1f}"


def print_table(results: list[dict[str, Any]]) -> None:
    header = f"{'docs':>6} {'run':<14} {'wall s':>8} {'CPU s':>7} {'peak MiB':>8} {'extr':>6} {'unch':>6} " \
             f"{'del':>4} {'documents':>9} {'quads':>10} {'statements':>10} {'home MiB':>8}"
    say("\n" + header)
    say("-" * len(header))
    for result in results:
        for name, run in (result.get("runs") or {}).items():
            last, status = run.get("last_build") or {}, run.get("status") or {}
            home = (run.get("stores") or {}).get("total", {}).get("disk_bytes")
            say(f"{result['documents']:>6} {name:<14} {run['wall_s']:>8.2f} {run['user_s'] + run['sys_s']:>7.1f} "
                f"{run['peak_rss_mib']:>8.0f} {_n(last.get('extracted')):>6} {_n(last.get('unchanged')):>6} "
                f"{_n(last.get('deleted')):>4} {_n(status.get('documents')):>9} {_n(status.get('quads')):>10} "
                f"{_n(status.get('statements')):>10} {_mib(home):>8}")
    say("")
    for result in results:
        if "runs" not in result or "full" not in result["runs"]:
            continue
        ratio = result.get("incremental_ratio")
        stores = result["runs"]["full"].get("stores", {}).get("entries", {})
        store_text = ", ".join(f"{name} {_mib(entry['disk_bytes'])} MiB" for name, entry in stores.items())
        say(f"{result['documents']} docs: full build {result.get('full_docs_per_s')} docs/s; "
            f"edit_one/full = {100 * ratio:.2f}%; noop/full = {100 * result.get('noop_ratio', 0):.2f}%"
            if ratio is not None else f"{result['documents']} docs: no ratio")
        say(f"    stores after the full build (du): {store_text}")
        steps = (result["runs"]["full"].get("dagster") or {}).get("steps") or {}
        if steps:
            say("    full build steps: " + ", ".join(f"{k} {v:.1f}s" for k, v in sorted(steps.items(),
                                                                               key=lambda kv: -kv[1])))
        edit = result["runs"].get("edit_one") or {}
        steps = (edit.get("dagster") or {}).get("steps") or {}
        if steps:
            # Each step's share of the edit's wall time: the next bottleneck of an incremental build.
            wall = edit.get("wall_s") or 1.0
            say("    edit_one steps (share of its wall time): " + ", ".join(
                f"{k} {v:.2f}s ({100 * v / wall:.0f}%)" for k, v in sorted(steps.items(), key=lambda kv: -kv[1])))
            outside = wall - sum(steps.values())
            say(f"    edit_one outside the steps (process start, planning, Dagster): {outside:.1f}s "
                f"({100 * outside / wall:.0f}%)")
        for line in result.get("failures", []) + result.get("notes", []):
            say(f"    {line}")


def _n(value: Any) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.build_benchmark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000], help="Vault sizes (documents).")
    parser.add_argument("--out", type=Path, default=REPOSITORY / "eval" / "results", help="Folder of result files.")
    parser.add_argument("--seed", type=int, default=7, help="Seed of the synthetic vault and of the edits.")
    parser.add_argument("--extractor", default="rules", help="Extractor passed to `engram build` (default rules).")
    parser.add_argument("--no-delete-rename", action="store_true", help="Skip the delete-and-rename rebuild.")
    parser.add_argument("--keep", type=Path, help="Move each vault, home and the build logs here instead of deleting.")
    parser.add_argument("--resident-edits", type=int, default=0, metavar="N",
                        help="Also N one-note edits through `engram watch` on the built home (eval.resident_edits), "
                             "their median against this run's full build.")
    args = parser.parse_args(argv)

    info = machine()
    say(f"machine: {info['platform']}; {info['cpu_count']} CPUs ({info.get('cpu_model', '?')}); "
        f"{info.get('memory_gib', '?')} GiB; Python {info['python']}; "
        + ", ".join(f"{name} {version}" for name, version in info["packages"].items()))
    say(f"command: {' '.join(engram_command())} build --vault V --home H --json"
        + (f" --extractor {args.extractor}" if args.extractor else ""))
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)

    started = datetime.now(UTC)
    results = []
    for size in args.sizes:
        results.append(bench_size(size, args.seed, args.extractor, not args.no_delete_rename, args.keep,
                                  args.resident_edits))
    print_table(results)

    failures = [line for result in results for line in result.get("failures", [])]
    digests = {run.get("source_digest") for result in results for run in (result.get("runs") or {}).values()}
    if len(digests - {None}) > 1:
        say(f"WARNING: the sources changed during the benchmark ({len(digests)} versions); figures mix code versions.")
    record = {
        "benchmark": "build",
        "started_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "configuration": {
            "sizes": args.sizes,
            "seed": args.seed,
            "extractor": args.extractor,
            "delete_rename": not args.no_delete_rename,
            "command": [*engram_command(), "build", "--vault", "V", "--home", "H", "--json"],
            "timing": "time.perf_counter around each build process; CPU and peak RSS from os.wait4 rusage",
            "incremental_target": INCREMENTAL_TARGET,
        },
        "machine": info,
        "results": results,
        "failures": failures,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / f"build-{started.date().isoformat()}.json"
    target.write_text(json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    say(f"wrote {target}")
    if failures:
        say(f"FAIL: {len(failures)} failed expectation(s); see above.")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
