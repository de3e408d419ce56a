"""What every answer tool shares: the opened store and repository, and the evidence rows answers are made of.

An answer is only as good as what it rests on, so every tool returns the same evidence shapes (decisions with
their exact source lines, commits with dates, files, people with the agent flag) and the ids in them are the
ones a model may cite (see :mod:`engramrag.gitgraph.grounding`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import duckdb

from engramrag.gitgraph.gitcli import Git, GitError
from engramrag.gitgraph.store import gitgraph_reader, repo_id
from engramrag.store import Home

PARAMETER = re.compile(r"\$([A-Za-z_]\w*)")
RETIRED_STATUSES = frozenset({"superseded", "obsolete", "deprecated", "rejected", "replaced", "retired"})
PARTIALLY = re.compile(r"\s*(?:partially|partly|in\s+part)\b", re.IGNORECASE)
RETIRED_WORD = re.compile(r"supersed|obsolete|deprecat|reject|replaced|retired", re.IGNORECASE)


def is_retired_status(status: str | None) -> bool:
    """Whether a status says the record no longer holds (Superseded by N, Obsolete, Deprecated, Rejected)."""
    if not status or PARTIALLY.match(status):
        return False  # "partially superseded": the rest stays in force
    return status.casefold() in RETIRED_STATUSES or bool(RETIRED_WORD.search(status))


def iso(value: date | datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass
class Repo:
    """One ingested repository, opened for reading: the store connection, the work tree and its repo_id."""

    connection: duckdb.DuckDBPyConnection
    root: Path
    repo_id: str

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Rows as dicts; ``$repo`` is bound to this repository's id (DuckDB refuses unused parameters, so only
        those the statement names are passed)."""
        given = {"repo": self.repo_id, **(params or {})}
        cursor = self.connection.execute(sql, {name: given[name] for name in set(PARAMETER.findall(sql))})
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    @cached_property
    def git(self) -> Git:
        return Git(self.root)

    @cached_property
    def links(self) -> Supersession:
        return read_supersession(self)


def repository_root(repo_path: str | os.PathLike[str]) -> Path:
    """The top of the work tree that holds ``repo_path`` (the same path the ingest hashed into repo_id)."""
    path = Path(repo_path).expanduser().resolve()
    try:
        top = Git(path if path.is_dir() else path.parent).text("rev-parse", "--show-toplevel").strip()
    except GitError as error:
        raise LookupError(f"{path} is not inside a git repository") from error
    return Path(top).resolve()


@contextmanager
def open_repo(home: Home | str | os.PathLike[str], repo_path: str | os.PathLike[str]) -> Iterator[Repo]:
    """The store opened read-only for one repository; LookupError when it was never ingested into this home."""
    home = home if isinstance(home, Home) else Home.at(home)
    root = repository_root(repo_path)
    with gitgraph_reader(home) as connection:
        if connection is None:
            raise LookupError(f"{home.root} has no git graph yet: run `engram git ingest {root} --home {home.root}`")
        connection.execute("SET TimeZone = 'UTC'")
        repo = Repo(connection, root, repo_id(root))
        if not repo.rows("SELECT 1 FROM repos WHERE repo_id = $repo"):
            raise LookupError(f"{root} was never ingested into {home.root}: run `engram git ingest {root}`")
        yield repo


def repo_relative(repo: Repo, path: str) -> str:
    """A path as the store keeps it: relative to the work tree's top, forward slashes, no leading ./"""
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            return candidate.resolve().relative_to(repo.root).as_posix()
        except ValueError:
            return candidate.relative_to(repo.root).as_posix()
    return Path(os.path.normpath(path)).as_posix().removeprefix("./")


def resolve_commit(repo: Repo, revision: str) -> dict[str, Any]:
    """The ingested commit a revision names (a sha, a prefix, HEAD~2, a tag...)."""
    sha = repo.git.resolve(revision)
    if not sha:
        found = repo.rows("SELECT sha FROM commits WHERE repo_id = $repo AND starts_with(sha, $p)", {"p": revision})
        if len(found) != 1:
            raise LookupError(f"{revision!r} names no commit of {repo.root}")
        sha = found[0]["sha"]
    rows = commits_by_sha(repo, [sha])
    if not rows:
        raise LookupError(f"commit {sha[:12]} is not in the store yet: run `engram git ingest {repo.root}` first")
    return rows[0]


