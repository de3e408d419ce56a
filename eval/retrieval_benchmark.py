"""Retrieval benchmark over several evaluation sets: the product's configurations against a keyword peer.

For each evaluation set (``musique``, ``chat``, ``team``; see ``eval/sets/``) the set's vault is written under
``<work>/<set>/vault`` and built into ``<work>/<set>/home-rules`` with ``pipelines.build.run_build`` and the
rules extractor; the home is reused while its marker (``<set>-build.json``) names the same vault digest and
extractor (``--rebuild`` starts afresh). The resolution overlay and the retrieval index are then refreshed
as ``eval/musique.py`` does. The MuSiQue vault and home are the ones ``eval/musique.py`` uses, so either
harness reuses the other's build.

Then every question is asked, in one process and on the same questions, in each configuration:

- ``full`` (mode full), ``auto_turn`` (mode auto_turn: at most 8 results, so R@10 counts 8),
  ``graph_off``, ``bm25_chunks`` (ablation ``bm25_only``: LanceDB BM25 over chunks), ``dense_only`` and any
  further ablation that ``engramrag.retrieve.retriever.ABLATIONS`` names (under its own name);
- ``bm25_notes``: the simplest peer, BM25 (``bm25s``, Lucene variant, k1 1.5, b 0.75) over whole notes, each
  vault ``.md`` file's full text including its front matter, tokenised like the product's full-text index
  (``engramrag.vectors.fts_text.fts_text(text).split()``: lower-cased words, CJK runs as character bigrams),
  the query tokenised the same way; no stemming and no stop words.

Per configuration and set, over the answerable questions: recall@1/2/5/10, ALL@10 (every gold document in the
top 10), MRR, overall and per group; p50/p95 latency over all questions. For the product configurations,
abstention: the AUROC of the answer's ``confidence`` separating answerable (positive) from unanswerable
questions, the share of unanswerable questions flagged ``no_relevant_memory`` and of answerable ones wrongly
flagged (``-`` while the retriever does not report them). For ``bm25_notes`` the AUROC of its top score divided
by the number of query tokens (unknown tokens included, so a question whose words the vault lacks scores low),
as a reference. Paired tests per set, over answerable questions: ``full`` against the better keyword peer
(``bm25_notes`` or ``bm25_chunks``, by MRR on that set) and against ``graph_off``: sign tests on recall@5 and
on reciprocal rank, exact McNemar on ALL@10.

    python -m eval.retrieval_benchmark [--sets musique,chat,team] [--configs full,bm25_notes,...] [--limit N]
        [--work DIR] [--rebuild] [--out DIR] [--seed N] [--set-config field=value ...]

``--limit N`` keeps the first N questions of each group. ``--set-config`` overrides a ``RetrievalConfig``
field (int, float, bool or none parsed). The result is ``<out>/retrieval-YYYY-MM-DD[-<sets>][-limitN].json``
(the sets named only when not all of them ran). From Python, :func:`evaluate_set` runs configurations on an
opened retriever, e.g. to sweep ``RetrievalConfig`` values with :func:`open_retriever`.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from eval.musique import build_home, choices, machine, machine_line, refresh_index, result_doc, retrieval_config
from eval.retrieval_metrics import (
    all_at_k,
    auroc,
    distinct_ranked,
    format_p,
    markdown_table,
    mean,
    mean_percent,
    paired_binary,
    percentile,
    recall_at_k,
    reciprocal_rank,
    share_percent,
    sign_test,
)

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_WORK = REPOSITORY / "eval" / ".work"
DEFAULT_OUT = REPOSITORY / "eval" / "results"
SETS: dict[str, str] = {  # set name -> module with build_set(vault, seed=0) -> RetrievalSet
    "musique": "eval.sets.musique_set",
    "chat": "eval.sets.chat_logs",
    "team": "eval.sets.team_notes",
}
EXTRACTOR = "rules"
TOP_K = 10
RECALL_KS = (1, 2, 5, 10)
PERCENT_METRICS = (*(f"recall@{k}" for k in RECALL_KS), f"all@{TOP_K}")
PEER = "bm25_notes"
KEYWORD_PEERS = ("bm25_notes", "bm25_chunks")
ABLATION_NAMES = {"bm25_only": "bm25_chunks"}  # ablation -> configuration name, where they differ
BM25_K1, BM25_B, BM25_METHOD = 1.5, 0.75, "lucene"
_NUMBER = re.compile(r"\d+(?:\.\d+)?")  # warnings are counted with their numbers masked


def say(message: str = "") -> None:
    print(message, flush=True)


def note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- configurations ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    name: str
    mode: str | None  # Retriever.search(mode=...); None for the peer
    ablation: str | None
    product: bool  # asked through the Retriever (else: the bm25_notes peer)


def configurations() -> dict[str, Config]:
    """Every configuration, in report order: full, auto_turn, one per ablation the retriever knows (read at
    run time, so a new ablation is measured without a change here), then the peer."""
    from engramrag.retrieve.retriever import ABLATIONS

    configs = {"full": Config("full", "full", None, True), "auto_turn": Config("auto_turn", "auto_turn", None, True)}
    for ablation in ABLATIONS:
        name = ABLATION_NAMES.get(ablation, ablation)
        configs[name] = Config(name, "full", ablation, True)
    configs[PEER] = Config(PEER, None, None, False)
    return configs


def parse_value(text: str) -> Any:
    """A --set-config value: true/false (yes/no, on/off), none, an int, a float, else the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def retrieval_config_with(overrides: Iterable[str] | Mapping[str, Any] = (), kind: Any = None) -> Any:
    """A ``RetrievalConfig`` (or ``kind``, e.g. ``IndexConfig``) with fields overridden, from ``field=value``
    strings or a mapping. An int given for a float field becomes a float; an unknown field is refused."""
    from engramrag.retrieve.config import RetrievalConfig

    target = kind or RetrievalConfig

    if isinstance(overrides, Mapping):
        pairs = dict(overrides)
    else:
        pairs = {}
        for item in overrides:
            field_name, separator, value = item.partition("=")
            if not separator or not field_name.strip():
                raise ValueError(f"--set-config wants field=value, not {item!r}")
            pairs[field_name.strip()] = parse_value(value)
    fields = {f.name: f for f in dataclasses.fields(target)}
    unknown = sorted(set(pairs) - set(fields))
    if unknown:
        raise ValueError(f"{target.__name__} has no field {', '.join(unknown)}; fields: {', '.join(fields)}")
    for name, value in pairs.items():
        annotation = str(fields[name].type)
        if annotation.startswith("float") and isinstance(value, int) and not isinstance(value, bool):
            pairs[name] = float(value)
    return dataclasses.replace(target(), **pairs)


