"""MuSiQue retrieval benchmark: does the graph help find every passage a multi-hop question needs?

The 100-question MuSiQue subset and its fixed 1,890-passage corpus (/work/shared/data/musique, see SOURCE.md
there) are turned into a vault with one Markdown file per passage (``passages/{i:04d}-{slug}.md``, content
``# {title}\\n\\n{text}\\n``). For each extractor (``rules``, and ``replay`` of the precomputed GPT-3.5 OpenIE
extractions) the vault is built into its own home with ``pipelines.build.run_build``; homes live under the
work folder and are reused while the vault and the extractor are unchanged (``--rebuild`` starts afresh).

Each question is then asked through ``engramrag.retrieve.Retriever`` in four configurations: ``full`` (all
legs and PageRank), ``graph_off``, ``bm25_only`` and ``dense_only``. A question's gold documents are its
distinct supporting paragraphs, matched to corpus passages on (title, text) and so to vault files. Per
question it records recall@2/5/10 and ALL@10 (every gold passage in the top 10) and the query's wall time;
it reports means overall and per hop type, p50/p95 latency, and exact paired tests of ``full`` against
``graph_off`` and ``bm25_only`` (McNemar on ALL@10, sign test on recall@5).

    python -m eval.musique [--extractors rules,replay] [--configs full,graph_off,bm25_only,dense_only]
                           [--limit N] [--work DIR] [--rebuild] [--out DIR] [--dry-run]

The result is written to ``<out>/musique-YYYY-MM-DD.json`` (``-limitN`` added for a ``--limit`` run).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from eval.retrieval_metrics import (
    aggregate,
    all_at_k,
    distinct_ranked,
    format_p,
    hop_type,
    markdown_table,
    paired_binary,
    percentile,
    recall_at_k,
    sign_test,
)

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("ENGRAM_MUSIQUE_DATA", "/work/shared/data/musique"))
DEFAULT_WORK = REPOSITORY / "eval" / ".work" / "musique"
DEFAULT_OUT = REPOSITORY / "eval" / "results"
REPLAY_FILE_NAME = "openie_gpt35.json"

EXTRACTORS = ("rules", "replay")
CONFIGS: dict[str, str | None] = {  # configuration name -> Retriever.search(ablation=...)
    "full": None,
    "auto_turn": None,  # mode auto_turn: no embeddings, a smaller neighbourhood, at most 8 results
    "graph_off": "graph_off",
    "bm25_only": "bm25_only",
    "dense_only": "dense_only",
}
COMPARISONS = (("full", "graph_off"), ("full", "bm25_only"))
MODE = "full"  # every configuration but auto_turn


def mode_of(config: str) -> str:
    return "auto_turn" if config == "auto_turn" else MODE
TOP_K = 10
RECALL_KS = (2, 5, 10)
METRICS = (*(f"recall@{k}" for k in RECALL_KS), f"all@{TOP_K}")
SLUG_CHARS = 40
BUILD_MARKER = "musique-build.json"


def say(message: str = "") -> None:
    print(message, flush=True)


def note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- data and vault ----------------------------------------------------------------------------------------


def load_questions(data: Path) -> list[dict[str, Any]]:
    return json.loads((data / "questions.json").read_text(encoding="utf-8"))


def load_corpus(data: Path) -> list[dict[str, str]]:
    return json.loads((data / "corpus.json").read_text(encoding="utf-8"))


def slugify(title: str, limit: int = SLUG_CHARS) -> str:
    """An ASCII file-name slug: accents dropped, anything else non-alphanumeric (dashes, other scripts)
    becomes '-'; at most ``limit`` characters, never empty ('passage')."""
    decomposed = unicodedata.normalize("NFKD", title)
    folded = "".join(c if c.isascii() else "" if unicodedata.combining(c) else "-" for c in decomposed).lower()
    slug = re.sub(r"[^a-z0-9]+", "-", folded).strip("-")
    slug = slug[:limit].rstrip("-")
    return slug or "passage"


def passage_path(index: int, title: str) -> str:
    """Vault-relative path of the ``index``-th corpus passage; the index keeps repeated titles apart."""
    return f"passages/{index:04d}-{slugify(title)}.md"


def passage_markdown(title: str, text: str) -> str:
    return f"# {title}\n\n{text}\n"


def vault_plan(corpus: Sequence[Mapping[str, str]]) -> dict[str, tuple[str, str]]:
    """Relative path -> (title, text) for every corpus passage, in corpus order."""
    plan: dict[str, tuple[str, str]] = {}
    for index, passage in enumerate(corpus):
        path = passage_path(index, passage["title"])
        if path in plan:  # cannot happen while the index is in the name; guard the invariant anyway
            raise ValueError(f"two passages map to {path}")
        plan[path] = (passage["title"], passage["text"])
    return plan


def write_vault(corpus: Sequence[Mapping[str, str]], vault: Path) -> dict[str, tuple[str, str]]:
    """Write the corpus as a vault (only files whose content differs, so a rebuild finds nothing changed) and
    remove stray Markdown files under ``passages/``. Returns the relative path -> (title, text) mapping."""
    plan = vault_plan(corpus)
    folder = vault / "passages"
    folder.mkdir(parents=True, exist_ok=True)
    for relative, (title, text) in plan.items():
        target = vault / relative
        content = passage_markdown(title, text).encode("utf-8")
        if not target.is_file() or target.read_bytes() != content:
            target.write_bytes(content)
    for stray in folder.glob("*.md"):
        if f"passages/{stray.name}" not in plan:
            stray.unlink()
    return plan


def vault_digest(plan: Mapping[str, tuple[str, str]]) -> str:
    """A digest of the vault's paths and contents, so a home built from another vault is not reused."""
    digest = hashlib.sha256()
    for relative in sorted(plan):
        digest.update(relative.encode() + b"\0" + passage_markdown(*plan[relative]).encode("utf-8") + b"\0")
    return digest.hexdigest()[:16]