# --- evidence rows ---------------------------------------------------------------------------------------------

COMMIT_SQL = """
SELECT c.sha, c.seq, c.authored_at, c.committed_at, c.subject, c.body, c.is_merge, c.author_key,
       p.name AS author_name, coalesce(p.is_agent, false) AS author_is_agent
FROM commits c LEFT JOIN people p ON p.person_key = c.author_key
WHERE c.repo_id = $repo AND list_contains($shas, c.sha)
"""


def commits_by_sha(repo: Repo, shas: Iterable[str]) -> list[dict[str, Any]]:
    """Commit evidence rows, newest first (ties by sha, so answers are stable)."""
    wanted = sorted(set(shas))
    if not wanted:
        return []
    rows = repo.rows(COMMIT_SQL, {"shas": wanted})
    rows.sort(key=lambda row: row["seq"], reverse=True)
    return [commit_row(row) for row in rows]


def commit_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "sha": row["sha"],
        # One date for a commit everywhere: when it entered the history (the commit date), which is what
        # ancestry, "in force then" and supersession go by; a rebased or cherry-picked change keeps its
        # author's date beside it.
        "date": iso(row["committed_at"]),
        "authored": iso(row["authored_at"]),
        "subject": row["subject"],
        "author": row["author_name"] or row["author_key"],
        "author_key": row["author_key"],
        "author_is_agent": bool(row["author_is_agent"]),
        "is_merge": bool(row["is_merge"]),
        "_committed_at": row["committed_at"],
        "_seq": row["seq"],
    }


def people_by_key(repo: Repo, keys: Iterable[str]) -> list[dict[str, Any]]:
    wanted = sorted(set(keys))
    if not wanted:
        return []
    rows = repo.rows(
        "SELECT person_key, name, email, is_agent, agent_kind FROM people WHERE list_contains($keys, person_key) "
        "ORDER BY person_key",
        {"keys": wanted},
    )
    return [person_row(row) for row in rows]


def person_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": row["person_key"],
        "name": row["name"],
        "email": row["email"],
        "is_agent": bool(row["is_agent"]),
        "agent_kind": row["agent_kind"],
    }


DECISION_COLUMNS = (
    "d.decision_id, d.sha, d.path, d.title, d.decided_on, d.status, d.line_start, d.line_end, d.text, d.format, "
    "d.same_day_conflict, d.conflicts_with"
)


def current_decisions(repo: Repo, ids: Iterable[str]) -> list[dict[str, Any]]:
    """Each decision as it reads at the ingested HEAD (``at_head``), or, for a record deleted or renamed away
    since, as its last version read; with what it supersedes and what superseded it."""
    wanted = sorted(set(ids))
    if not wanted:
        return []
    rows = repo.rows(
        f"SELECT {DECISION_COLUMNS}, true AS at_head FROM decision_current d "
        "WHERE d.repo_id = $repo AND list_contains($ids, d.decision_id)",
        {"ids": wanted},
    )
    missing = sorted(set(wanted) - {row["decision_id"] for row in rows})
    if missing:
        rows += repo.rows(
            f"SELECT {DECISION_COLUMNS}, false AS at_head FROM decisions d JOIN commits c ON c.repo_id = d.repo_id "
            "AND c.sha = d.sha WHERE d.repo_id = $repo AND list_contains($ids, d.decision_id) "
            "QUALIFY row_number() OVER (PARTITION BY d.decision_id ORDER BY c.seq DESC) = 1",
            {"ids": missing},
        )
    return [decision_row(repo, row) for row in rows]


def decision_row(repo: Repo, row: dict[str, Any]) -> dict[str, Any]:
    links = supersession(repo)
    superseded_by = sorted(links.later.get(row["decision_id"], ()))
    return {
        "id": row["decision_id"],
        "title": row["title"],
        "date": iso(row["decided_on"]),
        "status": row["status"],
        "path": row["path"],
        "line_start": row["line_start"],
        "line_end": row["line_end"],
        "lines": f"{row['line_start']}-{row['line_end']}",
        "text": row["text"],
        "sha": row["sha"],
        "format": row["format"],
        "same_day_conflict": bool(row["same_day_conflict"]),
        "conflicts_with": sorted(row.get("conflicts_with") or ()),
        "supersedes": sorted(links.earlier.get(row["decision_id"], ())),
        "superseded_by": superseded_by,
        "partially_supersedes": sorted(links.partly_earlier.get(row["decision_id"], ())),
        "partially_superseded_by": sorted(links.partly_later.get(row["decision_id"], ())),
        "current": not superseded_by and not is_retired_status(row["status"]) and row.get("at_head", True),
        "at_head": row.get("at_head", True),
    }


