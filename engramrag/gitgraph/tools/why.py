"""``why`` and ``origin``: the reasoning behind a file, and where a file or one of its lines came from.

Both follow renames, because a file's decisions were usually written about the name it had then.
"""

from __future__ import annotations

import os
from typing import Any

from engramrag.gitgraph.tools.base import (
    Repo,
    answer,
    blame_lines,
    commits_by_sha,
    conflict_note,
    current_decisions,
    decision_row,
    governing,
    is_retired_status,
    line_ranges,
    open_repo,
    order_decisions,
    path_names,
    repo_relative,
)
from engramrag.store import Home


def why(home: Home | str | os.PathLike[str], repo_path: str | os.PathLike[str], path: str, limit: int = 20) -> dict:
    """The decisions governing a file (current first; superseded ones name their successors), the commits that
    changed it, and the commits that wrote those decisions (blame), each with exact lines. For a decision record
    file, the records it holds count as governing it (``recorded-here``)."""
    with open_repo(home, repo_path) as repo:
        path = repo_relative(repo, path)
        names = path_names(repo, path)
        reasons: dict[str, list[dict[str, Any]]] = {}
        for row in governing(repo, names):
            reasons.setdefault(row["decision_id"], []).append(
                {"reason": row["reason"], "path": row["path"], "sha": row["sha"]}
            )
        for row in repo.rows(
            "SELECT DISTINCT decision_id, path FROM decisions WHERE repo_id = $repo AND list_contains($names, path) "
            "ORDER BY ALL",
            {"names": names},
        ):
            recorded = {"reason": "recorded-here", "path": row["path"], "sha": None}
            reasons.setdefault(row["decision_id"], []).append(recorded)
        decisions = order_decisions(current_decisions(repo, reasons))
        for decision in decisions:
            decision["governs_because"] = reasons[decision["id"]]
        changes = file_commits(repo, names)
        if not changes and not decisions:
            raise LookupError(f"{path} has no history in {repo.root} (as ingested)")
        blame = blame_lines(repo, reasons)
        written_by = [
            {"decision": decision_id, "sha": sha, "lines": line_ranges(lines)}
            for decision_id, shas in sorted(blame.items())
            for sha, lines in sorted(shas.items())
        ]
        changed = commits_by_sha(repo, changes)
        writers = commits_by_sha(repo, {item["sha"] for item in written_by} - set(changes))
        current = [item for item in decisions if item["current"]]
        text = (
            f"{path}: governed by {len(current)} current decision(s)"
            + (f" ({'; '.join(item['title'] for item in current[:3])})" if current else "")
            + f" and {len(decisions) - len(current)} superseded or retired; changed by {len(changed)} commit(s)"
            + (f" under the names {', '.join(names[1:])}" if len(names) > 1 else "")
            + conflict_note(decisions)
        )
        for commit in changed:
            commit["change"] = changes[commit["sha"]]
        return answer(
            text,
            decisions=decisions,
            commits=[*changed[:limit], *writers],
            files=[{"path": name, "current": name == path} for name in names],
            people=[],
            path=path,
            names=names,
            decisions_written_by=written_by,
            commits_total=len(changed),
        )


def file_commits(repo: Repo, names: list[str]) -> dict[str, dict[str, Any]]:
    """The commits that changed a file under any of its names: sha -> how (change letter, lines, the path)."""
    found: dict[str, dict[str, Any]] = {}
    for row in repo.rows(
        "SELECT sha, path, old_path, change, added, deleted FROM file_changes WHERE repo_id = $repo "
        "AND (list_contains($names, path) OR list_contains($names, old_path)) ORDER BY sha, path",
        {"names": names},
    ):
        found.setdefault(
            row["sha"],
            {
                "change": row["change"],
                "path": row["path"],
                "old_path": row["old_path"],
                "added": row["added"],
                "deleted": row["deleted"],
            },
        )
    return found