def open_retriever(home_dir: Path, config: Any = None) -> Any:
    """``Retriever.open`` on a built home, with a ``RetrievalConfig`` (None: the defaults)."""
    from engramrag.retrieve import Retriever
    from engramrag.store import Home

    return Retriever.open(Home.at(home_dir), config=config)


# --- the keyword peer --------------------------------------------------------------------------------------


def peer_tokens(text: str) -> list[str]:
    """The product's full-text tokens: words lower-cased, CJK runs as character bigrams."""
    from engramrag.vectors.fts_text import fts_text

    return fts_text(text).split()


def vault_notes(vault: Path) -> list[str]:
    """Vault-relative paths of the Markdown files, outside hidden folders, sorted."""
    return sorted(
        path.relative_to(vault).as_posix()
        for path in vault.rglob("*.md")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(vault).parts)
    )


class NotesBM25:
    """BM25 over whole notes (``bm25s``): every vault ``.md`` file's full text, front matter included."""

    def __init__(self, vault: Path, k1: float = BM25_K1, b: float = BM25_B, method: str = BM25_METHOD) -> None:
        import bm25s

        started = time.perf_counter()
        self.docs = vault_notes(vault)
        corpus = [peer_tokens((vault / doc).read_text(encoding="utf-8", errors="replace")) for doc in self.docs]
        self.model = bm25s.BM25(k1=k1, b=b, method=method)
        if self.docs:
            self.model.index(corpus, show_progress=False)
        self.settings = {"library": "bm25s", "version": metadata.version("bm25s"), "method": method, "k1": k1,
                         "b": b, "notes": len(self.docs), "tokens": sum(len(t) for t in corpus),
                         "text": "each .md file's full text, front matter included",
                         "tokeniser": "engramrag.vectors.fts_text.fts_text(text).split()",
                         "index_s": round(time.perf_counter() - started, 3)}

    def search(self, query: str, k: int = TOP_K) -> tuple[list[tuple[str, float]], int]:
        """The top ``k`` notes with a positive score, best first (ties in path order), and the number of
        query tokens."""
        import numpy as np

        tokens = peer_tokens(query)
        if not tokens or not self.docs:
            return [], len(tokens)
        scores = self.model.get_scores(tokens)
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self.docs[i], float(scores[i])) for i in order if scores[i] > 0], len(tokens)


