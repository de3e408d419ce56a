"""``disproven`` and ``trace``: decisions over time.

A decision record changes as the team learns: its status moves from Proposed to Accepted to Superseded, and a
later record says it replaces it. ``trace`` shows one record's whole life; ``disproven`` finds the ideas on a
topic that were tried and given up, so nobody proposes them again without knowing.
"""

from __future__ import annotations

import os
import re
from typing import Any

from engramrag.gitgraph.tools.base import (
    Repo,
    answer,
    blame_lines,
    commits_by_sha,
    conflict_note,
    current_decisions,
    decision_row,
    is_retired_status,
    iso,
    line_ranges,
    open_repo,
)
from engramrag.store import Home

WORD = re.compile(r"\w+", re.UNICODE)


def disproven(home: Home | str | os.PathLike[str], repo_path: str | os.PathLike[str], topic: str) -> dict:
    """Decisions about ``topic`` (every word of it in the title or text) that were superseded or marked
    Obsolete/Deprecated/Rejected, with what replaced them and when."""
    words = [word.casefold() for word in WORD.findall(topic)]
    if not words:
        raise ValueError("give a topic: a word or a few")
    with open_repo(home, repo_path) as repo:
        # The topic may only be named in an earlier version (a record rewritten when it was retired), so every
        # version is searched; the answer shows the current one.
        matched = {
            row["decision_id"]
            for row in repo.rows("SELECT decision_id, title, text FROM decisions WHERE repo_id = $repo")
            if all(word in f"{row['title']}\n{row['text']}".casefold() for word in words)
        }
        found = [item for item in current_decisions(repo, matched) if not item["current"]]
        replaced_ids: set[str] = set()
        commit_shas: set[str] = set()
        for item in found:
            item["retired"] = _retired_when(repo, item)
            replaced_ids.update(item["superseded_by"])
            commit_shas.update(item["retired"][key] for key in ("status_sha", "link_sha") if item["retired"][key])
        found.sort(key=lambda item: (item["retired"]["date"] or "", item["id"]), reverse=True)
        replacements = current_decisions(repo, replaced_ids - {item["id"] for item in found})
        by_id = {item["id"]: item for item in [*found, *replacements]}
        for item in found:
            item["replaced_by"] = [
                {"id": other, "title": by_id[other]["title"], "date": by_id[other]["date"]}
                for other in item["superseded_by"]
                if other in by_id
            ]
        if found:
            text = f"{len(found)} decision(s) on {topic!r} were given up: " + "; ".join(
                f"{item['title']} ({item['status']}"
                + (f", {item['retired']['date'][:10]}" if item["retired"]["date"] else "")
                + (f", replaced by {', '.join(other['title'] for other in item['replaced_by'])}" if item["replaced_by"]
                   else "")
                + ")"
                for item in found[:5]
            )
        else:
            text = f"no superseded or retired decision mentions {topic!r}"
        return answer(
            text,
            decisions=[*found, *replacements],
            commits=commits_by_sha(repo, commit_shas),
            files=[{"path": path} for path in sorted({item["path"] for item in found})],
            topic=topic,
            disproven=[item["id"] for item in found],
        )


def _retired_when(repo: Repo, decision: dict[str, Any]) -> dict[str, Any]:
    """When the record was given up: the first version whose status retired it, and the commit that recorded the
    first link superseding it; ``date`` is the earlier of the two."""
    status = repo.rows(
        "SELECT d.sha, d.status, c.committed_at FROM decisions d JOIN commits c ON c.repo_id = d.repo_id "
        "AND c.sha = d.sha WHERE d.repo_id = $repo AND d.decision_id = $id ORDER BY c.seq",
        {"id": decision["id"]},
    )
    status_row = next((row for row in status if is_retired_status(row["status"])), None)
    links = repo.links
    link_shas = [links.since[(later, decision["id"])] for later in decision["superseded_by"]]
    link_rows = repo.rows(
        "SELECT sha, committed_at FROM commits WHERE repo_id = $repo AND list_contains($shas, sha) ORDER BY seq",
        {"shas": link_shas},
    )
    link_row = link_rows[0] if link_rows else None
    moments = [row["committed_at"] for row in (status_row, link_row) if row]
    return {
        "date": iso(min(moments)) if moments else None,
        "status_sha": status_row["sha"] if status_row else None,
        "link_sha": link_row["sha"] if link_row else None,
    }


