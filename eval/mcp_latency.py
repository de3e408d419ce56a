"""What an agent waits for: the MCP tools timed end to end through the official SDK client over stdio.

It builds the bundled example vault into a scratch home (or reuses one), starts `engram mcp` as a subprocess
the way an MCP client does, and times with ``time.perf_counter`` on the client side:

  1. the server start (spawn to the first answered ``list_tools``);
  2. ``search`` in ``full`` and ``auto_turn`` mode over the same questions;
  3. ``read`` of a 20-line range with its statements;
  4. ``query_graph`` (a grouped SELECT; each query runs in a child process that can be killed at its timeout);
  5. ``write`` proposals (each issues a confirmation row; nothing is written to the vault).

    python -m eval.mcp_latency [--rounds 30] [--work /tmp/engram-mcp-latency]

The result goes to ``eval/results/mcp-latency-YYYY-MM-DD.json`` with the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from eval.build_benchmark import machine
from pipelines.build import run_build

REPOSITORY = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "Why did the catalog move to PostgreSQL?",
    "Who leads the Falcon project?",
    "김지훈은 무엇을 담당하나?",
    "What monitoring did the team adopt?",
    "Which decision replaced DuckDB for the catalog?",
    "카탈로그 장애는 언제 있었나?",
]
GROUPED = "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g ORDER BY DESC(?n) LIMIT 5"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="Calls per tool (default 30).")
    parser.add_argument("--work", default="/tmp/engram-mcp-latency", help="Scratch folder for the vault and home.")
    parser.add_argument("--out", default=str(REPOSITORY / "eval" / "results"))
    args = parser.parse_args(argv)
    work = Path(args.work)
    vault, home = work / "vault", work / "home"
    if not (home / "catalog.duckdb").exists():
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(REPOSITORY / "examples" / "vault", vault)
        from engramrag.store import Home

        print(f"building {vault} into {home} …", file=sys.stderr)
        assert run_build(Home.at(home), vault).success
    figures = anyio.run(_measure, vault, home, args.rounds)
    result = {"measured_at": datetime.now(UTC).isoformat(), "rounds": args.rounds, "figures_ms": figures,
              "machine": machine()}
    out = Path(args.out) / f"mcp-latency-{datetime.now(UTC).date()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    for name, values in figures.items():
        print(f"{name:>18}: p50 {values['p50']:8.1f} ms   p95 {values['p95']:8.1f} ms   (n={values['n']})")
    print(f"written to {out}")
    return 0


async def _measure(vault: Path, home: Path, rounds: int) -> dict[str, dict[str, float]]:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from pipelines.cli import main; raise SystemExit(main())", "mcp", "--home", str(home),
              "--vault", str(vault), "--agent", "agent:benchmark"],
        cwd=str(REPOSITORY),
    )
    timings: dict[str, list[float]] = {}
    started = time.perf_counter()
    async with Client(server) as client:
        await client.list_tools()
        timings["server start"] = [(time.perf_counter() - started) * 1000]
        calls: list[tuple[str, str, dict[str, Any]]] = []
        for index in range(rounds):
            question = QUESTIONS[index % len(QUESTIONS)]
            calls += [
                ("search full", "search", {"query": question, "mode": "full", "k": 8}),
                ("search auto_turn", "search", {"query": question, "mode": "auto_turn", "k": 8}),
                ("read 20 lines", "read", {"path": "DECISIONS.md", "start_line": 1 + index, "end_line": 20 + index}),
                ("query_graph", "query_graph", {"sparql": GROUPED}),
                ("write proposal", "write", {"path": f"notes/bench-{index}.md", "content": f"# Bench {index}\n"}),
            ]
        await client.call_tool("search", {"query": "warm up", "k": 3})
        for name, tool, arguments in calls:
            mark = time.perf_counter()
            result = await client.call_tool(tool, arguments)
            elapsed = (time.perf_counter() - mark) * 1000
            if result.is_error:
                raise RuntimeError(f"{tool} failed: {result.content[0].text if result.content else result}")
            timings.setdefault(name, []).append(elapsed)
    return {name: _summary(values) for name, values in timings.items()}


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(values), "p50": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


if __name__ == "__main__":
    raise SystemExit(main())