# --- asking the questions ----------------------------------------------------------------------------------


def question_row(question: Any, ranked: Sequence[str], k: int) -> dict[str, Any]:
    """The metrics of one ranking; recall and friends are None for an unanswerable question."""
    gold = list(question.gold)
    answerable = bool(gold)
    row: dict[str, Any] = {
        "id": question.id,
        "group": question.group,
        "language": getattr(question, "language", "en"),
        "answerable": answerable,
        "gold": gold,
        f"top{k}": list(ranked[:k]),
    }
    for cutoff in RECALL_KS:
        row[f"recall@{cutoff}"] = recall_at_k(ranked, gold, cutoff) if answerable else None
    row[f"all@{TOP_K}"] = all_at_k(ranked, gold, TOP_K) if answerable else None
    row["rr"] = reciprocal_rank(ranked, gold) if answerable else None
    return row


def ask_product(retriever: Any, config: Config, question: Any, k: int) -> tuple[dict[str, Any], list[str]]:
    started = time.perf_counter()
    answer = retriever.search(question.question, mode=config.mode, k=k, ablation=config.ablation)
    row, _ = answer_row(question, answer, 1000 * (time.perf_counter() - started), k)
    return row, [_NUMBER.sub("N", str(w)) for w in getattr(answer, "warnings", None) or []]


def answer_row(question: Any, answer: Any, elapsed_ms: float, k: int) -> tuple[dict[str, Any], list[str]]:
    """The row of one product answer (recall, rank, confidence, latency) and its ranked documents."""
    ranked = distinct_ranked(result_doc(hit) for hit in answer.results)
    row = question_row(question, ranked, k)
    confidence = getattr(answer, "confidence", None)
    flagged = getattr(answer, "no_relevant_memory", None)
    row.update({
        "results": len(answer.results),
        "top_score": float(answer.results[0].score) if answer.results else None,
        "confidence": None if confidence is None else float(confidence),
        "no_relevant_memory": None if flagged is None else bool(flagged),
        "ms": round(elapsed_ms, 3),
    })
    return row, ranked


def ask_peer(notes: NotesBM25, question: Any, k: int) -> dict[str, Any]:
    started = time.perf_counter()
    hits, token_count = notes.search(question.question, k)
    elapsed_ms = 1000 * (time.perf_counter() - started)
    row = question_row(question, [doc for doc, _ in hits], k)
    top = hits[0][1] if hits else 0.0
    row.update({
        "results": len(hits),
        "top_score": top,
        "query_tokens": token_count,
        "confidence": top / token_count if token_count else 0.0,  # the peer's abstention score, see the docstring
        "no_relevant_memory": None,
        "ms": round(elapsed_ms, 3),
    })
    return row


