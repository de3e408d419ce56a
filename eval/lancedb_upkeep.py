"""What it costs to fold a build's small fragments into a LanceDB table: LanceDB's ``optimize`` beside
``vectors.upkeep.tidy``, on copies of a built home's table at one of its versions.

    python -m eval.lancedb_upkeep HOME --table chunks --version 23 [--queries 20] [--out FILE]

Each mode runs on its own copy of ``HOME/lancedb/<table>.lance`` restored to ``--version`` (a version with many
small fragments: the one an edit's build found when it optimised; ``python -m eval.lancedb_upkeep HOME --table
chunks --list`` shows each version's fragments and index segments). It prints the seconds, the fragments and index
segments after, the vector search's recall of the exact top 10 and, for the chunks, how many full-text searches
return the same top 10 as after LanceDB's ``optimize`` (``--queries`` rows of the table used as queries, their
vector and their text). "as left" is the table as the build left it (new rows found by a scan).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from eval.build_benchmark import machine


def versions(table_dir: Path) -> list[dict[str, Any]]:
    import lance

    dataset = lance.dataset(str(table_dir))
    found = []
    for version in dataset.versions():
        at = lance.dataset(str(table_dir), version=version["version"])
        found.append({
            "version": version["version"], "fragments": len(at.get_fragments()), "rows": at.count_rows(),
            "segments": [(index["name"], len(index["fragment_ids"])) for index in at.list_indices()],
        })  # fmt: skip
    return found


def run_mode(table_dir: Path, version: int, mode: str, queries: int, scratch: Path) -> dict[str, Any]:
    import lance
    import lancedb

    from engramrag.vectors.upkeep import tidy

    copy = scratch / mode
    shutil.rmtree(copy, ignore_errors=True)
    copy.mkdir(parents=True)
    shutil.copytree(table_dir, copy / table_dir.name)
    lance.dataset(str(copy / table_dir.name), version=version).restore()
    table = lancedb.connect(str(copy)).open_table(table_dir.name.removesuffix(".lance"))
    before = len(table.to_lance().get_fragments())
    started = time.perf_counter()
    if mode == "optimize":
        table.optimize()
    elif mode == "tidy":
        tidy(table)
    seconds = time.perf_counter() - started
    table.checkout_latest()
    dataset = table.to_lance()
    sample = dataset.take(list(range(0, dataset.count_rows(), max(1, dataset.count_rows() // queries)))[:queries])
    recall, answers = [], []
    for row in sample.to_pylist():
        search = table.search(row["vector"], vector_column_name="vector").distance_type("cosine").limit(10)
        approximate = {hit["row_id"] for hit in search.select(["row_id", "_distance"]).to_list()}
        exact = table.search(row["vector"], vector_column_name="vector").distance_type("cosine").limit(10)
        truth = {hit["row_id"] for hit in exact.bypass_vector_index().select(["row_id", "_distance"]).to_list()}
        recall.append(len(approximate & truth) / max(1, len(truth)))
        if "search_text" in sample.column_names:
            text = table.search(row["search_text"], query_type="fts", fts_columns="search_text").limit(10)
            answers.append([hit["row_id"] for hit in text.select(["row_id", "_score"]).to_list()])
    shutil.rmtree(copy, ignore_errors=True)
    indexes = table.list_indices()
    return {
        "mode": mode, "seconds": round(seconds, 2), "fragments_before": before,
        "fragments_after": len(dataset.get_fragments()),
        "segments_after": [(index["name"], len(index["fragment_ids"])) for index in dataset.list_indices()],
        "unindexed_after": {index.name: table.index_stats(index.name).num_unindexed_rows for index in indexes},
        "vector_recall_at_10": round(sum(recall) / max(1, len(recall)), 4),
        "answers": answers,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("home", type=Path)
    parser.add_argument("--table", default="chunks", choices=["chunks", "triples", "entity_labels"])
    parser.add_argument("--version", type=int, help="the table version to restore (default: the latest)")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--list", action="store_true", help="list the table's versions and stop")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    table_dir = args.home / "lancedb" / f"{args.table}.lance"
    listed = versions(table_dir)
    if args.list:
        for item in listed:
            print(json.dumps(item))
        return
    version = args.version or listed[-1]["version"]
    with tempfile.TemporaryDirectory(prefix="lancedb-upkeep-") as scratch:
        modes = ("as left", "optimize", "tidy")
        runs = [run_mode(table_dir, version, mode, args.queries, Path(scratch)) for mode in modes]
    reference = runs[1]["answers"]
    for run in runs:
        answers = run.pop("answers")
        run["same_text_top10_as_optimize"] = sum(a == b for a, b in zip(answers, reference, strict=True))
        same = run["same_text_top10_as_optimize"]
        text = f", full-text top 10 as optimize's: {same}/{len(answers)}" if answers else ""
        print(f"{args.table} v{version} {run['mode']:>8}: {run['seconds']:8.2f} s, fragments {run['fragments_before']}"
              f" -> {run['fragments_after']}, vector recall@10 {run['vector_recall_at_10']:.3f}{text}, "
              f"unindexed rows {run['unindexed_after']}")  # fmt: skip
    result = {"machine": machine(), "home": str(args.home), "table": args.table, "version": version, "runs": runs}
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
