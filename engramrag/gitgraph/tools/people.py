"""``who_knows``: the people to ask about a file.

Knowledge fades and small touches teach little, so each change counts by its size (log of the lines changed)
and its age (halved every ``half_life_days`` before the repository's latest commit, not before today, so an
old repository's answer does not change with the calendar). Writing lines of a decision that governs the file
counts as a substantial change, and fades the same way. Agents are ranked apart: they do not remember, but
whoever runs them may want to know which agent did the work.
"""

from __future__ import annotations

import math
import os
from typing import Any

from engramrag.gitgraph.tools.base import (
    Repo,
    answer,
    blame_lines,
    commits_by_sha,
    current_decisions,
    governing,
    iso,
    open_repo,
    path_names,
    people_by_key,
    repo_relative,
)
from engramrag.store import Home

DECISION_WEIGHT = 2.0


def who_knows(
    home: Home | str | os.PathLike[str],
    repo_path: str | os.PathLike[str],
    path: str,
    half_life_days: float = 180.0,
    limit: int = 10,
) -> dict:
    """People ranked by recent, substantial changes to the file and the decisions about it they wrote."""
    with open_repo(home, repo_path) as repo:
        path = repo_relative(repo, path)
        names = path_names(repo, path)
        latest = repo.rows("SELECT max(committed_at) AS at FROM commits WHERE repo_id = $repo")[0]["at"]
        changes = repo.rows(
            "SELECT DISTINCT cp.person_key, c.sha, c.committed_at, "
            "coalesce(fc.added, 0) + coalesce(fc.deleted, 0) AS lines FROM file_changes fc "
            "JOIN commits c ON c.repo_id = fc.repo_id AND c.sha = fc.sha "
            "JOIN commit_people cp ON cp.repo_id = fc.repo_id AND cp.sha = fc.sha "
            "WHERE fc.repo_id = $repo AND cp.role IN ('author', 'co-author') AND NOT c.is_merge "
            "AND (list_contains($names, fc.path) OR list_contains($names, fc.old_path))",
            {"names": names},
        )
        scores: dict[str, dict[str, Any]] = {}

        def entry(key: str) -> dict[str, Any]:
            return scores.setdefault(key, {"score": 0.0, "shas": set(), "lines": 0, "last": None, "decisions": set()})

        for row in changes:
            age_days = max((latest - row["committed_at"]).total_seconds() / 86400.0, 0.0)
            item = entry(row["person_key"])
            item["score"] += (1.0 + math.log1p(row["lines"])) * 0.5 ** (age_days / half_life_days)
            item["shas"].add(row["sha"])
            item["lines"] += row["lines"]
            item["last"] = max(item["last"] or row["committed_at"], row["committed_at"])
        decision_ids = sorted({row["decision_id"] for row in governing(repo, names)})
        blame = blame_lines(repo, decision_ids)
        writers = _authors(repo, {sha for shas in blame.values() for sha in shas})
        credit: dict[tuple[str, str], float] = {}
        for decision_id, shas in blame.items():
            for sha in shas:
                written, keys = writers.get(sha, (None, ()))
                for key in keys:
                    age_days = max((latest - written).total_seconds() / 86400.0, 0.0)
                    weight = DECISION_WEIGHT * 0.5 ** (age_days / half_life_days)
                    credit[key, decision_id] = max(credit.get((key, decision_id), 0.0), weight)
        for (key, decision_id), weight in sorted(credit.items()):
            item = entry(key)
            item["decisions"].add(decision_id)
            item["score"] += weight
        people = people_by_key(repo, scores)
        for person in people:
            item = scores[person["key"]]
            person.update(
                score=round(item["score"], 4),
                commits=len(item["shas"]),
                lines=item["lines"],
                last_change=iso(item["last"]),
                decisions=sorted(item["decisions"]),
            )
        people.sort(key=lambda person: (-person["score"], person["key"]))
        humans = [person for person in people if not person["is_agent"]][:limit]
        agents = [person for person in people if person["is_agent"]][:limit]
        if not people:
            raise LookupError(f"nobody changed {path} in {repo.root} (as ingested)")
        text = f"{path}: ask " + (
            ", ".join(f"{person['name']} ({person['commits']} commit(s))" for person in humans[:3]) or "nobody human"
        )
        if agents:
            text += "; agents that worked on it: " + ", ".join(person["name"] for person in agents)
        shas = {sha for person in humans + agents for sha in scores[person["key"]]["shas"]}
        return answer(
            text,
            decisions=current_decisions(repo, decision_ids),
            commits=commits_by_sha(repo, shas | set(writers)),
            files=[{"path": name} for name in names],
            people=humans + agents,
            path=path,
            ranking=[person["key"] for person in humans],
            agents=[person["key"] for person in agents],
        )


def _authors(repo: Repo, shas: set[str]) -> dict[str, tuple[Any, set[str]]]:
    """sha -> (when it was committed, the keys of its author and co-authors)."""
    found: dict[str, tuple[Any, set[str]]] = {}
    for row in repo.rows(
        "SELECT cp.sha, cp.person_key, c.committed_at FROM commit_people cp JOIN commits c ON c.repo_id = cp.repo_id "
        "AND c.sha = cp.sha WHERE cp.repo_id = $repo AND list_contains($shas, cp.sha) "
        "AND cp.role IN ('author', 'co-author')",
        {"shas": sorted(shas)},
    ):
        found.setdefault(row["sha"], (row["committed_at"], set()))[1].add(row["person_key"])
    return found