def origin(
    home: Home | str | os.PathLike[str], repo_path: str | os.PathLike[str], path: str, line: int | None = None
) -> dict:
    """The commit that introduced a line (git blame at HEAD, its earlier versions from ``git log -L``) or the
    file (renames followed back to the first name), and the decisions governing the file that were in force then.
    """
    with open_repo(home, repo_path) as repo:
        path = repo_relative(repo, path)
        names = path_names(repo, path)
        extra: dict[str, Any] = {"path": path}
        if line is None:
            sha, introduced_as = file_origin(repo, names)
            extra["introduced_as"] = introduced_as
            history: list[str] = []
        else:
            blamed = blame_line(repo, path, line)
            sha = blamed["sha"]
            extra["line"] = blamed
            history = line_history(repo, path, line)
            extra["line_history"] = history
        introduced = commits_by_sha(repo, [sha])
        if not introduced:
            raise LookupError(f"commit {sha[:12]} is not in the store yet: run `engram git ingest {repo.root}`")
        commit = introduced[0]
        decisions = decisions_in_force(repo, names, commit)
        what = f"line {line} of {path}" if line is not None else path
        text = f"{what} was introduced by {sha[:12]} ({commit['date'][:10]}, {commit['author']}): {commit['subject']}"
        text += f"; {len(decisions)} governing decision(s) were in force then" if decisions else ""
        others = commits_by_sha(repo, set(history) - {sha})
        return answer(
            text,
            decisions=decisions,
            commits=[commit, *others],
            files=[{"path": name} for name in names],
            introduced_by=sha,
            **extra,
        )


def file_origin(repo: Repo, names: list[str]) -> tuple[str, str]:
    """The commit that added the file under its first name (the oldest addition of any of its names)."""
    rows = repo.rows(
        "SELECT fc.sha, fc.path FROM file_changes fc JOIN commits c USING (repo_id, sha) "
        "WHERE fc.repo_id = $repo AND fc.change = 'A' AND list_contains($names, fc.path) "
        "ORDER BY c.seq LIMIT 1",
        {"names": names},
    )
    if not rows:
        raise LookupError(f"no commit added {names[0]} (as ingested)")
    return rows[0]["sha"], rows[0]["path"]


def blame_line(repo: Repo, path: str, line: int) -> dict[str, Any]:
    """``git blame --porcelain`` of one line at HEAD: the commit, the line's text, and the path and line number it
    had in that commit (blame follows renames)."""
    if line < 1:
        raise ValueError("line numbers start at 1")
    out = repo.git.text(
        "-c", "blame.ignoreRevsFile=", "blame", "--porcelain", "-M", "-L", f"{line},{line}", "HEAD", "--", path
    )
    lines = out.split("\n")
    sha, original_line = lines[0].split()[:2]
    found: dict[str, Any] = {"number": line, "sha": sha, "original_line": int(original_line), "original_path": path}
    for header in lines[1:]:
        if header.startswith("\t"):
            found["text"] = header[1:]
            break
        if header.startswith("filename "):
            found["original_path"] = header.removeprefix("filename ")
    return found


def line_history(repo: Repo, path: str, line: int) -> list[str]:
    """Every commit that changed the line range, newest first (``git log -L``; the patches are dropped)."""
    out = repo.git.text("log", "--format=%x01%H", "-L", f"{line},{line}:{path}", "HEAD")
    return [row[1:].strip() for row in out.split("\n") if row.startswith("\x01")]


def decisions_in_force(repo: Repo, names: list[str], commit: dict[str, Any]) -> list[dict[str, Any]]:
    """Decisions governing the file as they stood in ``commit``'s own history, not in the order commits were
    ingested: each record as its file reads in the commit's tree, unless it was retired or superseded by a link
    recorded in an ancestor of the commit (a side branch does not see what only main had)."""
    ids = sorted({row["decision_id"] for row in governing(repo, names)})
    if not ids:
        return []
    tree = repo.git.tree(commit["sha"])
    rows = [
        row
        for row in repo.rows(
            "SELECT d.*, c.committed_at, c.seq FROM decisions d JOIN commits c ON c.repo_id = d.repo_id "
            "AND c.sha = d.sha WHERE d.repo_id = $repo AND list_contains($ids, d.decision_id) ORDER BY c.seq DESC",
            {"ids": ids},
        )
        if tree.get(row["path"]) == row["blob"]
    ]
    latest = {}
    for row in rows:  # newest first: the version the tree holds, as last written
        latest.setdefault(row["decision_id"], row)
    links = repo.links
    superseded_then = {
        earlier
        for (_later, earlier), sha in links.since.items()
        if earlier in latest and repo.git.is_ancestor(sha, commit["sha"])
    }
    found = []
    for row in latest.values():
        if row["decision_id"] in superseded_then or is_retired_status(row["status"]):
            continue
        decision = decision_row(repo, row)
        decision["as_of"] = row["sha"]
        found.append(decision)
    return order_decisions(found)
