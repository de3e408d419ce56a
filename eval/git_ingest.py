"""Decision-graph ingest at scale: a generated repository of N commits, ingested whole, then 10 new commits.

The repository is generated with ``git fast-import`` (seconds for 10,000 commits). It has four authors, an AI
co-author trailer on every seventh commit, 300 source files under src/ and docs/, a DECISIONS.md that gains
an entry every 20 commits, an ADR every 100 commits (each later ADR superseding the one before it), an
AGENTS.md edited every 250 commits, and renames every 500 commits. Then the script:

  1. ingests it with ``engramrag.gitgraph.ingest.ingest`` in a child process, timing it and reading that
     process's peak resident memory (``ru_maxrss``);
  2. adds 10 commits and ingests again (incremental), timed the same way.

    python -m eval.git_ingest [--commits 10000] [--work /tmp/engram-git-ingest]

The result goes to ``eval/results/git-ingest-YYYY-MM-DD-N.json`` with the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from eval.build_benchmark import machine

REPOSITORY = Path(__file__).resolve().parents[1]
AUTHORS = [("Minji Park", "minji@example.org"), ("Daniel Choi", "daniel@example.org"),
           ("Jihoon Kim", "jihoon@example.org"), ("Sora Lee", "sora@example.org")]
START = 1_700_000_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--work", default="/tmp/engram-git-ingest")
    parser.add_argument("--out", default=str(REPOSITORY / "eval" / "results"))
    args = parser.parse_args(argv)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    repo, home = work / "repo", work / "home"
    started = time.perf_counter()
    generate(repo, args.commits)
    generated_s = time.perf_counter() - started
    print(f"generated {args.commits:,} commits in {generated_s:.1f} s", file=sys.stderr)
    full = timed_ingest(repo, home)
    append_commits(repo, args.commits, 10)
    incremental = timed_ingest(repo, home)
    result = {"measured_at": datetime.now(UTC).isoformat(), "commits": args.commits, "generate_s": generated_s,
              "full": full, "incremental_10": incremental, "machine": machine()}
    out = Path(args.out) / f"git-ingest-{datetime.now(UTC).date()}-{args.commits}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    for name, figures in (("full", full), ("incremental 10", incremental)):
        print(f"{name:>15}: {figures['seconds']:7.2f} s, peak RSS {figures['peak_rss_mib']:7.0f} MiB, "
              f"{figures['summary']['commits_added']} commits, mode {figures['summary']['mode']}")
    print(f"written to {out}")
    return 0


def timed_ingest(repo: Path, home: Path) -> dict:
    """Ingest in a fresh child process, so its peak memory is the ingest's own."""
    code = (
        "import json, resource, sys, time, dataclasses\n"
        "from engramrag.gitgraph.ingest import ingest\n"
        "start = time.perf_counter()\n"
        "summary = ingest(sys.argv[1], sys.argv[2], progress=False)\n"
        "seconds = time.perf_counter() - start\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(json.dumps({'seconds': seconds, 'peak_rss_mib': peak, 'summary': dataclasses.asdict(summary)}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(repo), str(home)], capture_output=True, text=True,
                          cwd=REPOSITORY, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def generate(repo: Path, commits: int) -> None:
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    stream = "".join(_commit(number) for number in range(commits))
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=stream.encode(), check=True)
    subprocess.run(["git", "-C", str(repo), "reset", "-q", "--hard", "main"], check=True)


def append_commits(repo: Path, start: int, count: int) -> None:
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "main"], capture_output=True, text=True,
                          check=True).stdout.strip()
    stream = "".join(_commit(start + offset, parent=head if offset == 0 else None) for offset in range(count))
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet", "--force"], input=stream.encode(), check=True)
    subprocess.run(["git", "-C", str(repo), "reset", "-q", "--hard", "main"], check=True)


def _commit(number: int, parent: str | None = None) -> str:
    name, email = AUTHORS[number % len(AUTHORS)]
    moment = START + number * 3600
    message = f"Change {number}: work on module {number % 300}\n"
    if number % 7 == 0:
        message += "\nCo-authored-by: Claude <noreply@anthropic.com>\n"
    files = [(f"src/module_{number % 300}.py", f"# module {number % 300}\nVERSION = {number}\n")]
    if number % 20 == 0:
        files.append(("DECISIONS.md", _decisions(number)))
    if number % 100 == 0:
        adr = number // 100 + 1
        status = "Accepted" if adr == 1 else f"Accepted\n\nSupersedes ADR-{adr - 1:04d}"
        files.append((f"docs/adr/{adr:04d}-decision-{adr}.md",
                      f"# {adr}. Decision {adr} about module {number % 300}\n\n## Status\n\n{status}\n\n"
                      f"## Decision\n\nChange src/module_{number % 300}.py.\n"))
    if number % 250 == 0:
        files.append(("AGENTS.md", f"# Agent instructions\n\n## Style\n\nRule set {number // 250}.\n"))
    lines = [f"commit refs/heads/main\nmark :{number + 1}\n",
             f"author {name} <{email}> {moment} +0000\ncommitter {name} <{email}> {moment} +0000\n",
             f"data {len(message.encode())}\n{message}"]
    if parent:
        lines.append(f"from {parent}\n")
    if number % 500 == 499:
        old = f"docs/notes_{(number // 500) - 1}.md" if number >= 999 else None
        if old:
            lines.append(f"R {old} docs/notes_{number // 500}.md\n")
        else:
            files.append((f"docs/notes_{number // 500}.md", "# Notes\n"))
    for path, text in files:
        data = text.encode()
        lines.append(f"M 100644 inline {path}\ndata {len(data)}\n")
        lines.append(text + "\n")
    return "".join(lines) + "\n"


def _decisions(number: int) -> str:
    entries = [f"## 2024-01-{1 + (index % 28):02d} Decision {index} for module {index % 300}\n\n"
               f"Status: Accepted\n\nUse approach {index} in src/module_{index % 300}.py.\n"
               for index in range(0, number + 1, 20)]
    return "# Decisions\n\n" + "\n".join(entries)


if __name__ == "__main__":
    raise SystemExit(main())
