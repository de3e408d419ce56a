"""``what_breaks``: what else moves when a file moves.

Co-change is the history's own dependency graph: files changed in the same commits tend to break together.
Huge commits (a reformat, a vendored import) and merges say nothing about a file's neighbours, so they are
left out of the counts.
"""

from __future__ import annotations

import os
import re
from typing import Any

from engramrag.gitgraph.tools.base import (
    Repo,
    answer,
    commits_by_sha,
    current_decisions,
    governing,
    open_repo,
    order_decisions,
    path_names,
    people_by_key,
    rename_forward,
    repo_relative,
)
from engramrag.store import Home

TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|__tests__|specs?|testing)/|(?:^|/)test_[^/]+$|_test\.[^/.]+$|\.(?:test|spec)\.[^/]+$|"
    r"(?:^|/)conftest\.py$|Tests?\.[^/.]+$"
)
HUGE_COMMIT_FILES = 50


def is_test_path(path: str) -> bool:
    return bool(TEST_PATH.search(path))


def what_breaks(
    home: Home | str | os.PathLike[str],
    repo_path: str | os.PathLike[str],
    path: str,
    limit: int = 20,
    max_files: int = HUGE_COMMIT_FILES,
) -> dict:
    """Files changed together with ``path`` (co-change counts over commits of at most ``max_files`` files, merges
    left out), the decisions that govern it, and the people and tests touched with it."""
    with open_repo(home, repo_path) as repo:
        path = repo_relative(repo, path)
        names = path_names(repo, path)
        touching = repo.rows(
            "SELECT DISTINCT fc.sha, size.files FROM file_changes fc "
            "JOIN commits c ON c.repo_id = fc.repo_id AND c.sha = fc.sha "
            "JOIN (SELECT sha, count(*) AS files FROM file_changes WHERE repo_id = $repo GROUP BY sha) size "
            "ON size.sha = fc.sha "
            "WHERE fc.repo_id = $repo AND NOT c.is_merge "
            "AND (list_contains($names, fc.path) OR list_contains($names, fc.old_path)) ORDER BY fc.sha",
            {"names": names},
        )
        counted = [row["sha"] for row in touching if row["files"] <= max_files]
        skipped = [row["sha"] for row in touching if row["files"] > max_files]
        latest = rename_forward(repo)
        together: dict[str, set[str]] = {}
        for row in repo.rows(
            "SELECT sha, path FROM file_changes WHERE repo_id = $repo AND list_contains($shas, sha) ORDER BY sha, path",
            {"shas": counted},
        ):
            other = latest.get(row["path"], row["path"])
            if other in names or row["path"] in names:
                continue
            together.setdefault(other, set()).add(row["sha"])
        ranked = sorted(together.items(), key=lambda item: (-len(item[1]), item[0]))
        files = [
            {
                "path": other,
                "co_changes": len(shas),
                "share": round(len(shas) / len(counted), 3) if counted else 0.0,
                "is_test": is_test_path(other),
                "shas": sorted(shas),
            }
            for other, shas in ranked
        ]
        decision_ids = sorted({row["decision_id"] for row in governing(repo, names)})
        decisions = order_decisions(current_decisions(repo, decision_ids))
        people = _people_with(repo, counted + skipped)
        tests = [item for item in files if item["is_test"]]
        shown = files[:limit]
        shown += [item for item in tests if item not in shown]
        commits = commits_by_sha(repo, counted + skipped)
        text = (
            f"{path} changed in {len(counted)} commit(s) (plus {len(skipped)} huge ones left out); "
            + (
                "most often with " + ", ".join(f"{item['path']} ({item['co_changes']}x)" for item in files[:3])
                if files
                else "never with another file"
            )
            + f"; {len(decisions)} decision(s) govern it; {len(tests)} test file(s) and {len(people)} people touched it"
        )
        return answer(
            text,
            decisions=decisions,
            commits=commits[:limit],
            files=shown,
            people=people,
            path=path,
            names=names,
            tests=[item["path"] for item in tests],
            commits_counted=len(counted),
            huge_commits_skipped=sorted(skipped),
        )


def _people_with(repo: Repo, shas: list[str]) -> list[dict[str, Any]]:
    """Everyone on those commits (authors and co-authors), most commits first; agents are marked."""
    counts: dict[str, set[str]] = {}
    for row in repo.rows(
        "SELECT sha, person_key FROM commit_people WHERE repo_id = $repo AND list_contains($shas, sha) "
        "AND role IN ('author', 'co-author')",
        {"shas": sorted(set(shas))},
    ):
        counts.setdefault(row["person_key"], set()).add(row["sha"])
    people = people_by_key(repo, counts)
    for person in people:
        person["commits"] = len(counts[person["key"]])
    people.sort(key=lambda person: (-person["commits"], person["key"]))
    return people
