"""Which approximate vector index the triple and chunk tables get: build time, query latency and recall, side by side.

``VectorStore.refresh_indexes`` gives every table of at least ``ANN_MIN_ROWS`` rows an IVF_HNSW_SQ index the first
time it is large enough (the consistency pass refreshes it); at 10,000 notes that index took most of the full
build's ``retrieval_index`` step. This benchmark copies one table of a built home to a temporary folder (the home
is never written), then for each index setting builds the index ``--repeats`` times (a build is randomised: the
partitions' k-means and the HNSW levels) and times ``--queries`` searches of ``--k`` rows, each a stored vector
with noise added; recall is the share of the exact top ``k`` (cosine, numpy over every row) the index returns.

    python -m eval.vector_index_choice --home H [--table triples] [--queries 100] [--repeats 2] [--query-ef 0 80]

The figures and the machine are printed and written to ``<out>/vector-index-YYYY-MM-DD.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
from lancedb.index import HnswSq, IvfSq

from engramrag.vectors.lancedb_store import ANN_EF_CONSTRUCTION, ANN_QUERY_EF, ANN_ROWS_PER_PARTITION, ann_config
from eval.build_benchmark import machine


def settings(rows: int) -> dict[str, Any]:
    """The index settings compared: the one in use, LanceDB's default build width, a narrower one, and IVF_SQ."""
    partitions = max(1, rows // ANN_ROWS_PER_PARTITION)
    return {
        f"ivf_hnsw_sq ef_construction={ANN_EF_CONSTRUCTION} (in use)": ann_config(rows),
        "ivf_hnsw_sq ef_construction=300 (LanceDB default)": HnswSq(distance_type="cosine", num_partitions=partitions),
        "ivf_hnsw_sq ef_construction=50": HnswSq(distance_type="cosine", num_partitions=partitions, ef_construction=50),
        "ivf_sq sqrt(rows) partitions": IvfSq(distance_type="cosine", num_partitions=max(1, int(rows**0.5))),
    }


def exact_top(matrix: np.ndarray, queries: np.ndarray, k: int) -> list[set[int]]:
    unit = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    found = []
    for query in queries:
        scores = unit @ (query / max(float(np.linalg.norm(query)), 1e-12))
        found.append(set(np.argpartition(-scores, k)[:k].tolist()))
    return found


def measure(
    table: Any, queries: np.ndarray, truth: list[set[int]], ids: dict[str, int], k: int, ef: int | None
) -> dict[str, float]:
    """Latency and recall of ``queries``; ``ef``: the HNSW search width (None: LanceDB's default)."""
    latencies, recalls = [], []
    for query, exact in zip(queries, truth, strict=True):
        started = time.perf_counter()
        search = table.search(query).distance_type("cosine").limit(k)
        hits = (search.ef(ef) if ef else search).select(["row_id", "_distance"]).to_list()
        latencies.append(time.perf_counter() - started)
        recalls.append(len({ids[hit["row_id"]] for hit in hits} & exact) / k)
    return {
        "p50_ms": round(float(np.median(latencies)) * 1000, 2),
        "p95_ms": round(float(np.percentile(latencies, 95)) * 1000, 2),
        f"recall_at_{k}": round(float(np.mean(recalls)), 3),
    }


def run(
    home: Path, table_name: str, query_count: int, repeats: int, k: int, widths: list[int]
) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="engram-vector-index-"))
    try:
        shutil.copytree(home / "lancedb" / f"{table_name}.lance", scratch / f"{table_name}.lance")
        table = lancedb.connect(str(scratch)).open_table(table_name)
        for index in table.list_indices():
            if list(index.columns) == ["vector"]:
                table.drop_index(index.name)
        data = table.to_arrow().select(["row_id", "vector"])
        rows = data.num_rows
        matrix = data.column("vector").combine_chunks().flatten().to_numpy().reshape(rows, -1).astype(np.float32)
        ids = {row_id: i for i, row_id in enumerate(data.column("row_id").to_pylist())}
        rng = np.random.default_rng(0)
        picked = matrix[rng.choice(rows, query_count, replace=False)]
        queries = (picked + rng.normal(0, 0.05, picked.shape)).astype(np.float32)
        truth = exact_top(matrix, queries, k)
        results: dict[str, Any] = {"flat scan": [measure(table, queries[:10], truth[:10], ids, k, None)]}
        print(f"{table_name}: {rows} rows; flat scan (10 queries): {results['flat scan'][0]}", flush=True)
        for label, config in settings(rows).items():
            results[label] = []
            for repeat in range(repeats):
                started = time.perf_counter()
                table.create_index("vector", config=config, replace=True)
                figures: dict[str, Any] = {"build_s": round(time.perf_counter() - started, 1)}
                for width in widths:  # 0: LanceDB's default
                    figures[f"query_ef={width or 'default'}"] = measure(table, queries, truth, ids, k, width or None)
                results[label].append(figures)
                print(f"  {label} (build {repeat + 1}): {figures}", flush=True)
        return {"table": table_name, "rows": rows, "queries": query_count, "k": k, "query_ef": widths,
                "results": results}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True, help="A built home (its lancedb/ is copied, not changed).")
    parser.add_argument("--table", nargs="+", default=["triples"], help="LanceDB tables to measure.")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2, help="Builds per setting (a build is randomised).")
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--query-ef", type=int, nargs="+", default=[0, ANN_QUERY_EF],
                        help="HNSW search widths to query each index with (0: LanceDB's default).")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    info = machine()
    print(f"machine: {info}", flush=True)
    tables = [run(args.home, name, args.queries, args.repeats, args.k, args.query_ef) for name in args.table]
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / f"vector-index-{datetime.now(UTC).strftime('%Y-%m-%d')}.json"
    target.write_text(json.dumps({"machine": info, "home": str(args.home), "tables": tables}, indent=2))
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
