"""Calibrate the search's confidence on the union of the evaluation sets, never on one.

The confidence is a logistic curve over one feature, the coverage (the share of the question's IDF mass that
the top documents hold together; ``engramrag/retrieve/fusion.py``). This asks every question of every set in
``full`` mode with the current ``RetrievalConfig``, reads the coverage each answer reports
(``answer.ranking["coverage"]``), and fits ``P(answerable) = 1 / (1 + exp(-slope * (coverage - midpoint)))`` by
maximum likelihood (``scipy.optimize.minimize``) on the pooled questions, each set weighted equally so the
largest set does not choose the curve. It prints the fitted slope and midpoint, and per set: the AUROC of the
coverage, and with the fitted curve and ``abstain_below`` the share of unanswerable questions flagged and of
answerable ones wrongly flagged. Leave-one-set-out fits show how the curve moves when a set is held out.

    python -m eval.calibrate_confidence [--sets musique,chat,team] [--work DIR] [--seed N]

The homes are the ones ``eval/retrieval_benchmark.py`` builds (reused when current).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

from eval.retrieval_benchmark import DEFAULT_WORK, EXTRACTOR, SETS, load_set, open_retriever, prepare_home
from eval.retrieval_metrics import auroc


def coverages(home: Path, questions: Sequence[Any]) -> list[tuple[float, bool]]:
    """(coverage, answerable) for each question, asked in full mode."""
    retriever = open_retriever(home)
    try:
        return [
            (float(retriever.search(q.question, mode="full", k=10).ranking.get("coverage", 0.0)), bool(q.gold))
            for q in questions
        ]
    finally:
        retriever.close()


def fit(samples: Mapping[str, Sequence[tuple[float, bool]]]) -> tuple[float, float]:
    """(slope, midpoint) of the logistic curve by weighted maximum likelihood, each set weighing the same."""
    xs, ys, ws = [], [], []
    for rows in samples.values():
        for x, y in rows:
            xs.append(x)
            ys.append(1.0 if y else 0.0)
            ws.append(1.0 / len(rows))
    x, y, w = np.asarray(xs), np.asarray(ys), np.asarray(ws)

    def loss(params: np.ndarray) -> float:
        slope, midpoint = params
        z = slope * (x - midpoint)
        # log(1 + exp(-z)) for positives, log(1 + exp(z)) for negatives, computed stably
        return float(np.sum(w * np.where(y > 0, np.logaddexp(0.0, -z), np.logaddexp(0.0, z))))

    result = minimize(loss, x0=np.array([10.0, 0.5]), method="Nelder-Mead")
    slope, midpoint = result.x
    return float(slope), float(midpoint)


def flagged(rows: Sequence[tuple[float, bool]], slope: float, midpoint: float, below: float) -> dict[str, Any]:
    confidence = [1.0 / (1.0 + math.exp(-slope * (x - midpoint))) for x, _ in rows]
    unanswerable = [c for c, (_, y) in zip(confidence, rows, strict=True) if not y]
    answerable = [c for c, (_, y) in zip(confidence, rows, strict=True) if y]
    return {
        "auroc": auroc([x for x, y in rows if y], [x for x, y in rows if not y]),
        "unanswerable_flagged_%": round(100 * sum(c < below for c in unanswerable) / max(1, len(unanswerable)), 1),
        "answerable_flagged_%": round(100 * sum(c < below for c in answerable) / max(1, len(answerable)), 1),
        "questions": len(rows),
    }


def main(argv: list[str] | None = None) -> int:
    from engramrag.retrieve.config import RetrievalConfig

    parser = argparse.ArgumentParser(prog="python -m eval.calibrate_confidence", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.sets.split(",") if name.strip()]
    samples: dict[str, list[tuple[float, bool]]] = {}
    for name in names:
        retrieval_set = load_set(name, args.work / name / "vault", args.seed)
        home = args.work / name / f"home-{EXTRACTOR}"
        prepare_home(retrieval_set, home, rebuild=False)
        samples[name] = coverages(home, retrieval_set.questions)
    below = RetrievalConfig().abstain_below
    slope, midpoint = fit(samples)
    print(f"pooled fit over {', '.join(names)} (each set weighted equally): slope {slope:.2f}, midpoint {midpoint:.3f}")
    current = RetrievalConfig()
    report: dict[str, Any] = {"fit": {"slope": slope, "midpoint": midpoint}, "sets": {}, "held_out": {}}
    for name, rows in samples.items():
        fitted = flagged(rows, slope, midpoint, below)
        shipped = flagged(rows, current.confidence_slope, current.confidence_midpoint, below)
        report["sets"][name] = {"fitted": fitted, "shipped": shipped}
        print(f"  {name}: AUROC {fitted['auroc']:.3f}; fitted curve flags {fitted['unanswerable_flagged_%']}% of "
              f"unanswerable, {fitted['answerable_flagged_%']}% of answerable; shipped curve (slope "
              f"{current.confidence_slope}, midpoint {current.confidence_midpoint}) "
              f"{shipped['unanswerable_flagged_%']}% / {shipped['answerable_flagged_%']}%")
    if len(samples) > 1:
        for held in samples:
            rest = {name: rows for name, rows in samples.items() if name != held}
            s, m = fit(rest)
            outcome = flagged(samples[held], s, m, below)
            report["held_out"][held] = {"slope": s, "midpoint": m, **outcome}
            print(f"  fitted without {held}: slope {s:.2f}, midpoint {m:.3f}; on {held} it flags "
                  f"{outcome['unanswerable_flagged_%']}% of unanswerable, {outcome['answerable_flagged_%']}% of "
                  "answerable")
    report["retrieval_config"] = dataclasses.asdict(current)
    print(json.dumps(report["fit"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
