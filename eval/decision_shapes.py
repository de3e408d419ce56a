"""The decision graph against a generator's truth: a repository with hundreds of ADRs written in the shapes real
repositories use, and thousands of commits, scored for what `trace`, `why` and `disproven` answer from.

Each group of ADRs is one shape, with the answer the generator knows:
  chain        "Superseded by ADR-N" (links)            renumbered   git mv 0002-x 0003-x, a new 0002, "ADR-0002"
  number_title "Superseded by 0002: Use gRPC"           partial      "Partially superseded by ADR-N" (in force)
  retitled     a title changed twice, one in Korean      dated        status-line, day-first and yyyymmdd dates
  governs      names src/mod_k.py, or its absolute path  beside       README, summary, AGENTS.md in the ADR folder
and filler commits over the source files. Scores: supersession links (precision and recall against the truth),
partial links, which records are in force, dates, one decision per retitled file, governed files, and files
that must not be records.

    python -m eval.decision_shapes [--groups 40] [--filler 2000] [--work /tmp/engram-decision-shapes]

The result goes to ``eval/results/decision-shapes-YYYY-MM-DD.json`` with the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from engramrag.gitgraph.ingest import ingest
from engramrag.gitgraph.tools.base import open_repo
from engramrag.store import Home
from eval.build_benchmark import machine

REPOSITORY = Path(__file__).resolve().parents[1]
ADR = "docs/adr"
NYGARD = "# {number}. {title}\n\n{date}## Status\n\n{status}\n\n## Context\n\n{context}\n\n## Decision\n\n{decision}\n"


@dataclass
class Truth:
    links: set[tuple[str, str]] = field(default_factory=set)  # (later path, earlier path), whole supersession
    partial: set[tuple[str, str]] = field(default_factory=set)
    in_force: dict[str, bool] = field(default_factory=dict)  # path at HEAD -> whether it is still in force
    dates: dict[str, str] = field(default_factory=dict)  # path -> the date the record states
    retitled: list[str] = field(default_factory=list)  # paths whose one decision changed title
    governs: set[tuple[str, str]] = field(default_factory=set)  # (record path, source file)
    not_records: list[str] = field(default_factory=list)


class Writer:
    """Commits files with fixed authors and increasing dates (so every run makes the same history)."""

    def __init__(self, root: Path) -> None:
        self.root, self.tick, self.commits = root, 0, 0
        root.mkdir(parents=True)
        self.git("init", "-q")

    def git(self, *args: str) -> str:
        when = f"{1_700_000_000 + self.tick * 3600} +0000"
        environment = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
        environment.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="Minji Park",
                           GIT_AUTHOR_EMAIL="minji@example.org", GIT_COMMITTER_NAME="Minji Park",
                           GIT_COMMITTER_EMAIL="minji@example.org", GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
        command = ["git", "-C", str(self.root), "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args]
        return subprocess.run(command, capture_output=True, text=True, env=environment, check=True).stdout

    def commit(self, message: str, files: dict[str, str | None]) -> None:
        for path, content in files.items():
            target = self.root / path
            if content is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content, encoding="utf-8")
        self.tick += 1
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        self.commits += 1


def adr(number: int, title: str, status: str = "Accepted", decision: str = "", date: str = "") -> str:
    return NYGARD.format(number=number, title=title, status=status, context=f"Context of {title.lower()}.",
                         decision=decision or f"We {title.lower()}.", date=f"{date}\n\n" if date else "")


def generate(root: Path, groups: int, filler: int) -> tuple[Writer, Truth]:
    writer, truth, number = Writer(root), Truth(), 0

    def next_path(slug: str) -> tuple[int, str]:
        nonlocal number
        number += 1
        return number, f"{ADR}/{number:04d}-{slug}.md"

    writer.commit("Source tree", {f"src/mod_{k}.py": f"VALUE_{k} = {k}\n" for k in range(groups)})
    for g in range(groups):
        # chain: B supersedes A
        (na, a), (nb, b) = next_path(f"use-store-a{g}"), next_path(f"use-store-b{g}")
        writer.commit(f"ADR {na}", {a: adr(na, f"Use store A{g}")})
        writer.commit(f"ADR {nb} supersedes {na}", {
            b: adr(nb, f"Use store B{g}", decision=f"Replaces ADR-{na:04d}."),
            a: adr(na, f"Use store A{g}", status=f"Superseded by ADR-{nb:04d}")})  # fmt: skip
        truth.links.add((b, a))
        truth.in_force.update({a: False, b: True})
        # number and title: D supersedes C by "NNNN: Title"
        (nc, c), (nd, d) = next_path(f"use-queue-c{g}"), next_path(f"use-queue-d{g}")
        writer.commit(f"ADR {nc}", {c: adr(nc, f"Use queue C{g}")})
        writer.commit(f"ADR {nd}", {
            d: adr(nd, f"Use queue D{g}"),
            c: adr(nc, f"Use queue C{g}", status=f"Superseded by {nd:04d}: Use queue D{g}")})  # fmt: skip
        truth.links.add((d, c))
        truth.in_force.update({c: False, d: True})
        # partial: F replaces part of E
        (ne, e), (nf, f) = next_path(f"use-cache-e{g}"), next_path(f"cache-sessions-f{g}")
        writer.commit(f"ADR {ne}", {e: adr(ne, f"Use cache E{g} for sessions and pages")})
        writer.commit(f"ADR {nf}", {
            f: adr(nf, f"Cache sessions F{g}"),
            e: adr(ne, f"Use cache E{g} for sessions and pages",
                   status=f"Partially superseded by ADR-{nf:04d}: sessions move; pages stay.")})  # fmt: skip
        truth.partial.add((f, e))
        truth.in_force.update({e: True, f: True})
        # retitled twice, once into Korean
        nr, r = next_path(f"use-search-r{g}")
        for title in (f"Use search R{g}", f"Use Search R{g} engine", f"검색 엔진 R{g} 사용"):
            writer.commit(f"ADR {nr}: {title}", {r: adr(nr, title, decision="One search engine.")})
        truth.retitled.append(r)
        truth.in_force[r] = True
        # dates in three shapes
        day = 1 + g % 27
        ns, s = next_path(f"status-dated-s{g}")
        nt, t = next_path(f"day-first-t{g}")
        compact = f"{ADR}/202405{day:02d}-compact-u{g}.md"
        writer.commit(f"Dated ADRs {g}", {
            s: adr(ns, f"Status dated S{g}", status=f"Accepted — 2026-04-{day:02d}"),
            t: adr(nt, f"Day first T{g}", date=f"Date: {day:02d}/05/2026"),
            compact: adr(0, f"Compact U{g}").replace("# 0. ", "# "),
        })  # fmt: skip
        truth.dates.update({s: f"2026-04-{day:02d}", t: f"2026-05-{day:02d}", compact: f"2024-05-{day:02d}"})
        truth.in_force.update({s: True, t: True, compact: True})
        # governed files: a backticked path, an absolute path
        ng, governing = next_path(f"keep-values-g{g}")
        writer.commit(f"ADR {ng}", {governing: adr(
            ng, f"Keep values G{g}",
            decision=f"Values live in `src/mod_{g}.py`; see /home/dev/project/src/mod_{(g + 1) % groups}.py.")})
        truth.governs |= {(governing, f"src/mod_{g}.py"), (governing, f"src/mod_{(g + 1) % groups}.py")}
        truth.in_force[governing] = True
    # renumbering, then a new record under the freed number that supersedes the first chain's A
    first_a = f"{ADR}/0001-use-store-a0.md"
    moved = f"{ADR}/{number + 1:04d}-use-store-a0.md"
    writer.git("mv", first_a, moved)
    writer.commit("Renumber ADR 1", {})
    fresh = f"{ADR}/0001-use-kv-store.md"
    writer.commit("New ADR 1", {fresh: adr(1, "Use a key-value store")})
    renumbered_old = f"{ADR}/{number + 2:04d}-old-way.md"
    writer.commit("Old way, superseded by the new ADR-0001", {
        renumbered_old: adr(number + 2, "Old way", status="Superseded by ADR-0001")})  # fmt: skip
    truth.links = {(later if later != first_a else moved, earlier if earlier != first_a else moved)
                   for later, earlier in truth.links}  # fmt: skip
    truth.in_force[moved] = truth.in_force.pop(first_a)
    truth.links.add((fresh, renumbered_old))
    truth.in_force.update({fresh: True, renumbered_old: False})
    beside = {f"{ADR}/README.md": "# Decisions\n\nStatus: maintained.\n\n| ADR | Status |\n|---|---|\n",
              f"{ADR}/summary.md": "# Summary\n\n## Decision\n\nAll accepted.\n",
              f"{ADR}/AGENTS.md": "# Agents\n\n## Status\n\nKeep statuses current.\n"}  # fmt: skip
    writer.commit("Index and agent notes", beside)
    truth.not_records = sorted(beside)
    for k in range(filler):
        module = f"src/mod_{k % groups}.py"
        writer.commit(f"Tune module {k % groups}", {module: f"VALUE_{k % groups} = {k}\n"})
    return writer, truth


def score(home: Home, root: Path, truth: Truth) -> dict:
    with open_repo(home, root) as repo:
        current = repo.rows("SELECT decision_id, path, status, decided_on FROM decision_current WHERE repo_id = $repo")
        links = repo.rows("SELECT from_id, to_id, kind FROM decision_links WHERE repo_id = $repo")
        rationale = repo.rows("SELECT DISTINCT decision_id, path FROM rationale WHERE repo_id = $repo")
        per_file = repo.rows(
            "SELECT path, count(DISTINCT decision_id) AS ids FROM decisions WHERE repo_id = $repo GROUP BY path"
        )
        later_links = {row["to_id"] for row in links if row["kind"] == "supersedes"}
    path_of = {row["decision_id"]: row["path"] for row in current}
    found = {(path_of.get(r["from_id"]), path_of.get(r["to_id"])) for r in links if r["kind"] == "supersedes"}
    partial = {(path_of.get(r["from_id"]), path_of.get(r["to_id"])) for r in links if r["kind"] != "supersedes"}
    in_force = {row["path"]: row["decision_id"] not in later_links and not _retired(row["status"]) for row in current}
    dates = {row["path"]: str(row["decided_on"]) if row["decided_on"] else None for row in current}
    ids_per_file = {row["path"]: row["ids"] for row in per_file}
    governed = {(path_of.get(row["decision_id"]), row["path"]) for row in rationale}
    return {
        "supersession_precision": _share(len(found & truth.links), len(found)),
        "supersession_recall": _share(len(found & truth.links), len(truth.links)),
        "partial_recall": _share(len(partial & truth.partial), len(truth.partial)),
        "in_force_right": _share(sum(in_force.get(p) == v for p, v in truth.in_force.items()), len(truth.in_force)),
        "dates_right": _share(sum(dates.get(p) == d for p, d in truth.dates.items()), len(truth.dates)),
        "retitled_one_decision": _share(sum(ids_per_file.get(p) == 1 for p in truth.retitled), len(truth.retitled)),
        "governed_recall": _share(len(governed & truth.governs), len(truth.governs)),
        "not_records_right": _share(sum(p not in dates for p in truth.not_records), len(truth.not_records)),
        "wrong_links": sorted(f"{a} -> {b}" for a, b in found - truth.links)[:10],
        "missed_links": sorted(f"{a} -> {b}" for a, b in truth.links - found)[:10],
    }


def _retired(status: str | None) -> bool:
    from engramrag.gitgraph.tools.base import is_retired_status

    return is_retired_status(status)


def _share(right: int, total: int) -> float | None:
    return round(100.0 * right / total, 1) if total else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=40, help="Groups of shapes (11 ADRs each).")
    parser.add_argument("--filler", type=int, default=2000, help="Commits over the source files after the ADRs.")
    parser.add_argument("--work", default="/tmp/engram-decision-shapes")
    parser.add_argument("--out", default=str(REPOSITORY / "eval" / "results"))
    args = parser.parse_args(argv)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    started = time.perf_counter()
    writer, truth = generate(work / "repo", args.groups, args.filler)
    generated_s = time.perf_counter() - started
    print(f"generated {writer.commits:,} commits in {generated_s:.1f} s", file=sys.stderr)
    started = time.perf_counter()
    summary = ingest(writer.root, Home.at(work / "home"), progress=False)
    ingest_s = time.perf_counter() - started
    scores = score(Home.at(work / "home"), writer.root, truth)
    result = {"measured_at": datetime.now(UTC).isoformat(), "groups": args.groups, "commits": writer.commits,
              "adrs": len(truth.in_force), "generate_s": round(generated_s, 1), "ingest_s": round(ingest_s, 2),
              "ingest_mode": summary.mode, "scores": scores, "machine": machine()}  # fmt: skip
    out = Path(args.out) / f"decision-shapes-{datetime.now(UTC).date()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    for name, value in scores.items():
        print(f"{name:>24}: {value}")
    print(f"{writer.commits:,} commits, {len(truth.in_force)} ADRs, ingest {ingest_s:.1f} s; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