def summarise(rows: Sequence[Mapping[str, Any]], product: bool) -> dict[str, Any]:
    """Recall, ALL@10 (percent) and MRR (0..1) over the answerable rows, overall and per group; latency over
    all rows; abstention (AUROC of ``confidence``, answerable = positive, and the no_relevant_memory shares)."""
    answerable = [row for row in rows if row["answerable"]]
    unanswerable = [row for row in rows if not row["answerable"]]

    def stats(subset: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {"n": len(subset), **{m: mean_percent([float(r[m]) for r in subset]) for m in PERCENT_METRICS},
                "mrr": mean(r["rr"] for r in subset)}

    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in answerable:
        groups.setdefault(row["group"], []).append(row)
    times = [row["ms"] for row in rows]
    positive = [row["confidence"] for row in answerable if row["confidence"] is not None]
    negative = [row["confidence"] for row in unanswerable if row["confidence"] is not None]
    return {
        "overall": stats(answerable),
        "by_group": {group: stats(groups[group]) for group in sorted(groups)},
        "by_language": {
            language: stats([r for r in answerable if r["language"] == language])
            for language in sorted({r["language"] for r in answerable})
        },
        "latency_ms": {
            "p50": _round(percentile(times, 50)),
            "p95": _round(percentile(times, 95)),
            "mean": _round(mean(times)),
        },
        "abstention": {
            "score": "confidence" if product else "top BM25 score / query tokens",
            "answerable": len(answerable),
            "unanswerable": len(unanswerable),
            "confidence_reported": len(positive) + len(negative),
            "auroc": _round(auroc(positive, negative), 4),
            "mean_score_answerable": _round(mean(positive), 4),
            "mean_score_unanswerable": _round(mean(negative), 4),
            "no_relevant_memory_unanswerable_pct": share_percent(r["no_relevant_memory"] for r in unanswerable),
            "no_relevant_memory_answerable_pct": share_percent(r["no_relevant_memory"] for r in answerable),
        },
        "empty_rankings": sum(1 for row in rows if not row["results"]),
    }


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def evaluate_set(
    retriever: Any,
    questions: Sequence[Any],
    configs: Sequence[str] = ("full", PEER),
    *,
    vault: Path | None = None,
    notes: NotesBM25 | None = None,
    k: int = TOP_K,
    warm_up: bool = True,
    progress: Callable[[str], None] | None = note,
) -> dict[str, dict[str, Any]]:
    """Ask every question in each configuration (names of :func:`configurations`) and return, per
    configuration, ``{"config", "mode", "ablation", "product", "summary", "warnings", "unknown_docs",
    "questions": [per-question rows]}``. ``questions`` have ``id, question, gold, group, language`` (a
    ``eval.sets.base.Question``); ``retriever`` is an opened ``Retriever`` (None if only the peer runs);
    the peer needs ``notes`` or the ``vault`` to index. One untimed query per configuration goes first, so
    lazy loading is not billed to its first question."""
    known = configurations()
    wrong = [name for name in configs if name not in known]
    if wrong:
        raise ValueError(f"unknown configuration {', '.join(wrong)}; known: {', '.join(known)}")
    if PEER in configs and notes is None:
        if vault is None:
            raise ValueError(f"{PEER} needs the vault (or a NotesBM25)")
        notes = NotesBM25(vault)
    if any(known[name].product for name in configs) and retriever is None:
        raise ValueError("the product configurations need a retriever")
    known_docs = set(notes.docs) if notes is not None else set(vault_notes(vault)) if vault is not None else None
    runs: dict[str, dict[str, Any]] = {}
    for name in configs:
        config = known[name]
        rows, warnings = [], Counter()
        if warm_up and questions:
            if config.product:
                retriever.search(questions[0].question, mode=config.mode, k=k, ablation=config.ablation)
            else:
                notes.search(questions[0].question, k)
        for question in questions:
            if config.product:
                row, said = ask_product(retriever, config, question, k)
                warnings.update(said)
            else:
                row = ask_peer(notes, question, k)
            rows.append(row)
        unknown = Counter(doc for row in rows for doc in row[f"top{k}"] if known_docs is not None
                          and doc not in known_docs)
        summary = summarise(rows, config.product)
        runs[name] = {
            "config": name,
            "mode": config.mode,
            "ablation": config.ablation,
            "product": config.product,
            "summary": summary,
            "warnings": dict(warnings.most_common(10)),
            "unknown_docs": {"count": sum(unknown.values()), "examples": [doc for doc, _ in unknown.most_common(5)]},
            "questions": rows,
        }
        if progress:
            overall = summary["overall"]
            progress(f"  {name}: R@5 {_cell(overall['recall@5'])}, MRR {_cell(overall['mrr'], 3)}, "
                     f"AUROC {_cell(summary['abstention']['auroc'], 3)}, p50 {summary['latency_ms']['p50']} ms")
    return runs


def _cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


# --- paired tests ------------------------------------------------------------------------------------------


def best_keyword_peer(runs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The keyword peer with the higher MRR (bm25_notes on a tie); None if neither ran."""
    present = [name for name in KEYWORD_PEERS if name in runs]
    if not present:
        return None
    return max(present, key=lambda name: (runs[name]["summary"]["overall"]["mrr"] or 0.0, -KEYWORD_PEERS.index(name)))


def paired_test(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """Over the answerable questions both runs asked: sign tests on recall@5 and reciprocal rank (positive:
    the first is better), exact McNemar on ALL@10 (b: the first has it and the second not)."""
    a = {row["id"]: row for row in first["questions"] if row["answerable"]}
    b = {row["id"]: row for row in second["questions"] if row["answerable"]}
    ids = [qid for qid in a if qid in b]
    return {
        "first": first["config"],
        "second": second["config"],
        "n": len(ids),
        "recall@5_sign": sign_test(a[i]["recall@5"] - b[i]["recall@5"] for i in ids),
        "rr_sign": sign_test(a[i]["rr"] - b[i]["rr"] for i in ids),
        f"all@{TOP_K}_mcnemar": paired_binary([a[i][f"all@{TOP_K}"] for i in ids], [b[i][f"all@{TOP_K}"] for i in ids]),
    }


def paired_tests(runs: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """full against the best keyword peer and against graph_off, where those ran."""
    if "full" not in runs:
        return []
    tests = []
    peer = best_keyword_peer(runs)
    if peer is not None:
        tests.append({"role": "best keyword peer", **paired_test(runs["full"], runs[peer])})
    if "graph_off" in runs:
        tests.append({"role": "graph off", **paired_test(runs["full"], runs["graph_off"])})
    return tests


# --- reporting ---------------------------------------------------------------------------------------------


def results_table(runs: Mapping[str, Mapping[str, Any]]) -> str:
    headers = ["config", "R@1", "R@2", "R@5", "R@10", "ALL@10", "MRR", "AUROC", "NRM unans %", "NRM ans %",
               "p50 ms", "p95 ms"]
    rows = []
    for name, run in runs.items():
        summary = run["summary"]
        overall, abstention = summary["overall"], summary["abstention"]
        rows.append([
            name, *(overall[m] for m in PERCENT_METRICS), _cell(overall["mrr"], 3), _cell(abstention["auroc"], 3),
            abstention["no_relevant_memory_unanswerable_pct"], abstention["no_relevant_memory_answerable_pct"],
            summary["latency_ms"]["p50"], summary["latency_ms"]["p95"],
        ])
    return markdown_table(headers, rows)


def groups_table(runs: Mapping[str, Mapping[str, Any]]) -> str:
    groups: dict[str, int] = {}
    for run in runs.values():
        for group, stats in run["summary"]["by_group"].items():
            groups[group] = stats["n"]
    headers = ["config"]
    for group in sorted(groups):
        headers += [f"{group} (n={groups[group]}) R@5", f"{group} MRR"]
    rows = []
    for name, run in runs.items():
        row: list[Any] = [name]
        for group in sorted(groups):
            stats = run["summary"]["by_group"].get(group, {})
            row += [stats.get("recall@5"), _cell(stats.get("mrr"), 3)]
        rows.append(row)
    return markdown_table(headers, rows)


def tests_table(tests: Sequence[Mapping[str, Any]]) -> str:
    headers = ["set", "comparison", "n", "R@5 +", "R@5 −", "R@5 sign p", "RR +", "RR −", "RR sign p",
               "ALL@10 b", "ALL@10 c", "McNemar p"]
    rows = []
    for test in tests:
        recall, rr, mcnemar = test["recall@5_sign"], test["rr_sign"], test[f"all@{TOP_K}_mcnemar"]
        rows.append([test.get("set", "-"), f"{test['first']} vs {test['second']}", test["n"],
                     recall["positive"], recall["negative"], format_p(recall["p"]),
                     rr["positive"], rr["negative"], format_p(rr["p"]),
                     mcnemar["b"], mcnemar["c"], format_p(mcnemar["p"])])
    return markdown_table(headers, rows, right_align=lambda column: column > 1)


# --- sets, homes, the command line -------------------------------------------------------------------------


def limit_per_group(questions: Sequence[Any], limit: int | None) -> list[Any]:
    """The first ``limit`` questions of each group, in set order (all of them for None)."""
    if limit is None:
        return list(questions)
    taken: Counter[str] = Counter()
    kept = []
    for question in questions:
        if taken[question.group] < limit:
            taken[question.group] += 1
            kept.append(question)
    return kept


def set_module(name: str) -> Any:
    try:
        return importlib.import_module(SETS[name])
    except ModuleNotFoundError as error:
        raise SystemExit(f"set {name!r}: its module {SETS[name]} is not there ({error})") from error


def load_set(name: str, vault: Path, seed: int) -> Any:
    return set_module(name).build_set(vault, seed=seed)


def prepare_home(retrieval_set: Any, home_dir: Path, rebuild: bool, index_config: Any = None) -> dict[str, Any]:
    """Build or reuse the set's home, then refresh the resolution overlay and the retrieval index (built with
    ``index_config`` when given)."""
    notes = len(vault_notes(retrieval_set.vault))
    build = build_home(EXTRACTOR, retrieval_set.vault, home_dir, retrieval_set.digest, rebuild,
                       marker_name=f"{retrieval_set.name}-build.json", size_note=f"{notes:,} notes")
    return {"build": build, "index": refresh_index(home_dir, index_config)}


def run_set(
    name: str, work: Path, configs: Sequence[str], seed: int, limit: int | None, rebuild: bool, config: Any,
    index_config: Any = None,
) -> dict[str, Any]:
    set_dir = work / name
    retrieval_set = load_set(name, set_dir / "vault", seed)
    questions = limit_per_group(retrieval_set.questions, limit)
    groups = Counter(q.group for q in questions)
    note(f"[{name}] {len(questions)} questions ({', '.join(f'{g} {n}' for g, n in sorted(groups.items()))}) "
         f"over {retrieval_set.vault}")
    record: dict[str, Any] = {
        "description": retrieval_set.description,
        "vault": str(retrieval_set.vault),
        "digest": retrieval_set.digest,
        "notes": len(vault_notes(retrieval_set.vault)),
        "questions": len(questions),
        "answerable": sum(1 for q in questions if q.gold),
        "groups": dict(sorted(groups.items())),
        "languages": dict(sorted(Counter(getattr(q, "language", "en") for q in questions).items())),
    }
    product = [c for c in configs if configurations()[c].product]
    retriever = None
    if product:
        record.update(prepare_home(retrieval_set, set_dir / f"home-{EXTRACTOR}", rebuild, index_config))
        started = time.perf_counter()
        retriever = open_retriever(set_dir / f"home-{EXTRACTOR}", config)
        record["open_s"] = round(time.perf_counter() - started, 2)
        record["retrieval_config"] = retrieval_config(retriever)
    notes = NotesBM25(retrieval_set.vault) if PEER in configs else None
    record["bm25_notes"] = notes.settings if notes is not None else None
    try:
        runs = evaluate_set(retriever, questions, configs, notes=notes, vault=retrieval_set.vault)
    finally:
        close = getattr(retriever, "close", None)
        if callable(close):
            close()
    record["runs"] = runs
    record["tests"] = [{"set": name, **test} for test in paired_tests(runs)]
    for run in runs.values():
        for warning, count in run["warnings"].items():
            note(f"[{name}] {run['config']}: retriever warning ({count}x): {warning}")
        if run["unknown_docs"]["count"]:
            note(f"[{name}] {run['config']}: WARNING: {run['unknown_docs']['count']} returned documents are not "
                 f"vault notes, e.g. {run['unknown_docs']['examples'][:3]}")
    return record


def main(argv: list[str] | None = None) -> int:
    known = configurations()
    parser = argparse.ArgumentParser(prog="python -m eval.retrieval_benchmark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS), help="Comma-separated: " + ",".join(SETS) + ".")
    parser.add_argument("--configs", default=",".join(known), help="Comma-separated: " + ",".join(known) + ".")
    parser.add_argument("--limit", type=int, help="Ask only the first N questions of each group.")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="Folder of the sets' vaults and homes.")
    parser.add_argument("--rebuild", action="store_true", help="Delete the homes and build them from scratch.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Folder of the result file.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the generated sets.")
    parser.add_argument("--set-config", action="append", default=[], metavar="FIELD=VALUE",
                        help="Override a RetrievalConfig field (repeatable).")
    parser.add_argument("--index-config", action="append", default=[], metavar="FIELD=VALUE",
                        help="Build the index with an IndexConfig field overridden (repeatable); a later run "
                        "without it rebuilds the default index.")
    args = parser.parse_args(argv)
    sets = choices(args.sets, list(SETS), "sets")
    configs = choices(args.configs, list(known), "configs")
    if args.limit is not None and args.limit < 1:
        raise SystemExit("--limit must be at least 1")
    try:
        config = retrieval_config_with(args.set_config)
    except (ValueError, TypeError) as error:
        raise SystemExit(f"--set-config: {error}") from error
    from engramrag.retrieve.config import IndexConfig

    try:
        index_config = retrieval_config_with(args.index_config, IndexConfig) if args.index_config else None
    except (ValueError, TypeError) as error:
        raise SystemExit(f"--index-config: {error}") from error

    for name in sets:  # every set's module first, so a missing one does not end the run after a long build
        set_module(name)
    info = machine()
    info["packages"]["bm25s"] = _version("bm25s")
    say(f"machine: {machine_line(info)}")
    started = datetime.now(UTC)
    work = args.work.resolve()
    results = {name: run_set(name, work, configs, args.seed, args.limit, args.rebuild, config, index_config)
               for name in sets}

    for name, result in results.items():
        counts = ", ".join(f"{group} {n}" for group, n in result["groups"].items())
        say(f"\n### {name}: {result['questions']} questions ({counts}); {result['notes']:,} notes\n")
        say(results_table(result["runs"]))
        say("\nPer group (answerable): R@5 and MRR\n")
        say(groups_table(result["runs"]))
    tests = [test for result in results.values() for test in result["tests"]]
    if tests:
        say("\nPaired tests over answerable questions (+/−: questions where full is better / worse; b: full has "
            "ALL@10 and the other not, c: the reverse; exact two-sided p)\n")
        say(tests_table(tests))
    say("\nR@k, ALL@10 in percent and MRR over answerable questions; AUROC: confidence (product) or top BM25 "
        "score per query token (bm25_notes), answerable = positive; NRM: share flagged no_relevant_memory; "
        "latency per query in ms; auto_turn returns at most 8 results.")
    say("builds: " + "; ".join(
        f"{name} {r['build']['build_s']} s" + (" (reused)" if r['build'].get("reused") else "")
        for name, r in results.items() if "build" in r))
    say(f"machine: {machine_line(info)}")

    record = {
        "benchmark": "retrieval",
        "started_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "configuration": {
            "sets": sets,
            "configs": {name: dataclasses.asdict(known[name]) for name in configs},
            "extractor": EXTRACTOR,
            "embedder": os.environ.get("ENGRAM_EMBEDDER") or "hash",
            "k": TOP_K,
            "recall_ks": list(RECALL_KS),
            "limit_per_group": args.limit,
            "seed": args.seed,
            "set_config": args.set_config,
            "index_config": args.index_config,
            "retrieval_config": dataclasses.asdict(config),
            "bm25_notes": {"library": "bm25s", "method": BM25_METHOD, "k1": BM25_K1, "b": BM25_B,
                           "text": "each .md file's full text, front matter included",
                           "tokeniser": "engramrag.vectors.fts_text.fts_text(text).split()",
                           "abstention_score": "top score / number of query tokens (unknown tokens included)"},
            "timing": "time.perf_counter around each search call, after one untimed query per configuration",
        },
        "sets": results,
        "machine": info,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if sets == list(SETS) else "-" + "-".join(sets)
    suffix += f"-limit{args.limit}" if args.limit else ""
    target = args.out / f"retrieval-{started.date().isoformat()}{suffix}.json"
    target.write_text(json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    say(f"wrote {target}")
    return 0


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
