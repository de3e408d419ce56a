"""Temporal retrieval benchmark: does the product rank the note that holds the answer valid at the time asked
above notes that hold an outdated one?

The set is ``eval/sets/temporal_notes.py`` (one team's notes over January-September 2024, ~30% Korean; facts
that change, declared or not; questions of groups ``current``, ``still``, ``as_of``, ``replaced`` and
``unanswerable``, each answerable one with gold notes and ``stale`` notes that hold an outdated answer). Its
vault is written to ``<work>/temporal/vault`` and built into ``<work>/temporal/home-rules`` with
``eval.retrieval_benchmark.prepare_home`` (rules extractor; the home is reused while its marker names the same
vault digest, ``--rebuild`` starts afresh; the resolution overlay and the retrieval index are refreshed).

Every question is asked, in one process, in each configuration:

- ``full`` (mode full, the default ``RetrievalConfig``) and ``full_no_time`` (``temporal_reading`` off: the
  ranking ignores the question's time);
- ``auto_turn`` and ``auto_turn_no_time`` (mode auto_turn: at most 8 results, so R@10 counts 8);
- ``bm25_notes``: the keyword peer of ``eval.retrieval_benchmark`` (BM25 over whole notes).

Per configuration, overall and per group: R@1/5/10 over the answerable questions (some gold note in the top
k), MRR; the **stale-above-fresh rate** over the ``current``, ``still`` and ``replaced`` questions (the share
where a stale note ranks above every gold note in the top 10; a gold note outside the top 10 ranks below
everything) and the same rate over the ``as_of`` questions, reported apart; **as-of accuracy** (``as_of``
questions whose top result is gold); abstention AUROC (``confidence``, answerable = positive; for
``bm25_notes`` its top score per query token); p50/p95 latency. Paired per question: ``full`` against
``full_no_time`` and against ``bm25_notes``: sign tests on stale-above-fresh (+: questions where ``full`` has
none and the other has), exact McNemar on R@10. For ``full``, the ids of the questions that are
stale-above-fresh or miss at 10 are listed, and how the product read each group's time (intent counts).

    python -m eval.temporal [--work DIR] [--rebuild] [--limit N] [--out DIR] [--seed N]

``--limit N`` keeps the first N questions of each group. The result is ``<out>/temporal-YYYY-MM-DD.json``
(``-limitN`` added for a limited run), with every configuration's per-question rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval.retrieval_metrics import (
    distinct_ranked,
    format_p,
    markdown_table,
    mean,
    mean_percent,
    paired_binary,
    share_percent,
    sign_test,
)

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_WORK = REPOSITORY / "eval" / ".work"
DEFAULT_OUT = REPOSITORY / "eval" / "results"
TOP_K = 10
HIT_KS = (1, 5, 10)
SAF_GROUPS = ("current", "still", "replaced")  # stale-above-fresh rate; as_of is reported apart
GROUPS = ("current", "still", "as_of", "replaced", "unanswerable")
# configuration -> (retriever: "time" | "no_time" | None for the peer, search mode)
CONFIGS: dict[str, tuple[str | None, str | None]] = {
    "full": ("time", "full"),
    "full_no_time": ("no_time", "full"),
    "auto_turn": ("time", "auto_turn"),
    "auto_turn_no_time": ("no_time", "auto_turn"),
    "bm25_notes": (None, None),
}
COMPARISONS = (("full", "full_no_time"), ("full", "bm25_notes"))


def say(message: str = "") -> None:
    print(message, flush=True)


def note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- per-question metrics (pure) -----------------------------------------------------------------------------


def _best_place(ranked: Sequence[str], wanted: Iterable[str], k: int) -> int | None:
    """1-based place of the first wanted document among the top ``k`` distinct documents, None if absent."""
    wanted = set(wanted)
    for place, doc in enumerate(distinct_ranked(ranked)[:k], start=1):
        if doc in wanted:
            return place
    return None


def stale_above_fresh(ranked: Sequence[str], gold: Iterable[str], stale: Iterable[str], k: int = TOP_K) -> bool:
    """Whether some stale document ranks above every gold document within the top ``k`` distinct documents;
    a gold document outside the top ``k`` counts as ranked below everything. False when no stale document is
    in the top ``k``."""
    stale_place = _best_place(ranked, stale, k)
    if stale_place is None:
        return False
    gold_place = _best_place(ranked, gold, k)
    return gold_place is None or stale_place < gold_place


def hit_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> int:
    """1 if some gold document is among the top ``k`` distinct documents, else 0."""
    return int(_best_place(ranked, gold, k) is not None)


def temporal_fields(question: Any, ranked: Sequence[str], k: int = TOP_K) -> dict[str, Any]:
    """The temporal metrics of one ranking (None where they do not apply)."""
    answerable = bool(question.gold)
    stale = list(getattr(question, "stale", ()))
    fields: dict[str, Any] = {"stale": stale, "as_of": getattr(question, "as_of", None)}
    for cutoff in HIT_KS:
        fields[f"hit@{cutoff}"] = hit_at_k(ranked, question.gold, cutoff) if answerable else None
    fields["stale_above_fresh"] = (int(stale_above_fresh(ranked, question.gold, stale, k))
                                   if answerable and stale else None)
    fields["top1_gold"] = int(hit_at_k(ranked, question.gold, 1)) if answerable else None
    fields["best_gold_place"] = _best_place(ranked, question.gold, k) if answerable else None
    fields["best_stale_place"] = _best_place(ranked, stale, k) if stale else None
    return fields


def _rate(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    return share_percent(None if row[key] is None else bool(row[key]) for row in rows)


def temporal_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Hit@k (percent), MRR, stale-above-fresh rates and as-of accuracy, overall and per group."""
    answerable = [row for row in rows if row["answerable"]]

    def stats(subset: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {"n": len(subset),
                **{f"R@{k}": mean_percent([float(r[f"hit@{k}"]) for r in subset]) for k in HIT_KS},
                "mrr": mean(r["rr"] for r in subset),
                "stale_above_fresh_pct": _rate(subset, "stale_above_fresh")}

    saf_rows = [row for row in answerable if row["group"] in SAF_GROUPS]
    as_of_rows = [row for row in answerable if row["group"] == "as_of"]
    return {
        "overall": {**stats(answerable),
                    "stale_above_fresh_pct": _rate(saf_rows, "stale_above_fresh"),
                    "stale_above_fresh_n": len(saf_rows),
                    "as_of_stale_above_fresh_pct": _rate(as_of_rows, "stale_above_fresh"),
                    "as_of_accuracy_pct": _rate(as_of_rows, "top1_gold"),
                    "as_of_n": len(as_of_rows)},
        "by_group": {group: stats([r for r in answerable if r["group"] == group])
                     for group in GROUPS if any(r["group"] == group for r in answerable)},
        "by_language": {language: stats([r for r in answerable if r["language"] == language])
                        for language in sorted({r["language"] for r in answerable})},
    }


def reading_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per group, how many questions the product read with each temporal intent."""
    out: dict[str, Counter[str]] = {}
    for row in rows:
        reading = row.get("temporal") or {}
        out.setdefault(row["group"], Counter())[str(reading.get("intent", "-"))] += 1
    return {group: dict(sorted(counts.items())) for group, counts in out.items()}


def failures(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Ids of the answerable questions that are stale-above-fresh, and of those with no gold in the top 10."""
    return {"stale_above_fresh": [r["id"] for r in rows if r.get("stale_above_fresh")],
            "miss_at_10": [r["id"] for r in rows if r["answerable"] and not r[f"hit@{TOP_K}"]]}


# --- paired tests (pure) -----------------------------------------------------------------------------------


def paired_temporal(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """Sign tests on stale-above-fresh (current/still/replaced, and as_of apart; positive: the first has none
    where the second has) and exact McNemar on R@10 (b: the first hits, the second not), over the questions
    both runs asked."""
    a = {row["id"]: row for row in first["questions"]}
    b = {row["id"]: row for row in second["questions"]}
    ids = [qid for qid in a if qid in b]

    def saf(groups: Sequence[str]) -> dict[str, Any]:
        chosen = [i for i in ids if a[i]["group"] in groups and a[i]["stale_above_fresh"] is not None]
        return sign_test(b[i]["stale_above_fresh"] - a[i]["stale_above_fresh"] for i in chosen)

    answerable = [i for i in ids if a[i]["answerable"]]
    return {"first": first["config"], "second": second["config"],
            "stale_above_fresh_sign": saf(SAF_GROUPS), "as_of_stale_above_fresh_sign": saf(("as_of",)),
            f"R@{TOP_K}_mcnemar": paired_binary([a[i][f"hit@{TOP_K}"] for i in answerable],
                                                [b[i][f"hit@{TOP_K}"] for i in answerable])}


# --- asking ------------------------------------------------------------------------------------------------


def ask_product(retriever: Any, mode: str, question: Any, k: int = TOP_K) -> dict[str, Any]:
    """One search, as ``eval.retrieval_benchmark`` rows it, with the temporal metrics and what the product
    said about time: its reading of the question and the top hits' dates and supersessions."""
    from eval.musique import result_doc
    from eval.retrieval_benchmark import answer_row

    started = time.perf_counter()
    answer = retriever.search(question.question, mode=mode, k=k)
    row, ranked = answer_row(question, answer, 1000 * (time.perf_counter() - started), k)
    row.update({
        "temporal": dict(getattr(answer, "temporal", None) or {}),
        "top_hits": [{"doc": result_doc(hit), "valid_from": getattr(hit, "valid_from", None),
                      "superseded_by": len(getattr(hit, "superseded_by", None) or [])}
                     for hit in answer.results[:3]],
    })
    row.update(temporal_fields(question, ranked, k))
    return row


def run_config(name: str, questions: Sequence[Any], ask: Callable[[Any], dict[str, Any]], product: bool,
               progress: Callable[[str], None] = note) -> dict[str, Any]:
    from eval.retrieval_benchmark import summarise

    if questions:
        ask(questions[0])  # untimed warm-up
    rows = []
    for number, question in enumerate(questions, start=1):
        rows.append(ask(question))
        if number % 40 == 0 or number == len(questions):
            progress(f"  {name}: {number}/{len(questions)} questions")
    base = summarise(rows, product)
    return {"config": name, "mode": CONFIGS[name][1], "product": product,
            "temporal_reading": None if CONFIGS[name][0] is None else CONFIGS[name][0] == "time",
            "summary": {**temporal_summary(rows), "latency_ms": base["latency_ms"],
                        "abstention": base["abstention"], "fraction_recall": base["overall"],
                        "empty_rankings": base["empty_rankings"]},
            "readings": reading_counts(rows) if product else None,
            "failures": failures(rows),
            "questions": rows}


# --- reporting ---------------------------------------------------------------------------------------------


def _cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def results_table(runs: Mapping[str, Mapping[str, Any]]) -> str:
    headers = ["config", "R@1", "R@5", "R@10", "MRR", "stale>fresh %", "as_of stale>fresh %", "as-of acc %",
               "AUROC", "p50 ms", "p95 ms"]
    rows = []
    for name, run in runs.items():
        s = run["summary"]
        o = s["overall"]
        rows.append([name, o["R@1"], o["R@5"], o["R@10"], _cell(o["mrr"], 3), o["stale_above_fresh_pct"],
                     o["as_of_stale_above_fresh_pct"], o["as_of_accuracy_pct"], _cell(s["abstention"]["auroc"], 3),
                     s["latency_ms"]["p50"], s["latency_ms"]["p95"]])
    return markdown_table(headers, rows)


def groups_table(runs: Mapping[str, Mapping[str, Any]]) -> str:
    first = next(iter(runs.values()))["summary"]["by_group"]
    headers = ["config"]
    for group, stats in first.items():
        headers += [f"{group} (n={stats['n']}) R@5", f"{group} MRR", f"{group} stale>fresh %"]
    rows = []
    for name, run in runs.items():
        row: list[Any] = [name]
        for group in first:
            stats = run["summary"]["by_group"].get(group, {})
            row += [stats.get("R@5"), _cell(stats.get("mrr"), 3), stats.get("stale_above_fresh_pct")]
        rows.append(row)
    return markdown_table(headers, rows)


def tests_table(tests: Sequence[Mapping[str, Any]]) -> str:
    headers = ["comparison", "stale>fresh +", "−", "sign p", "as_of +", "−", "sign p", "R@10 b", "c", "McNemar p"]
    rows = []
    for test in tests:
        saf, as_of = test["stale_above_fresh_sign"], test["as_of_stale_above_fresh_sign"]
        mc = test[f"R@{TOP_K}_mcnemar"]
        rows.append([f"{test['first']} vs {test['second']}", saf["positive"], saf["negative"], format_p(saf["p"]),
                     as_of["positive"], as_of["negative"], format_p(as_of["p"]), mc["b"], mc["c"], format_p(mc["p"])])
    return markdown_table(headers, rows, right_align=lambda column: column > 0)


def readings_table(readings: Mapping[str, Mapping[str, int]]) -> str:
    intents = sorted({intent for counts in readings.values() for intent in counts})
    rows = [[group, *(readings[group].get(intent, 0) for intent in intents)] for group in GROUPS if group in readings]
    return markdown_table(["group", *intents], rows)


# --- the command line --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.temporal", description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="Folder of the set's vault and home.")
    parser.add_argument("--rebuild", action="store_true", help="Delete the home and build it from scratch.")
    parser.add_argument("--limit", type=int, help="Ask only the first N questions of each group.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Folder of the result file.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the generated set.")
    parser.add_argument("--set-config", nargs="*", default=[], metavar="FIELD=VALUE",
                        help="Override RetrievalConfig fields in every product configuration.")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        raise SystemExit("--limit must be at least 1")

    from eval.musique import machine, machine_line, retrieval_config
    from eval.retrieval_benchmark import (
        EXTRACTOR,
        NotesBM25,
        ask_peer,
        limit_per_group,
        open_retriever,
        prepare_home,
        retrieval_config_with,
    )
    from eval.sets.temporal_notes import build

    info = machine()
    say(f"machine: {machine_line(info)}")
    started = datetime.now(UTC)
    set_dir = args.work.resolve() / "temporal"
    note(f"[temporal] writing the vault to {set_dir / 'vault'}")
    retrieval_set = build(set_dir / "vault", seed=args.seed)
    questions = limit_per_group(retrieval_set.questions, args.limit)
    groups = Counter(q.group for q in questions)
    note(f"[temporal] {len(questions)} questions ({', '.join(f'{g} {groups[g]}' for g in GROUPS if groups[g])}), "
         f"digest {retrieval_set.digest}")
    home_dir = set_dir / f"home-{EXTRACTOR}"
    prepared = prepare_home(retrieval_set, home_dir, args.rebuild)

    configs = {
        "time": retrieval_config_with(args.set_config),
        "no_time": retrieval_config_with([*args.set_config, "temporal_reading=false"]),
    }
    retrievers: dict[str, Any] = {}
    opened: dict[str, float] = {}
    try:
        for key, config in configs.items():
            began = time.perf_counter()
            retrievers[key] = open_retriever(home_dir, config)
            opened[key] = round(time.perf_counter() - began, 2)
        notes = NotesBM25(retrieval_set.vault)
        runs: dict[str, dict[str, Any]] = {}
        for name, (key, mode) in CONFIGS.items():
            note(f"[temporal] asking {name}")
            if key is None:
                def ask(question: Any) -> dict[str, Any]:
                    row = ask_peer(notes, question, TOP_K)
                    row.update(temporal_fields(question, row[f"top{TOP_K}"]))
                    return row
            else:
                def ask(question: Any, retriever: Any = retrievers[key], mode: str = mode) -> dict[str, Any]:
                    return ask_product(retriever, mode, question)
            runs[name] = run_config(name, questions, ask, key is not None)
        used_config = retrieval_config(retrievers["time"])
    finally:
        for retriever in retrievers.values():
            close = getattr(retriever, "close", None)
            if callable(close):
                close()
    tests = [paired_temporal(runs[a], runs[b]) for a, b in COMPARISONS if a in runs and b in runs]

    say(f"\n### temporal: {len(questions)} questions "
        f"({', '.join(f'{g} {groups[g]}' for g in GROUPS if groups[g])}); {prepared['build'].get('build_s')} s build"
        + (" (reused)" if prepared["build"].get("reused") else "") + "\n")
    say(results_table(runs))
    say("\nPer group (answerable): R@5, MRR and stale-above-fresh\n")
    say(groups_table(runs))
    say("\nPaired tests (stale>fresh +/−: questions where full has no stale note above the gold and the other has / "
        "the reverse; R@10 b: full hits and the other not, c: the reverse; exact two-sided p)\n")
    say(tests_table(tests))
    say("\nHow `full` read the questions' time (intent per group)\n")
    say(readings_table(runs["full"]["readings"]))
    say(f"\nfull, stale above fresh: {', '.join(runs['full']['failures']['stale_above_fresh']) or '-'}")
    say(f"full, no gold in the top {TOP_K}: {', '.join(runs['full']['failures']['miss_at_10']) or '-'}")
    say(f"\nR@k: some gold note in the top k (percent, answerable questions); stale>fresh: share of current/still/"
        f"replaced questions with a stale note above every gold note in the top {TOP_K} (a gold note outside counts "
        "as below); as_of stale>fresh: the same over as_of questions; as-of acc: as_of questions whose top result is "
        "gold; AUROC: confidence (product) or top BM25 score per query token (bm25_notes); auto_turn returns at "
        "most 8 results.")
    say(f"machine: {machine_line(info)}")

    record = {
        "benchmark": "temporal",
        "started_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "configuration": {
            "configs": {name: {"retriever": key, "mode": mode} for name, (key, mode) in CONFIGS.items()},
            "extractor": EXTRACTOR, "k": TOP_K, "hit_ks": list(HIT_KS), "limit_per_group": args.limit,
            "seed": args.seed, "stale_above_fresh_groups": list(SAF_GROUPS),
            "retrieval_config": used_config, "bm25_notes": notes.settings,
            "timing": "time.perf_counter around each search call, after one untimed query per configuration",
        },
        "set": {"name": retrieval_set.name, "description": retrieval_set.description,
                "vault": str(retrieval_set.vault), "digest": retrieval_set.digest,
                "notes": notes.settings["notes"], "questions": len(questions), "groups": dict(groups),
                "languages": dict(Counter(q.language for q in questions))},
        "home": {**prepared, "open_s": opened},
        "runs": runs,
        "tests": tests,
        "machine": info,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / (f"temporal-{started.date().isoformat()}" + (f"-limit{args.limit}" if args.limit else "")
                         + ".json")
    target.write_text(json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    say(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