def passage_index(plan: Mapping[str, tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(title, text) -> relative path. Repeated titles are fine; a repeated (title, text) would make gold
    ambiguous and is refused."""
    index: dict[tuple[str, str], str] = {}
    for relative, key in plan.items():
        if key in index:
            raise ValueError(f"passage {key[0]!r} appears twice ({index[key]}, {relative}); gold would be ambiguous")
        index[key] = relative
    return index


def gold_documents(question: Mapping[str, Any], index: Mapping[tuple[str, str], str]) -> list[str]:
    """The question's distinct supporting paragraphs as vault documents, sorted."""
    gold = set()
    for paragraph in question["paragraphs"]:
        if not paragraph.get("is_supporting"):
            continue
        key = (paragraph["title"], paragraph["paragraph_text"])
        if key not in index:
            raise KeyError(f"{question['id']}: supporting paragraph {paragraph['title']!r} is not in the corpus")
        gold.add(index[key])
    if not gold:
        raise ValueError(f"{question['id']}: no supporting paragraph")
    return sorted(gold)


def check_gold(questions: Sequence[Mapping[str, Any]], index: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    """Map every question's gold; counts for the record (raises if a supporting paragraph is missing)."""
    golds = {q["id"]: gold_documents(q, index) for q in questions}
    supporting = sum(1 for q in questions for p in q["paragraphs"] if p.get("is_supporting"))
    return {
        "questions": len(questions),
        "supporting_paragraphs": supporting,
        "gold_documents": sum(len(g) for g in golds.values()),
        "distinct_gold_documents": len({doc for g in golds.values() for doc in g}),
        "gold_per_question": dict(sorted(Counter(len(g) for g in golds.values()).items())),
        "hop_types": dict(sorted(Counter(hop_type(q["id"]) for q in questions).items())),
        "golds": golds,
    }


def check_vault_parses(vault: Path, plan: Mapping[str, tuple[str, str]]) -> dict[str, Any]:
    """Parse every file with the vault reader: none rejected, and the title it reads is the passage title."""
    from engramrag.vault.config import VaultConfig
    from engramrag.vault.errors import DocumentRejected
    from engramrag.vault.markdown import parse_document

    config = VaultConfig()
    rejected, other_titles = [], []
    for relative, (title, _) in plan.items():
        try:
            document = parse_document((vault / relative).read_bytes(), relative, config)
        except DocumentRejected as error:
            rejected.append(str(error))
            continue
        if document.title != title.strip():
            other_titles.append(f"{relative}: {title!r} read as {document.title!r}")
    return {"files": len(plan), "rejected": rejected, "title_differs": other_titles}


def check_replay_coverage(vault: Path, plan: Mapping[str, tuple[str, str]], replay_file: Path) -> dict[str, Any]:
    """How many vault files the replay extractor finds a precomputed extraction for (it matches on text)."""
    try:
        from engramrag.extract.replay import ReplayExtractor
        from engramrag.vault.config import VaultConfig
        from engramrag.vault.markdown import parse_document

        extractor = ReplayExtractor(replay_file)
        config = VaultConfig()
        missing = [relative for relative in plan
                   if extractor.lookup(parse_document((vault / relative).read_bytes(), relative, config)) is None]
    except Exception as error:  # the replay backend is optional for a dry run; say why it was not checked
        return {"checked": False, "reason": f"{type(error).__name__}: {error}"}
    return {"checked": True, "files": len(plan), "missing": missing}


# --- building the homes ------------------------------------------------------------------------------------


def extractor_identity(name: str) -> str | None:
    """The id the catalog records for the extractor (name/version[/model]); None if it cannot be made here."""
    try:
        from engramrag.extract.registry import extractor_id, make_extractor

        return extractor_id(make_extractor(name))
    except Exception as error:  # an extractor that cannot be constructed fails loudly in the build instead
        note(f"note: extractor {name!r} could not be identified ({type(error).__name__}: {error})")
        return None


def build_home(
    name: str, vault: Path, home_dir: Path, digest: str, rebuild: bool,
    marker_name: str = BUILD_MARKER, size_note: str = "1,890 passages take a few minutes",
) -> dict[str, Any]:
    """Build (or reuse) the home of one extractor. A home is reused when its marker (``marker_name`` in the
    home) names the same vault digest and extractor id; otherwise it is built with run_build (incrementally
    into an existing home, from scratch after --rebuild)."""
    from engramrag.store import Home
    from pipelines.build import run_build

    identity = extractor_identity(name)
    marker = home_dir / marker_name
    if rebuild and home_dir.exists():
        shutil.rmtree(home_dir)
    if marker.is_file():
        previous = json.loads(marker.read_text(encoding="utf-8"))
        if previous.get("vault_digest") == digest and previous.get("extractor_id") == identity:
            note(f"[{name}] reusing the home built {previous.get('built_at')} ({previous.get('build_s')} s)")
            return {**previous, "reused": True, "home": str(home_dir)}
        marker.unlink()
    kind = "incremental" if home_dir.exists() else "full"
    note(f"[{name}] building {vault} into {home_dir} ({kind})" + (f"; {size_note}" if size_note else ""))
    started = time.perf_counter()
    outcome = run_build(Home.at(home_dir), vault, extractor=name)
    seconds = time.perf_counter() - started
    if not outcome.success:
        raise RuntimeError(f"the {name} build failed (run {outcome.run_id}): " + "\n".join(outcome.errors or ["?"]))
    failed_checks = sorted(check for check, passed in outcome.checks.items() if not passed)
    if failed_checks:
        note(f"[{name}] WARNING: asset checks failed: {', '.join(failed_checks)}")
    record = {
        "extractor": name,
        "extractor_id": identity,
        "vault_digest": digest,
        "build_s": round(seconds, 2),
        "build_kind": kind,
        "run_id": outcome.run_id,
        "buckets": len(outcome.buckets),
        "checks": outcome.checks,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    marker.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    note(f"[{name}] built in {seconds:.1f} s")
    return {**record, "reused": False, "home": str(home_dir)}


# --- asking the questions ----------------------------------------------------------------------------------


def result_doc(result: Any) -> str:
    """The vault-relative document a retrieval result names (``.doc``; a mapping's ``"doc"`` is accepted)."""
    doc = result["doc"] if isinstance(result, Mapping) else result.doc
    return str(doc).removeprefix("./")


def retrieval_config(retriever: Any) -> dict[str, Any] | None:
    config = getattr(retriever, "config", None)
    try:
        return dataclasses.asdict(config)
    except TypeError:
        return None if config is None else {"repr": repr(config)}


def evaluate(
    retriever: Any,
    questions: Sequence[Mapping[str, Any]],
    golds: Mapping[str, list[str]],
    ablation: str | None,
    known_docs: Iterable[str],
    mode: str = MODE,
) -> dict[str, Any]:
    """Ask every question in one configuration; per-question metrics and wall times."""
    known = set(known_docs)
    rows, unknown, warnings = [], Counter(), Counter()
    for question in questions:
        started = time.perf_counter()
        answer = retriever.search(question["question"], mode=mode, k=TOP_K, ablation=ablation)
        elapsed_ms = 1000 * (time.perf_counter() - started)
        ranked = distinct_ranked(result_doc(r) for r in answer.results)
        warnings.update(str(w) for w in getattr(answer, "warnings", None) or [])
        unknown.update(doc for doc in ranked[:TOP_K] if doc not in known)
        gold = golds[question["id"]]
        rows.append({
            "id": question["id"],
            "hop": hop_type(question["id"]),
            "gold": gold,
            "top10": ranked[:TOP_K],
            **{f"recall@{k}": recall_at_k(ranked, gold, k) for k in RECALL_KS},
            f"all@{TOP_K}": all_at_k(ranked, gold, TOP_K),
            "ms": round(elapsed_ms, 2),
        })
    times = [row["ms"] for row in rows]
    return {
        "aggregates": aggregate(rows, METRICS),
        "latency_ms": {
            "p50": _round(percentile(times, 50)),
            "p95": _round(percentile(times, 95)),
            "mean": _round(sum(times) / len(times)) if times else None,
        },
        "short_rankings": sum(1 for row in rows if len(row["top10"]) < TOP_K),
        "unknown_docs": {"count": sum(unknown.values()), "examples": [doc for doc, _ in unknown.most_common(5)]},
        "warnings": dict(warnings.most_common(10)),  # what the retriever said about its answers, with counts
        "questions": rows,
    }


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def refresh_index(home_dir: Path, index_config: Any = None) -> dict[str, Any]:
    """Bring a reused home up to the current pipeline: the resolution overlay (its automatic merges change the
    graph), then the retrieval index (a no-op when nothing it is built from changed, ``index_config`` included)."""
    from assets.partitions import BUCKET_COUNT
    from engramrag.embed.registry import make_embedder
    from engramrag.lifecycle.resolution import refresh_candidates, refresh_overlay
    from engramrag.retrieve.index_build import build_retrieval_index
    from engramrag.store import Home
    from engramrag.vault.config import VaultConfig

    home, config = Home.at(home_dir), VaultConfig(bucket_count=BUCKET_COUNT)
    embedder = make_embedder(os.environ.get("ENGRAM_EMBEDDER") or "hash")
    candidates = refresh_candidates(home, config, embedder)
    overlay, _ = refresh_overlay(home, config)
    summary = build_retrieval_index(home, config, embedder, index_config)
    if summary.rebuilt:
        note(f"[{home_dir.name}] retrieval index rebuilt in {summary.seconds:.1f} s (format, settings or clusters "
             f"changed); {overlay.clusters} clusters join {overlay.merged_keys} of {overlay.keys} entity keys")
    return {
        **dataclasses.asdict(summary),
        "candidates": candidates.candidates,
        "automatic_merges": candidates.automatic,
        "clusters": overlay.clusters,
        "merged_keys": overlay.merged_keys,
    }


def run_extractor(
    name: str, home_dir: Path, configs: Sequence[str], questions: Sequence[Mapping[str, Any]],
    golds: Mapping[str, list[str]], known_docs: Sequence[str],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Open the extractor's home once and run every configuration on it."""
    from engramrag.retrieve import Retriever
    from engramrag.store import Home

    # A reused home may hold an index of an older format or settings: bring it up to date (a no-op when current).
    refreshed = refresh_index(home_dir)
    started = time.perf_counter()
    retriever = Retriever.open(Home.at(home_dir))
    opened_s = time.perf_counter() - started
    info = {"open_s": round(opened_s, 2), "index": refreshed, "retrieval_config": retrieval_config(retriever)}
    runs = []
    try:
        # one untimed query first, so lazy loading is not billed to the first configuration's latency
        retriever.search(questions[0]["question"], mode=MODE, k=TOP_K, ablation=None)
        for config in configs:
            note(f"[{name}] {config}: {len(questions)} questions")
            run = evaluate(retriever, questions, golds, CONFIGS[config], known_docs, mode_of(config))
            overall = run["aggregates"]["overall"]
            note(f"[{name}] {config}: R@5 {overall['recall@5']:.1f}, ALL@10 {overall['all@10']:.1f}, "
                 f"p50 {run['latency_ms']['p50']} ms")
            for warning, count in run["warnings"].items():
                note(f"[{name}] {config}: retriever warning ({count}x): {warning}")
            if run["unknown_docs"]["count"]:
                note(f"[{name}] {config}: WARNING: {run['unknown_docs']['count']} returned documents are not vault "
                     f"passages, e.g. {run['unknown_docs']['examples'][:3]}")
            runs.append({"configuration": f"{name}/{config}", "extractor": name, "config": config,
                         "mode": mode_of(config), "ablation": CONFIGS[config], **run})
    finally:
        close = getattr(retriever, "close", None)
        if callable(close):
            close()
    return info, runs


# --- paired tests and reporting ----------------------------------------------------------------------------


def paired_tests(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per extractor, full against graph_off and bm25_only: McNemar on ALL@10, sign test on recall@5
    (positive: the first configuration is better)."""
    by_key = {(run["extractor"], run["config"]): run for run in runs}
    tests = []
    for extractor in dict.fromkeys(run["extractor"] for run in runs):
        for first, second in COMPARISONS:
            if (extractor, first) not in by_key or (extractor, second) not in by_key:
                continue
            a = {row["id"]: row for row in by_key[extractor, first]["questions"]}
            b = {row["id"]: row for row in by_key[extractor, second]["questions"]}
            ids = [qid for qid in a if qid in b]
            tests.append({
                "extractor": extractor,
                "first": first,
                "second": second,
                f"all@{TOP_K}_mcnemar": paired_binary([a[i][f"all@{TOP_K}"] for i in ids],
                                                      [b[i][f"all@{TOP_K}"] for i in ids]),
                "recall@5_sign": sign_test(a[i]["recall@5"] - b[i]["recall@5"] for i in ids),
            })
    return tests


def results_table(runs: Sequence[Mapping[str, Any]]) -> str:
    hops = sorted({hop for run in runs for hop in run["aggregates"]["by_hop"]})
    headers = ["configuration", "R@2", "R@5", "R@10", "ALL@10"]
    for hop in hops:
        headers += [f"{hop} ALL@10", f"{hop} R@5"]
    headers += ["p50 ms", "p95 ms"]
    rows = []
    for run in runs:
        overall, by_hop = run["aggregates"]["overall"], run["aggregates"]["by_hop"]
        row: list[Any] = [run["configuration"], *(overall[m] for m in METRICS)]
        for hop in hops:
            row += [by_hop.get(hop, {}).get(f"all@{TOP_K}"), by_hop.get(hop, {}).get("recall@5")]
        row += [run["latency_ms"]["p50"], run["latency_ms"]["p95"]]
        rows.append(row)
    return markdown_table(headers, rows)


def tests_table(tests: Sequence[Mapping[str, Any]]) -> str:
    headers = ["extractor", "comparison", "ALL@10 b", "ALL@10 c", "McNemar p", "R@5 +", "R@5 −", "R@5 ties", "sign p"]
    rows = []
    for test in tests:
        mcnemar, sign = test[f"all@{TOP_K}_mcnemar"], test["recall@5_sign"]
        rows.append([test["extractor"], f"{test['first']} vs {test['second']}", mcnemar["b"], mcnemar["c"],
                     format_p(mcnemar["p"]), sign["positive"], sign["negative"], sign["ties"], format_p(sign["p"])])
    return markdown_table(headers, rows, right_align=lambda column: column > 1)


def machine() -> dict[str, Any]:
    """The build benchmark's machine description, with the retrieval packages added."""
    from eval.build_benchmark import machine as build_machine

    info = build_machine()
    for package in ("igraph", "numpy"):
        try:
            info["packages"][package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            info["packages"][package] = None
    return info


def machine_line(info: Mapping[str, Any]) -> str:
    return (f"{info['platform']}; {info['cpu_count']} CPUs ({info.get('cpu_model', '?')}); "
            f"{info.get('memory_gib', '?')} GiB RAM; Python {info['python']}")


# --- command line ------------------------------------------------------------------------------------------


def choices(text: str, allowed: Sequence[str], what: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    wrong = [part for part in chosen if part not in allowed]
    if wrong or not chosen:
        raise SystemExit(f"--{what}: choose from {', '.join(allowed)} (got {text!r})")
    return list(dict.fromkeys(chosen))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.musique", description=__doc__.split("\n\n")[0])
    parser.add_argument("--extractors", default=",".join(EXTRACTORS), help="Comma-separated: rules,replay.")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="Comma-separated: " + ",".join(CONFIGS) + ".")
    parser.add_argument("--limit", type=int, help="Ask only the first N questions (the corpus stays whole).")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="Folder of the vault and the homes.")
    parser.add_argument("--rebuild", action="store_true", help="Delete the homes and build them from scratch.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Folder of the result file.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="The MuSiQue data folder.")
    parser.add_argument("--replay-file", type=Path, help=f"Extractions for replay (default <data>/{REPLAY_FILE_NAME}).")
    parser.add_argument("--dry-run", action="store_true",
                        help="Only write the vault and check the gold mapping; build and ask nothing.")
    args = parser.parse_args(argv)
    extractors = choices(args.extractors, EXTRACTORS, "extractors")
    configs = choices(args.configs, list(CONFIGS), "configs")
    if args.limit is not None and args.limit < 1:
        raise SystemExit("--limit must be at least 1")
    replay_file = (args.replay_file or args.data / REPLAY_FILE_NAME).resolve()
    if "replay" in extractors and not args.dry_run and not replay_file.is_file():
        raise SystemExit(f"replay needs the extraction file {replay_file}; pass --replay-file")

    info = machine()
    say(f"machine: {machine_line(info)}")
    started = datetime.now(UTC)
    questions = load_questions(args.data)[: args.limit]
    corpus = load_corpus(args.data)
    work = args.work.resolve()
    vault = work / "vault"
    plan = write_vault(corpus, vault)
    digest = vault_digest(plan)
    gold = check_gold(questions, passage_index(plan))
    golds = gold.pop("golds")
    say(f"vault: {len(plan):,} passages in {vault} (digest {digest}); {gold['questions']} questions, "
        f"{gold['supporting_paragraphs']} supporting paragraphs -> {gold['gold_documents']} gold documents "
        f"({gold['distinct_gold_documents']} distinct); hop types {gold['hop_types']}")

    if args.dry_run:
        parsed = check_vault_parses(vault, plan)
        say(f"vault reader: {parsed['files']:,} files, {len(parsed['rejected'])} rejected, "
            f"{len(parsed['title_differs'])} read with another title")
        for line in (parsed["rejected"] + parsed["title_differs"])[:10]:
            say(f"    {line}")
        missing: list[str] = []
        if "replay" in extractors:
            coverage = check_replay_coverage(vault, plan, replay_file)
            if coverage["checked"]:
                missing = coverage["missing"]
                say(f"replay: {coverage['files'] - len(missing):,} of {coverage['files']:,} files have a precomputed "
                    f"extraction in {replay_file}" + (f"; missing e.g. {missing[:3]}" if missing else ""))
            else:
                say(f"replay: coverage not checked ({coverage['reason']})")
        say("dry run: nothing built or asked")
        return 1 if parsed["rejected"] or missing else 0

    builds, retrieval, runs = {}, {}, []
    for name in extractors:
        if name == "replay":
            os.environ["ENGRAM_REPLAY_FILE"] = str(replay_file)
        home_dir = work / f"home-{name}"
        builds[name] = build_home(name, vault, home_dir, digest, args.rebuild)
        retrieval[name], extractor_runs = run_extractor(name, home_dir, configs, questions, golds, list(plan))
        runs += extractor_runs

    tests = paired_tests(runs)
    counts = ", ".join(f"{hop} n={n}" for hop, n in gold["hop_types"].items())
    say(f"\nMuSiQue retrieval, {len(questions)} questions ({counts}); mode {MODE} (auto_turn: its own mode, "
        f"at most 8 results), top {TOP_K}; percent, "
        "latency per query in ms\n")
    say(results_table(runs))
    if tests:
        say("\nPaired tests (b: the first configuration has ALL@10 and the second not, c: the reverse; "
            "R@5 +/−: questions where the first has the higher / lower recall@5; exact two-sided p)\n")
        say(tests_table(tests))
    say("\nbuilds: " + "; ".join(f"{name} {b['build_s']} s" + (" (reused)" if b["reused"] else "")
                                 for name, b in builds.items()))
    say(f"machine: {machine_line(info)}")

    record = {
        "benchmark": "musique-retrieval",
        "started_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "configuration": {
            "data": str(args.data),
            "replay_file": str(replay_file) if "replay" in extractors else None,
            "limit": args.limit,
            "extractors": {name: builds[name].get("extractor_id") for name in extractors},
            "configs": {name: CONFIGS[name] for name in configs},
            "mode": MODE,
            "k": TOP_K,
            "recall_ks": list(RECALL_KS),
            "retrieval": retrieval,
            "vault": {"passages": len(plan), "digest": digest, "layout": "passages/{i:04d}-{slug(title)}.md",
                      "content": "# {title}\\n\\n{text}\\n"},
            "timing": "time.perf_counter around each Retriever.search call, after one untimed warm-up query per home",
        },
        "data": gold,
        "builds": builds,
        "runs": runs,
        "tests": tests,
        "machine": info,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = f"-limit{args.limit}" if args.limit else ""
    target = args.out / f"musique-{started.date().isoformat()}{suffix}.json"
    target.write_text(json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    say(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