def conflict_note(decisions: Iterable[dict[str, Any]]) -> str:
    """The same-day conflicts among these decisions, for an answer's text (not only its JSON): two records of
    one day about the same thing, neither naming the other, so no date can say which holds."""
    pairs = sorted({
        tuple(sorted((item["id"], other))) for item in decisions if item.get("current")
        for other in item.get("conflicts_with", ())
    })  # fmt: skip
    if not pairs:
        return ""
    titles = {item["id"]: item["title"] for item in decisions}
    shown = [" vs ".join(titles.get(i, i) for i in pair) for pair in pairs[:3]]
    return f"; same-day conflict, neither names the other: {'; '.join(shown)}"


def order_decisions(decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Current decisions first, then the newest; ties by id so that answers are stable."""
    decisions.sort(key=lambda item: item["id"])
    decisions.sort(key=lambda item: item["date"] or "", reverse=True)
    decisions.sort(key=lambda item: not item["current"])
    return decisions


@dataclass
class Supersession:
    """Supersession edges by direction: ``later[x]`` superseded x, ``earlier[x]`` was superseded by x."""

    later: dict[str, set[str]]
    earlier: dict[str, set[str]]
    since: dict[tuple[str, str], str]  # (later, earlier) -> the sha of the commit that recorded the link
    # "Partially superseded by": a later record replaced a part; the earlier one stays in force.
    partly_later: dict[str, set[str]] = field(default_factory=dict)
    partly_earlier: dict[str, set[str]] = field(default_factory=dict)

    def chain(self, start: str, direction: str) -> list[str]:
        """Every decision reachable from ``start`` going ``later`` or ``earlier``, nearest first."""
        return _breadth_first(self.later if direction == "later" else self.earlier, start, {start})


def _breadth_first(edges: Mapping[str, Iterable[str]], start: str, seen: set[str]) -> list[str]:
    """The nodes reachable from ``start`` along ``edges``, nearest first and neighbours in sorted order, that are
    not in ``seen``; they are added to it. A node already seen is neither listed nor walked through, so a caller
    walking several edge sets from one start passes one ``seen`` to list each node once."""
    order, frontier = [], [start]
    while frontier:
        following = []
        for node in frontier:
            for neighbour in sorted(edges.get(node, ())):
                if neighbour not in seen:
                    seen.add(neighbour)
                    order.append(neighbour)
                    following.append(neighbour)
        frontier = following
    return order


def supersession(repo: Repo) -> Supersession:
    """The repository's supersession edges, read once per opened store."""
    return repo.links


def read_supersession(repo: Repo) -> Supersession:
    later: dict[str, set[str]] = {}
    earlier: dict[str, set[str]] = {}
    since: dict[tuple[str, str], str] = {}
    partly_later: dict[str, set[str]] = {}
    partly_earlier: dict[str, set[str]] = {}
    rows = repo.rows(
        "SELECT l.from_id, l.to_id, l.kind, l.source_sha FROM decision_links l "
        "LEFT JOIN commits c ON c.repo_id = l.repo_id AND c.sha = l.source_sha "
        "WHERE l.repo_id = $repo ORDER BY c.seq NULLS LAST, l.source_sha"
    )
    for row in rows:
        if row["from_id"] == row["to_id"]:
            continue
        if row["kind"] != "supersedes":
            partly_later.setdefault(row["to_id"], set()).add(row["from_id"])
            partly_earlier.setdefault(row["from_id"], set()).add(row["to_id"])
            continue
        later.setdefault(row["to_id"], set()).add(row["from_id"])
        earlier.setdefault(row["from_id"], set()).add(row["to_id"])
        since.setdefault((row["from_id"], row["to_id"]), row["source_sha"])
    return Supersession(later, earlier, since, partly_later, partly_earlier)


def public(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows without the private sort keys (those whose names start with an underscore)."""
    return [{key: value for key, value in row.items() if not key.startswith("_")} for row in rows]


def answer(
    text: str,
    *,
    decisions: Iterable[dict[str, Any]] = (),
    commits: Iterable[dict[str, Any]] = (),
    files: Iterable[dict[str, Any]] = (),
    people: Iterable[dict[str, Any]] = (),
    **extra: Any,
) -> dict[str, Any]:
    """The common shape of every tool's answer."""
    return {
        "answer": text,
        "evidence": {
            "decisions": public(list(decisions)),
            "commits": public(list(commits)),
            "files": public(list(files)),
            "people": public(list(people)),
        },
        **extra,
    }


# --- files and renames -----------------------------------------------------------------------------------------


def path_names(repo: Repo, path: str) -> list[str]:
    """``path`` and every name the same file had before (renames followed back) or after (renames followed
    forward), the given name first. A name reused by an unrelated file later is not followed into."""
    renames = repo.rows(
        "SELECT DISTINCT old_path, path FROM file_changes WHERE repo_id = $repo AND change = 'R' "
        "AND old_path IS NOT NULL AND old_path <> path"
    )
    back: dict[str, set[str]] = {}
    forward: dict[str, set[str]] = {}
    for row in renames:
        back.setdefault(row["path"], set()).add(row["old_path"])
        forward.setdefault(row["old_path"], set()).add(row["path"])
    seen = {path}
    return [path, *_breadth_first(back, path, seen), *_breadth_first(forward, path, seen)]


def rename_forward(repo: Repo) -> dict[str, str]:
    """Each old path to the latest name the file had (renames followed forward to the end of the chain)."""
    rows = repo.rows(
        "SELECT fc.old_path, fc.path FROM file_changes fc JOIN commits c USING (repo_id, sha) "
        "WHERE fc.repo_id = $repo AND fc.change = 'R' AND fc.old_path IS NOT NULL AND fc.old_path <> fc.path "
        "ORDER BY c.seq, fc.sha"
    )
    step = {row["old_path"]: row["path"] for row in rows}
    latest: dict[str, str] = {}
    for start in step:
        seen, name = {start}, step[start]
        while name in step and step[name] not in seen:
            seen.add(name)
            name = step[name]
        latest[start] = name
    return latest


def record_paths(repo: Repo) -> set[str]:
    """Paths that hold decision records (their reasoning is the records themselves, not something they carry)."""
    return {row["path"] for row in repo.rows("SELECT DISTINCT path FROM decisions WHERE repo_id = $repo")}


def governing(repo: Repo, names: list[str]) -> list[dict[str, Any]]:
    """Rationale rows for any of the file's names: which decision governs it, why, and through which commit. A
    record that names a folder (``src/``) governs every file under it."""
    return repo.rows(
        "SELECT DISTINCT decision_id, path, reason, sha FROM rationale WHERE repo_id = $repo AND "
        "(list_contains($names, path) OR (ends_with(path, '/') "
        "AND len(list_filter($names, lambda n: starts_with(n, path))) > 0)) ORDER BY decision_id, reason, path, sha",
        {"names": names},
    )


def blame_lines(repo: Repo, ids: Iterable[str]) -> dict[str, dict[str, list[int]]]:
    """For each decision, the commits that wrote its lines (git blame at HEAD) and which lines each wrote."""
    wanted = sorted(set(ids))
    found: dict[str, dict[str, list[int]]] = {}
    if not wanted:
        return found
    for row in repo.rows(
        "SELECT decision_id, sha, line FROM decision_blame WHERE repo_id = $repo AND list_contains($ids, decision_id) "
        "ORDER BY decision_id, line",
        {"ids": wanted},
    ):
        found.setdefault(row["decision_id"], {}).setdefault(row["sha"], []).append(row["line"])
    return found


def line_ranges(lines: list[int]) -> str:
    """``[3, 4, 5, 9]`` as ``3-5,9``."""
    spans: list[list[int]] = []
    for line in sorted(set(lines)):
        if spans and line == spans[-1][1] + 1:
            spans[-1][1] = line
        else:
            spans.append([line, line])
    return ",".join(f"{start}-{end}" if start != end else str(start) for start, end in spans)
