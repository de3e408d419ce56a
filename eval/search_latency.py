"""Search latency: how long one question takes in each search mode at a given vault size, with the cost of
building and opening the index it runs on.

It generates a deterministic synthetic vault (eval/synthetic_vault.py) under the work folder, builds it into
a home in this process with ``pipelines.build.run_build`` (rules extractor, hash embedder), or reuses a home
an earlier run built for the same size and seed, and then:

  1. rebuilds the retrieval index once more on its own (``build_retrieval_index(..., force=True)``), timed,
     and reads the graph counts of its manifest and the size of each store in the home;
  2. derives Q questions from the vault's catalog (entity labels and document titles put into English and
     Korean templates, seeded, so the same vault and seed always give the same questions);
  3. opens ``engramrag.retrieve.Retriever`` once (timed, with the resident memory before and after), warms it
     up with 5 questions, then asks every question with ``mode="full", k=10`` and ``mode="auto_turn", k=8``,
     timing each call with ``time.perf_counter``;
  4. reports p50/p95/p99/max per mode, the median of each stage of ``answer.timings_ms`` per mode, result and
     warning counts, and whether the aims (auto_turn p95 < 50 ms, full p95 < 300 ms at 10,000 documents) are
     met.

    python -m eval.search_latency [--documents 10000] [--queries 200] [--seed 7] [--rebuild]

A home another benchmark built (``eval.build_benchmark --keep DIR``: at 100,000 notes its build takes over an
hour) is measured as it is with ``--home H [--vault V] --no-index-rebuild``: never rebuilt or written to, the
figures of its build are the build benchmark's.

The result is written to ``<out>/search-latency-YYYY-MM-DD-N.json`` (N: documents) with the configuration,
the machine, the questions and every figure. A second run on the same day and size replaces that file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval.synthetic_vault import generate_vault

try:
    from eval.build_benchmark import machine, store_sizes
except ImportError:  # pragma: no cover - the build benchmark is part of the same package
    machine = None  # type: ignore[assignment]
    store_sizes = None  # type: ignore[assignment]

REPOSITORY = Path(__file__).resolve().parents[1]
BUILD_MARKER = "search-latency-build.json"
WARMUP = 5
FULL_K, AUTO_TURN_K = 10, 8
# p95 ms with the hash embedder, from this many documents up: the 10,000-note aims, and issue 16's at 100,000
AIMS_MS = {10_000: {"auto_turn": 50.0, "full": 300.0}, 100_000: {"auto_turn": 100.0, "full": 300.0}}
AIM_DOCUMENTS = min(AIMS_MS)


STAGES = ("embed", "bm25", "chunk", "lexical", "entity", "triple", "ppr", "context", "total")
STORES = ("lancedb/", "ppr/", "catalog.duckdb", "quads/")


def aims_for(documents: int) -> dict[str, float]:
    """The latency aims that apply at this size (the smallest size's below it)."""
    return AIMS_MS[max((size for size in AIMS_MS if size <= documents), default=AIM_DOCUMENTS)]


def say(message: str) -> None:
    print(message, flush=True)


def peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux reports KiB


def current_rss_mib() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- vault and home ----------------------------------------------------------------------------------------


def prepare_vault(work: Path, documents: int, seed: int) -> tuple[Path, dict[str, Any]]:
    vault = work / f"vault-{documents}-s{seed}"
    done = vault / ".generated"  # written last, so a half-written vault is regenerated
    if not done.is_file():
        shutil.rmtree(vault, ignore_errors=True)
        started = time.perf_counter()
        generate_vault(vault, documents, seed)
        done.write_text(json.dumps({"documents": documents, "seed": seed}) + "\n", encoding="utf-8")
        say(f"vault: generated {documents} notes in {time.perf_counter() - started:.1f} s at {vault}")
    return vault, vault_of(vault)


def build_home(vault: Path, home_dir: Path, documents: int, seed: int, rebuild: bool) -> dict[str, Any]:
    """Build the home, or reuse it while its marker names the same size and seed."""
    from engramrag.store import Home
    from pipelines.build import run_build

    marker = home_dir / BUILD_MARKER
    if rebuild and home_dir.exists():
        shutil.rmtree(home_dir)
    if marker.is_file():
        previous = json.loads(marker.read_text(encoding="utf-8"))
        if previous.get("documents") == documents and previous.get("seed") == seed:
            say(f"home: reusing {home_dir} built {previous.get('built_at')} in {previous.get('build_s')} s "
                "(pass --rebuild to build afresh)")
            return {**previous, "reused": True}
        marker.unlink()
    if home_dir.exists():
        shutil.rmtree(home_dir)  # a home without a matching marker is half-built or of another vault
    say(f"home: building {documents} notes into {home_dir} (rules extractor, hash embedder) ...")
    load_before = load()
    cpu_before = cpu_seconds()
    started = time.perf_counter()
    outcome = run_build(Home.at(home_dir), vault, extractor="rules")
    seconds = time.perf_counter() - started
    record = {
        "documents": documents,
        "seed": seed,
        "build_s": round(seconds, 2),
        "build_cpu_s": round(cpu_seconds() - cpu_before, 2),
        "build_peak_rss_mib": peak_rss_mib(),
        "load_before": load_before,
        "load_after": load(),
        "run_id": outcome.run_id,
        "success": outcome.success,
        "buckets": len(outcome.buckets),
        "checks": outcome.checks,
        "errors": outcome.errors,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if not outcome.success:
        say("!" * 100)
        say(f"FAIL: the build failed after {seconds:.1f} s (run {outcome.run_id}):")
        for error in outcome.errors or ["(no step error recorded)"]:
            say(error)
        say("!" * 100)
        raise SystemExit(json.dumps(record, indent=2))
    failed = sorted(check for check, passed in outcome.checks.items() if not passed)
    if failed:
        say(f"WARNING: asset checks failed: {', '.join(failed)}")
    marker.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    say(f"home: built in {seconds:.1f} s ({record['build_cpu_s']:.0f} s CPU), "
        f"peak RSS {record['build_peak_rss_mib']:.0f} MiB, load {load_before} -> {record['load_after']}")
    return {**record, "reused": False}


def rebuild_index(home_dir: Path) -> dict[str, Any]:
    from engramrag.embed.registry import make_embedder
    from engramrag.retrieve.index_build import build_retrieval_index
    from engramrag.store import Home
    from engramrag.vault.config import VaultConfig, configured_bucket_count

    load_before = load()
    started = time.perf_counter()
    summary = build_retrieval_index(
        Home.at(home_dir), VaultConfig(bucket_count=configured_bucket_count()), make_embedder("hash"), force=True
    )
    wall = time.perf_counter() - started
    return {
        "seconds": round(summary.seconds, 3),
        "wall_s": round(wall, 3),
        "version": summary.version,
        "entities": summary.entities,
        "passages": summary.passages,
        "edges": summary.edges,
        "peak_rss_mib": peak_rss_mib(),
        "load": [load_before, load()],
    }


def manifest_counts(home_dir: Path) -> dict[str, Any]:
    pointer = home_dir / "ppr" / "CURRENT"
    manifest = json.loads((home_dir / "ppr" / pointer.read_text().strip() / "manifest.json").read_text())
    edges = manifest.get("edges") or {}
    return {
        "version": pointer.read_text().strip(),
        "embedder": manifest.get("embedder"),
        "entities": manifest.get("entities"),
        "passages": manifest.get("passages"),
        "edges": edges,
        "edges_total": sum(edges.values()),
    }


def stores_of(home_dir: Path) -> dict[str, Any]:
    if store_sizes is None:
        return {}
    sizes = store_sizes(home_dir)
    picked = {name: sizes["entries"].get(name) for name in STORES}
    return {"total": sizes["total"], **picked}


def vault_of(vault: Path | None) -> dict[str, Any]:
    if vault is None:
        return {}
    files = list(vault.resolve().rglob("*.md"))
    return {"path": str(vault.resolve()), "files": len(files), "bytes": sum(path.stat().st_size for path in files)}


# --- questions ---------------------------------------------------------------------------------------------

HANGUL = re.compile(r"[\uac00-\ud7a3]")
DATE_LIKE = re.compile(r"^[\d\s./:-]+$")

TEMPLATES: dict[str, tuple[list[str], list[str]]] = {
    # kind: (English templates, Korean templates)
    "Artifact": (["Who owns {a}?", "What do we use {a} for?", "Known problems with {a}"],
                 ["{a} 담당자는 누구인가요?", "{a} 관련 이슈 정리", "{a}는 어디에 쓰나요?"]),
    "Person": (["What is {a} working on?", "Which projects does {a} own?"],
               ["{a} 담당 업무는?", "{a} 참여 회의 목록"]),
    "Project": (["What is the status of {a}?", "Meeting decisions about {a}"],
                ["{a} 관련 회의 결정 사항", "{a} 프로젝트 진행 상황"]),
    "Organization": (["Who is our contact at {a}?", "What did we agree with {a}?"],
                     ["{a} 담당자 연락처", "{a}와 합의한 내용"]),
    "Place": (["Which meetings were held at {a}?"], ["{a}에서 열린 회의"]),
    "Event": (["What was decided at {a}?"], ["{a}에서 결정된 사항"]),
    "Task": (["Who is assigned to {a}?"], ["{a} 담당자는?"]),
    "Decision": (["Why did we decide {a}?"], ["{a} 결정 배경"]),
}
GENERIC = (["What did we decide about {a}?", "Tell me about {a}"], ["{a}에 대한 결정은?", "{a} 관련 내용"])
PAIR = (["How is {a} related to {b}?", "{a} and {b}"], ["{a}와(과) {b}의 관계는?", "{a}, {b} 관련 논의"])
KOREAN_SHARE = 0.4
MARKUP = re.compile(r"[\[\]()|]|\.md\b")


def askable(label: str, kind: str) -> bool:
    """A label a person would type: not a date, link markup or a file slug (``rahul-mehta``), not a folder
    word (``people``), and for the catch-all Concept kind a phrase of two or more words (single Korean
    morphemes like 유지 are extraction noise)."""
    if DATE_LIKE.match(label) or MARKUP.search(label) or ("-" in label and " " not in label):
        return False
    if kind in ("Person", "Place") and label.isascii() and label.islower():
        return False
    return kind != "Concept" or " " in label


def derive_queries(home_dir: Path, count: int, seed: int) -> list[dict[str, str]]:
    """``count`` questions from the catalog, read-only: entity labels (mentioned in at least two documents)
    and document titles, put into English or Korean templates (about 40% Korean), seeded."""
    import duckdb

    from engramrag.store import Home

    home = Home.at(home_dir)
    with duckdb.connect(str(home.catalog_path), read_only=True) as catalog:
        entities = catalog.execute(
            """
            SELECT label, mode(kind) AS kind, count(DISTINCT doc_id) AS docs
            FROM entities WHERE length(label) BETWEEN 2 AND 60 AND kind NOT IN ('Quantity', 'Document')
            GROUP BY label HAVING count(DISTINCT doc_id) >= 2 ORDER BY label
            """
        ).fetchall()
        titles = [
            title for (title,) in catalog.execute(
                "SELECT title FROM documents WHERE NOT gone AND title IS NOT NULL AND length(title) > 3 ORDER BY path"
            ).fetchall()
        ]
    entities = [(label, kind) for label, kind, _ in entities if askable(label, kind)]
    if not entities or not titles:
        raise SystemExit(f"{home_dir}: the catalog has no entities or titles to ask about")
    by_kind: dict[str, list[str]] = {}
    for label, kind in entities:
        by_kind.setdefault(kind, []).append(label)
    kinds = sorted(by_kind)
    rng = random.Random(seed)
    queries: list[dict[str, str]] = []
    seen: set[str] = set()
    shapes = ["kind", "kind", "kind", "decide", "title", "title", "pair"]

    def korean_for(*labels: str) -> bool:
        # A Korean label is mostly asked about in Korean, an English one mostly in English (about 40% overall).
        return rng.random() < (0.65 if any(HANGUL.search(label) for label in labels) else 0.15)

    while len(queries) < count:
        shape = rng.choice(shapes)
        if shape == "title":
            text = rng.choice(titles)
            item = {"query": text, "shape": "title", "lang": "ko" if HANGUL.search(text) else "en"}
        elif shape == "pair":
            first, second = rng.sample(kinds, 2)
            a, b = rng.choice(by_kind[first]), rng.choice(by_kind[second])
            korean = korean_for(a, b)
            template = rng.choice(PAIR[1] if korean else PAIR[0])
            item = {"query": template.format(a=a, b=b), "shape": f"pair:{first}+{second}",
                    "lang": "ko" if korean else "en"}
        else:
            kind = rng.choice(kinds)
            label = rng.choice(by_kind[kind])
            korean = korean_for(label)
            english, hangul = TEMPLATES.get(kind, GENERIC) if shape == "kind" else GENERIC
            template = rng.choice(hangul if korean else english)
            item = {"query": template.format(a=label), "shape": f"{shape}:{kind}", "lang": "ko" if korean else "en"}
        if item["query"] not in seen:
            seen.add(item["query"])
            queries.append(item)
    return queries


# --- asking ------------------------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile (share in 0..1) of the values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(share * len(ordered))))
    return ordered[rank - 1]


def summarise(latencies: list[float], timings: list[dict[str, float]]) -> dict[str, Any]:
    stages = {}
    for stage in [*STAGES, *sorted({key for t in timings for key in t} - set(STAGES))]:
        values = [t[stage] for t in timings if stage in t]
        if values:
            stages[stage] = round(statistics.median(values), 3)
    # Time inside search() no stage covers (ranking the hits, the seed list), and time outside it.
    untimed = [t["total"] - sum(v for k, v in t.items() if k != "total") for t in timings if "total" in t]
    outside = [ms - t.get("total", 0.0) for ms, t in zip(latencies, timings, strict=True)]
    if untimed:
        stages["untimed_in_search"] = round(statistics.median(untimed), 3)
    stages["outside_search"] = round(statistics.median(outside), 3)
    return {
        "count": len(latencies),
        "p50_ms": round(percentile(latencies, 0.50), 3),
        "p95_ms": round(percentile(latencies, 0.95), 3),
        "p99_ms": round(percentile(latencies, 0.99), 3),
        "max_ms": round(max(latencies), 3),
        "mean_ms": round(statistics.fmean(latencies), 3),
        "stage_median_ms": stages,
    }


def ask(home_dir: Path, queries: list[dict[str, str]]) -> dict[str, Any]:
    from engramrag.retrieve import Retriever
    from engramrag.store import Home

    rss_before = current_rss_mib()
    load_before_open = load()
    started = time.perf_counter()
    retriever = Retriever.open(Home.at(home_dir))
    open_s = time.perf_counter() - started
    opened = {
        "open_s": round(open_s, 3),
        "rss_before_open_mib": rss_before,
        "rss_after_open_mib": current_rss_mib(),
        "peak_rss_after_open_mib": peak_rss_mib(),
        "load": [load_before_open, load()],
        "embedder": retriever.embedder.name,
    }
    say(f"open: {open_s:.2f} s, RSS {rss_before} -> {opened['rss_after_open_mib']} MiB")
    try:
        for item in queries[:WARMUP]:
            retriever.search(item["query"], mode="full", k=FULL_K)
            retriever.search(item["query"], mode="auto_turn", k=AUTO_TURN_K)
        modes = {"full": FULL_K, "auto_turn": AUTO_TURN_K}
        latencies: dict[str, list[float]] = {mode: [] for mode in modes}
        timings: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
        counts: dict[str, dict[str, Any]] = {
            mode: {"results": {}, "with_warning": 0, "empty": 0} for mode in modes
        }
        per_query = []
        loads = [load()]
        cpu_before = cpu_seconds()
        phase_started = time.perf_counter()
        for number, item in enumerate(queries, 1):
            row: dict[str, Any] = {"query": item["query"]}
            for mode, k in modes.items():
                mark = time.perf_counter()
                answer = retriever.search(item["query"], mode=mode, k=k)
                ms = (time.perf_counter() - mark) * 1000
                latencies[mode].append(ms)
                timings[mode].append(dict(answer.timings_ms))
                tally = counts[mode]
                tally["results"][len(answer.results)] = tally["results"].get(len(answer.results), 0) + 1
                tally["with_warning"] += bool(answer.warnings)
                tally["empty"] += not answer.results
                row[mode] = {"ms": round(ms, 3), "hits": len(answer.results), "warnings": len(answer.warnings),
                             "top": answer.results[0].doc if answer.results else None}
            per_query.append(row)
            if number % 50 == 0:
                loads.append(load())
                say(f"  {number}/{len(queries)} questions, load {loads[-1]}")
        phase_s = time.perf_counter() - phase_started
        phase_cpu = cpu_seconds() - cpu_before
        loads.append(load())
    finally:
        retriever.close()
    result = {
        "opened": opened,
        "warmup_queries": WARMUP,
        "phase_s": round(phase_s, 2),
        "phase_cpu_s": round(phase_cpu, 2),
        "cpu_share": round(phase_cpu / phase_s, 3) if phase_s else None,
        "load_during": loads,
        "peak_rss_mib": peak_rss_mib(),
        "rss_after_queries_mib": current_rss_mib(),
        "modes": {},
        "per_query": per_query,
    }
    for mode, k in modes.items():
        tally = counts[mode]
        tally["results"] = {str(key): value for key, value in sorted(tally["results"].items())}
        result["modes"][mode] = {"k": k, **summarise(latencies[mode], timings[mode]), **tally}
    return result


# --- reporting ---------------------------------------------------------------------------------------------


def _mib(entry: dict[str, Any] | None) -> str:
    return "-" if not entry else f"{entry['disk_bytes'] / 2**20:.1f}"


def report(result: dict[str, Any]) -> None:
    build, index, graph = result["build"], result["index_rebuild"], result["graph"]
    asked, stores = result["search"], result["stores"]
    reused = " (reused home; figures of the build that made it)" if build.get("reused") else ""
    say("")
    say(f"## Search latency, {result['documents']:,} documents, {len(result['queries'])} questions")
    say("")
    say("| figure | value |")
    say("|---|---|")
    say(f"| build wall s | {build['build_s'] if build['build_s'] is not None else '-'}{reused} |")
    say(f"| build CPU s | {build.get('build_cpu_s')} |")
    say(f"| build peak RSS MiB | {build.get('build_peak_rss_mib')} |")
    say(f"| index rebuild s (IndexSummary.seconds) | {'not rebuilt' if index.get('skipped') else index['seconds']} |")
    say(f"| peak RSS after index rebuild MiB | {index['peak_rss_mib']} |")
    say(f"| graph: entities / passages / edges | {graph['entities']:,} / {graph['passages']:,} / "
        f"{graph['edges_total']:,} ({', '.join(f'{k} {v:,}' for k, v in graph['edges'].items())}) |")
    say(f"| stores du MiB: lancedb / ppr / catalog.duckdb / quads / home | {_mib(stores.get('lancedb/'))} / "
        f"{_mib(stores.get('ppr/'))} / {_mib(stores.get('catalog.duckdb'))} / {_mib(stores.get('quads/'))} / "
        f"{_mib(stores.get('total'))} |")
    opened = asked["opened"]
    say(f"| Retriever.open s | {opened['open_s']:.2f} |")
    say(f"| RSS before / after open MiB | {opened['rss_before_open_mib']} / {opened['rss_after_open_mib']} |")
    say(f"| query phase wall s / CPU share | {asked['phase_s']} / {asked['cpu_share']} |")
    say(f"| load average during queries (1, 5, 15 min) | {' -> '.join(str(v) for v in asked['load_during'])} |")
    say("")
    modes = asked["modes"]
    say("| mode | k | p50 ms | p95 ms | p99 ms | max ms | mean ms | results | with warning | aim p95 |")
    say("|---|---|---|---|---|---|---|---|---|---|")
    for mode, figures in modes.items():
        aim = result["aims"][mode]
        verdict = f"< {aim['p95_ms']:.0f}: {'MET' if aim['met'] else 'NOT MET'}"
        say(f"| {mode} | {figures['k']} | {figures['p50_ms']:.1f} | {figures['p95_ms']:.1f} | "
            f"{figures['p99_ms']:.1f} | {figures['max_ms']:.1f} | {figures['mean_ms']:.1f} | "
            f"{figures['results']} | {figures['with_warning']}/{figures['count']} | {verdict} |")
    say("")
    stages = sorted({stage for figures in modes.values() for stage in figures["stage_median_ms"]},
                    key=lambda s: (STAGES.index(s) if s in STAGES else len(STAGES), s))
    say("| median ms per stage | " + " | ".join(modes) + " |")
    say("|---|" + "---|" * len(modes))
    for stage in stages:
        say(f"| {stage} | " + " | ".join(
            "-" if (value := figures["stage_median_ms"].get(stage)) is None else f"{value:.2f}"
            for figures in modes.values()) + " |")
    say("")
    for mode, aim in result["aims"].items():
        qualifier = "" if aim["applies"] else f" (aims apply from {AIM_DOCUMENTS:,} documents)"
        say(f"aim: {mode} p95 {aim['p95_actual_ms']:.1f} ms < {aim['p95_ms']:.0f} ms: "
            f"{'MET' if aim['met'] else 'NOT MET'}{qualifier}")
    for mode, figures in modes.items():
        stage_ms = {k: v for k, v in figures["stage_median_ms"].items() if k in STAGES and k != "total"}
        if stage_ms:
            slow = max(stage_ms, key=stage_ms.get)
            total = figures["stage_median_ms"].get("total") or 0.0
            say(f"slowest stage, {mode}: {slow} {stage_ms[slow]:.1f} ms of a median total of {total:.1f} ms "
                f"({100 * stage_ms[slow] / total:.0f}%)" if total else f"slowest stage, {mode}: {slow}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", type=Path, default=REPOSITORY / "eval" / ".work" / "search-latency")
    parser.add_argument("--rebuild", action="store_true", help="build the home afresh even if one exists")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=REPOSITORY / "eval" / "results")
    parser.add_argument("--home", type=Path, help="measure this home as it is (built elsewhere; never rebuilt)")
    parser.add_argument("--vault", type=Path, help="the vault --home was built from (for its size in the result)")
    parser.add_argument("--no-index-rebuild", action="store_true",
                        help="search the published index instead of timing a rebuild of it first")
    args = parser.parse_args(argv)

    info = machine() if machine is not None else {"cpu_count": os.cpu_count()}
    say("machine: " + json.dumps({k: v for k, v in info.items() if k != "packages"}))
    say(f"load average at start: {load()}")
    work = args.work.resolve()
    if args.home is not None:
        home_dir = args.home.resolve()
        if not (home_dir / "ppr" / "CURRENT").is_file():
            raise SystemExit(f"{home_dir} has no published retrieval index: build it first (engram build)")
        vault_info = vault_of(args.vault)
        build = {"reused": True, "home": str(home_dir), "build_s": None,
                 "note": "built elsewhere; see that benchmark's figures"}
        say(f"home: measuring {home_dir} as it is")
    else:
        work.mkdir(parents=True, exist_ok=True)
        vault, vault_info = prepare_vault(work, args.documents, args.seed)
        home_dir = work / f"home-{args.documents}-s{args.seed}"
        build = build_home(vault, home_dir, args.documents, args.seed, args.rebuild)

    if args.no_index_rebuild:
        index = {"skipped": True, "seconds": None, "peak_rss_mib": peak_rss_mib()}
    else:
        say("index: rebuilding the retrieval index on its own (force=True) ...")
        index = rebuild_index(home_dir)
        say(f"index: {index['seconds']:.2f} s; {index['entities']:,} entities, {index['passages']:,} passages, "
            f"edges {index['edges']}")
    graph = manifest_counts(home_dir)
    stores = stores_of(home_dir)

    queries = derive_queries(home_dir, args.queries, args.seed)
    korean = sum(item["lang"] == "ko" for item in queries)
    say(f"questions: {len(queries)} ({korean} Korean), e.g. {[item['query'] for item in queries[:4]]}")
    asked = ask(home_dir, queries)

    aims = {}
    documents = graph["passages"] if args.home is not None else args.documents
    for mode, limit in aims_for(documents).items():
        actual = asked["modes"][mode]["p95_ms"]
        aims[mode] = {"p95_ms": limit, "p95_actual_ms": actual, "met": actual < limit,
                      "applies": documents >= AIM_DOCUMENTS}
    result = {
        "benchmark": "search-latency",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "documents": documents,
        "config": {"seed": args.seed, "queries": args.queries, "warmup": WARMUP, "extractor": "rules",
                   "embedder": asked["opened"]["embedder"], "full_k": FULL_K, "auto_turn_k": AUTO_TURN_K,
                   "work": str(work), "command": " ".join([Path(sys.executable).name, "-m", "eval.search_latency",
                                                           *(argv if argv is not None else sys.argv[1:])])},
        "machine": info,
        "vault": vault_info,
        "build": build,
        "index_rebuild": index,
        "graph": graph,
        "stores": stores,
        "aims": aims,
        "search": asked,
        "queries": queries,
    }
    report(result)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"search-latency-{datetime.now().strftime('%Y-%m-%d')}-{documents}.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    say(f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