def resolve_decision(repo: Repo, name: str) -> str:
    """A decision id from what a person types: the id itself, the record's path, an ADR number or a title."""
    rows = repo.rows(
        "SELECT decision_id, path, title FROM decision_current WHERE repo_id = $repo ORDER BY decision_id"
    )
    wanted = name.strip()
    folded = wanted.casefold()
    number = re.fullmatch(r"(?:adr[-_ ]?)?0*(\d+)", folded)
    for test in (
        lambda row: row["decision_id"] == wanted,
        lambda row: row["decision_id"].casefold() == folded,
        lambda row: row["path"] == wanted,
        lambda row: row["title"].casefold() == folded,
        lambda row: bool(number)
        and re.match(rf"0*{number.group(1)}(?!\d)", row["path"].rsplit("/", 1)[-1].removeprefix("adr-")) is not None,
        lambda row: folded in row["title"].casefold(),
        lambda row: folded in row["decision_id"].casefold(),
    ):
        hits = sorted({row["decision_id"] for row in rows if test(row)})
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise LookupError(f"{name!r} names {len(hits)} decisions: {', '.join(hits[:8])}")
    raise LookupError(f"no decision matches {name!r}")


def trace(home: Home | str | os.PathLike[str], repo_path: str | os.PathLike[str], decision: str) -> dict:
    """A decision's versions over time, its supersession chain both ways, the files it governs and the commits
    that wrote it (git blame of its lines at HEAD)."""
    with open_repo(home, repo_path) as repo:
        decision_id = resolve_decision(repo, decision)
        versions = repo.rows(
            "SELECT d.*, c.committed_at FROM decisions d JOIN commits c ON c.repo_id = d.repo_id AND c.sha = d.sha "
            "WHERE d.repo_id = $repo AND d.decision_id = $id ORDER BY c.seq",
            {"id": decision_id},
        )
        # A commit that changed the record's file but not the record's own lines is not a new version of it.
        versions = [row for index, row in enumerate(versions) if index == 0 or row["changed"] is not False]
        history = []
        for row in versions:
            version = decision_row(repo, row)
            version["version_date"] = iso(row["committed_at"])
            history.append(version)
        links = repo.links
        earlier = links.chain(decision_id, "earlier")
        later = links.chain(decision_id, "later")
        partly = sorted(links.partly_later.get(decision_id, ())) + sorted(links.partly_earlier.get(decision_id, ()))
        chain = {item["id"]: item for item in current_decisions(repo, earlier + later + partly)}
        partly_later = [i for i in sorted(links.partly_later.get(decision_id, ())) if i in chain]
        partly_earlier = [i for i in sorted(links.partly_earlier.get(decision_id, ())) if i in chain]
        governed = repo.rows(
            "SELECT path, reason, sha FROM rationale WHERE repo_id = $repo AND decision_id = $id "
            "ORDER BY path, reason, sha",
            {"id": decision_id},
        )
        files: dict[str, dict[str, Any]] = {}
        for row in governed:
            files.setdefault(row["path"], {"path": row["path"], "reasons": []})["reasons"].append(
                {"reason": row["reason"], "sha": row["sha"]}
            )
        blame = blame_lines(repo, [decision_id]).get(decision_id, {})
        written_by = [{"sha": sha, "lines": line_ranges(lines)} for sha, lines in sorted(blame.items())]
        shas = {row["sha"] for row in versions} | set(blame)
        shas |= {links.since[pair] for pair in links.since if decision_id in pair}
        commits = commits_by_sha(repo, shas)
        current = history[-1] if history else None
        if current is None:
            raise LookupError(f"decision {decision_id} has no versions in the store")
        text = (
            f"{current['title']} ({current['status']}, {current['date'] or 'undated'}, {current['path']}:"
            f"{current['lines']}): {len(history)} version(s)"
            + (f"; supersedes {', '.join(chain[i]['title'] for i in earlier if i in chain)}" if earlier else "")
            + (f"; superseded by {', '.join(chain[i]['title'] for i in later if i in chain)}" if later else "")
            + (f"; partly supersedes {', '.join(chain[i]['title'] for i in partly_earlier)}" if partly_earlier
               else "")
            + (f"; partly superseded by {', '.join(chain[i]['title'] for i in partly_later)} (the rest stays in "
               "force)" if partly_later else "")
            + f"; governs {len(files)} file(s)"
            + conflict_note([current, *current_decisions(repo, current["conflicts_with"])])
        )
        return answer(
            text,
            decisions=[current, *(chain[i] for i in dict.fromkeys(earlier + later + partly) if i in chain)],
            commits=commits,
            files=list(files.values()),
            people=[],
            decision=decision_id,
            versions=[
                {key: item[key] for key in ("sha", "version_date", "status", "date", "title", "line_start",
                                            "line_end", "text")}
                for item in history
            ],
            supersedes=earlier,
            superseded_by=later,
            partially_supersedes=partly_earlier,
            partially_superseded_by=partly_later,
            written_by=written_by,
        )
