"""``told`` and ``review``: one commit against the instructions and decisions in force when it was written.

``told`` reads the instruction files of the commit's own tree, so a commit on a branch is matched with what
its checkout held, not with whatever the main line said at the same hour. ``review`` flags a change to a file
governed by a decision when the change names an alternative that decision superseded: the usual way a
settled question gets quietly reopened.
"""

from __future__ import annotations

import os
import re
from typing import Any

from engramrag.gitgraph.instructions import governs, instruction_scope
from engramrag.gitgraph.tools.base import (
    Repo,
    answer,
    commits_by_sha,
    current_decisions,
    governing,
    iso,
    open_repo,
    order_decisions,
    people_by_key,
    record_paths,
    resolve_commit,
)
from engramrag.revise.supersession import TITLE_STOPWORDS, WORD
from engramrag.store import Home

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
MIN_TERM = 3
MAX_MENTIONS = 5


def told(home: Home | str | os.PathLike[str], repo_path: str | os.PathLike[str], commit: str) -> dict:
    """The instruction-file sections in force at a commit for the files it touched (with exact lines), and the
    agents on the commit (author or co-author)."""
    with open_repo(home, repo_path) as repo:
        row = resolve_commit(repo, commit)
        return _told(repo, row)


def _told(repo: Repo, commit: dict[str, Any]) -> dict:
    sha = commit["sha"]
    touched = touched_files(repo, sha)
    sections, files = instructions_in_force(repo, commit, touched)
    agents = commit_agents(repo, sha)
    in_force = sorted({item["path"] for item in files})
    text = (
        f"{sha[:12]} ({commit['subject']}) touched {len(touched)} file(s); "
        + (f"in force: {', '.join(in_force)} ({len(sections)} section(s))" if in_force else "no instruction file "
           "governed them")
        + (f"; agents: {', '.join(agent['name'] for agent in agents)}" if agents else "; no agent on the commit")
    )
    version_shas = {item["version_sha"] for item in files if item["version_sha"]}
    return answer(
        text,
        commits=[commit, *commits_by_sha(repo, version_shas - {sha})],
        files=[
            *({**item, "touched": item["path"] in touched} for item in files),
            *({"path": path, "touched": True} for path in touched if path not in in_force),
        ],
        people=agents,
        commit=sha,
        touched=touched,
        instructions=sections,
        agents=[agent["key"] for agent in agents],
    )


def touched_files(repo: Repo, sha: str) -> list[str]:
    """Every path the commit changed, renamed files under both names."""
    paths: set[str] = set()
    for row in repo.rows(
        "SELECT path, old_path FROM file_changes WHERE repo_id = $repo AND sha = $sha", {"sha": sha}
    ):
        paths.add(row["path"])
        if row["old_path"]:
            paths.add(row["old_path"])
    return sorted(paths)


def instructions_in_force(
    repo: Repo, commit: dict[str, Any], touched: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The sections of each instruction file in the commit's tree that governs a touched file, read from the
    stored version with that file's blob (the latest such version at or before the commit)."""
    tree = repo.git.tree(commit["sha"])
    sections: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    for path in sorted(tree):
        scope = instruction_scope(path)
        if scope is None or not any(governs(scope, item) for item in touched):
            continue
        rows = _version_sections(repo, path, tree[path], commit["_seq"])
        files.append(
            {
                "path": path,
                "scope": scope or "(repository)",
                "version_sha": rows[0]["sha"] if rows else None,
                "changed_by_this_commit": path in touched,
                "governs": [item for item in touched if governs(scope, item)],
            }
        )
        for row in rows:
            sections.append(
                {
                    "path": path,
                    "sha": row["sha"],
                    "version_date": iso(row["committed_at"]),
                    "section": row["section"],
                    "line_start": row["line_start"],
                    "line_end": row["line_end"],
                    "lines": f"{row['line_start']}-{row['line_end']}",
                    "text": row["text"],
                }
            )
    return sections, files


def _version_sections(repo: Repo, path: str, blob: str, seq: int) -> list[dict[str, Any]]:
    """The sections of the stored version of ``path`` whose content is ``blob``: the latest one written at or
    before commit number ``seq`` (a later one only when the same text was restored afterwards)."""
    return repo.rows(
        "WITH version AS (SELECT v.sha FROM instruction_versions v JOIN commits c ON c.repo_id = v.repo_id "
        "AND c.sha = v.sha WHERE v.repo_id = $repo AND v.path = $path AND v.blob = $blob "
        "ORDER BY c.seq <= $seq DESC, CASE WHEN c.seq <= $seq THEN -c.seq ELSE c.seq END LIMIT 1) "
        "SELECT v.sha, v.committed_at, v.section, v.line_start, v.line_end, v.text FROM instruction_versions v "
        "JOIN version USING (sha) WHERE v.repo_id = $repo AND v.path = $path ORDER BY v.line_start",
        {"path": path, "blob": blob, "seq": seq},
    )


def commit_agents(repo: Repo, sha: str) -> list[dict[str, Any]]:
    roles: dict[str, set[str]] = {}
    for row in repo.rows(
        "SELECT cp.person_key, cp.role FROM commit_people cp JOIN people p ON p.person_key = cp.person_key "
        "WHERE cp.repo_id = $repo AND cp.sha = $sha AND p.is_agent",
        {"sha": sha},
    ):
        roles.setdefault(row["person_key"], set()).add(row["role"])
    agents = people_by_key(repo, roles)
    for agent in agents:
        agent["roles"] = sorted(roles[agent["key"]])
    return agents


def review(home: Home | str | os.PathLike[str], repo_path: str | os.PathLike[str], commit: str) -> dict:
    """The decisions a commit touches (files they govern, records it changed), whether it contradicts a current
    decision by naming an alternative that decision superseded, and the instructions in force (``told``)."""
    with open_repo(home, repo_path) as repo:
        return _review(repo, resolve_commit(repo, commit))


def review_range(home: Home | str | os.PathLike[str], repo_path: str | os.PathLike[str], revisions: str) -> dict:
    """``review`` of every commit in ``BASE..HEAD`` (merges left out: their changes are their branches'
    commits'), oldest first, with the decisions the whole change touches, contradicts or records."""
    base, dots, head = revisions.partition("..")
    if not dots or not base or not head.lstrip("."):
        raise ValueError(f"{revisions!r} is not a range; write BASE..HEAD (for example origin/main..HEAD)")
    with open_repo(home, repo_path) as repo:
        start, end = resolve_commit(repo, base), resolve_commit(repo, head.lstrip("."))
        shas = repo.git.rev_list([f"^{start['sha']}", end["sha"]])
        rows = {row["sha"]: row for row in commits_by_sha(repo, shas)}
        missing = [sha for sha in shas if sha not in rows]
        if missing:
            raise LookupError(
                f"{len(missing)} commit(s) of {revisions} are not ingested yet: run `engram git ingest {repo.root}`"
            )
        reviews = [_review(repo, rows[sha]) for sha in shas if not rows[sha]["is_merge"]]
        commits = commits_by_sha(repo, [item["commit"] for item in reviews])
    decisions: dict[str, dict[str, Any]] = {}
    for item in reviews:
        for decision in item["evidence"]["decisions"]:
            known = decisions.setdefault(decision["id"], {**decision, "governs_touched": [], "commits": []})
            known["governs_touched"] = sorted({*known["governs_touched"], *decision.get("governs_touched", ())})
            known["record_changed"] = known.get("record_changed") or decision.get("record_changed", False)
            if decision.get("governs_touched") or decision.get("record_changed"):
                known["commits"].append(item["commit"])
    conflicts = [{**conflict, "commit": item["commit"]} for item in reviews for conflict in item["contradictions"]]
    touched = [decision for decision in decisions.values() if decision["commits"]]
    text = (
        f"{revisions}: {len(reviews)} commit(s) touch {len(touched)} decision(s)"
        + (f"; {len(conflicts)} CONTRADICTION(S) with current decisions" if conflicts else "; no contradiction")
    )
    return answer(
        text,
        decisions=order_decisions(touched),
        commits=commits,
        range=revisions,
        reviews=reviews,
        contradictions=conflicts,
        records_changed=sorted({record for item in reviews for record in item["records_changed"]}),
        supersessions_recorded=[link for item in reviews for link in item["supersessions_recorded"]],
    )


def _review(repo: Repo, row: dict[str, Any]) -> dict:
    sha = row["sha"]
    touched = touched_files(repo, sha)
    governed = governed_by(repo, touched, row["_seq"])
    written = {
        item["decision_id"]
        for item in repo.rows(
            "SELECT DISTINCT decision_id FROM decisions WHERE repo_id = $repo AND sha = $sha AND changed IS NOT false",
            {"sha": sha},
        )
    }
    linked = {
        (item["from_id"], item["to_id"])
        for item in repo.rows(
            "SELECT from_id, to_id FROM decision_links WHERE repo_id = $repo AND source_sha = $sha", {"sha": sha}
        )
    }
    decisions = order_decisions(current_decisions(repo, set(governed) | written))
    for decision in decisions:
        decision["governs_touched"] = sorted(governed.get(decision["id"], ()))
        decision["record_changed"] = decision["id"] in written
    conflicts = contradictions(repo, row, touched, governed, written, linked)
    instructions = _told(repo, row)
    related = current_decisions(
        repo, {item["superseded"] for item in conflicts} - {item["id"] for item in decisions}
    )
    text = (
        f"{sha[:12]} ({row['subject']}) touches {len(decisions)} decision(s)"
        + (f" and changes the records of {len(written)}" if written else "")
        + "; "
        + (
            "CONTRADICTS " + "; ".join(
                f"{item['decision_title']} by naming {item['term']!r} of superseded {item['superseded_title']}"
                for item in conflicts[:3]
            )
            if conflicts
            else "no contradiction with a current decision found"
        )
        + f"; {len(instructions['instructions'])} instruction section(s) in force"
    )
    return answer(
        text,
        decisions=[*decisions, *related],
        commits=instructions["evidence"]["commits"],
        files=instructions["evidence"]["files"],
        people=instructions["evidence"]["people"],
        commit=sha,
        touched=touched,
        contradictions=conflicts,
        records_changed=sorted(written),
        supersessions_recorded=[{"from": later, "to": earlier} for later, earlier in sorted(linked)],
        instructions=instructions["instructions"],
        agents=instructions["agents"],
    )


def governed_by(repo: Repo, touched: list[str], seq: int) -> dict[str, set[str]]:
    """Decision id -> the touched files it governs, for the decisions written at or before commit number ``seq``
    (a record written later cannot have been contradicted by this commit)."""
    existing = {
        item["decision_id"]
        for item in repo.rows(
            "SELECT DISTINCT d.decision_id FROM decisions d JOIN commits c ON c.repo_id = d.repo_id AND c.sha = d.sha "
            "WHERE d.repo_id = $repo AND c.seq <= $seq",
            {"seq": seq},
        )
    }
    found: dict[str, set[str]] = {}
    for link in governing(repo, touched):
        if link["decision_id"] not in existing:
            continue
        scope = link["path"]
        for path in touched:
            if path == scope or (scope.endswith("/") and path.startswith(scope)):
                found.setdefault(link["decision_id"], set()).add(path)
    return found


def contradictions(
    repo: Repo,
    commit: dict[str, Any],
    touched: list[str],
    governed: dict[str, set[str]],
    written: set[str],
    linked: set[tuple[str, str]],
) -> list[dict[str, Any]]:
    """Each (current decision, superseded alternative) pair where one of the two governs a touched file, the
    supersession was recorded before the commit, and the commit's message or added lines name a word of the
    alternative's title that the current decision's title does not use. The commits that wrote either record
    or recorded the supersession are not flagged: saying what was replaced is their job."""
    links = repo.links
    if not links.since:
        return []
    recorded = {
        item["sha"]: item["seq"]
        for item in repo.rows(
            "SELECT sha, seq FROM commits WHERE repo_id = $repo AND list_contains($shas, sha)",
            {"shas": sorted(set(links.since.values()))},
        )
    }
    superseded_at: dict[str, Any] = {}
    for (_later, earlier), source in links.since.items():
        if source in recorded:
            at = recorded[source]
            superseded_at[earlier] = min(superseded_at.get(earlier, at), at)
    pairs = {
        (later, earlier)
        for decision_id in governed
        for later in [decision_id, *links.chain(decision_id, "later")]
        for earlier in links.chain(later, "earlier")
    }
    titles = {item["id"]: item for item in current_decisions(repo, {name for pair in pairs for name in pair})}
    message = f"{commit['subject']}\n{_body(repo, commit['sha'])}"
    added = None
    found: list[dict[str, Any]] = []
    for later, earlier in sorted(pairs):
        if later not in titles or earlier not in titles or not titles[later]["current"]:
            continue
        if {later, earlier} & written or (later, earlier) in linked:
            continue
        if earlier not in superseded_at or superseded_at[earlier] > commit["_seq"]:
            continue
        terms = distinctive_terms(titles[earlier]["title"], titles[later]["title"])
        if not terms:
            continue
        if added is None:
            added = added_lines(repo, commit["sha"], record_paths(repo))
        for term in terms:
            mentions = _mentions(term, message, added)
            if mentions:
                found.append(
                    {
                        "decision": later,
                        "decision_title": titles[later]["title"],
                        "superseded": earlier,
                        "superseded_title": titles[earlier]["title"],
                        "term": term,
                        **mentions[0],
                        "mentions": mentions[:MAX_MENTIONS],
                    }
                )
                break
    return found


def _body(repo: Repo, sha: str) -> str:
    rows = repo.rows("SELECT body FROM commits WHERE repo_id = $repo AND sha = $sha", {"sha": sha})
    return (rows[0]["body"] or "") if rows else ""


def distinctive_terms(earlier_title: str, later_title: str) -> list[str]:
    """Words of the superseded title that name the alternative: not in the later title, not a stopword."""
    later = {word.casefold() for word in WORD.findall(later_title)}
    terms: list[str] = []
    for word in WORD.findall(earlier_title):
        folded = word.casefold()
        if folded in later or folded in terms or folded in TITLE_STOPWORDS or folded.isdigit():
            continue
        if len(folded) >= MIN_TERM:
            terms.append(folded)
    return terms


def _mentions(term: str, message: str, added: list[tuple[str, int, str]]) -> list[dict[str, Any]]:
    """Where the commit names ``term`` at the start of a word (``sqlite3`` and ``postgresql`` name ``sqlite`` and
    ``postgres``): lines of its message, then lines it added."""
    pattern = re.compile(rf"(?<!\w){re.escape(term)}", re.IGNORECASE)
    found = [
        {"where": "message", "path": None, "line": number, "text": line}
        for number, line in enumerate(message.split("\n"), 1)
        if pattern.search(line)
    ]
    found += [
        {"where": "diff", "path": path, "line": number, "text": line}
        for path, number, line in added
        if pattern.search(line)
    ]
    return found


def added_lines(repo: Repo, sha: str, skip: set[str]) -> list[tuple[str, int, str]]:
    """The lines the commit added (path, line number in the new file, text), against its first parent; files
    in ``skip`` (the decision records) are left out."""
    out = repo.git.text(
        "diff-tree", "-p", "-U0", "-M", "--no-color", "--no-ext-diff", "--no-textconv", "--root", "-m",
        "--first-parent", "--no-commit-id", "--end-of-options", sha,
    )  # fmt: skip
    found: list[tuple[str, int, str]] = []
    path: str | None = None
    number = 0
    for line in out.split("\n"):
        if line.startswith("+++ "):
            target = line[4:]
            path = target[2:] if target.startswith("b/") else None
        elif line.startswith("@@"):
            hunk = HUNK.match(line)
            number = int(hunk.group(1)) if hunk else 0
        elif line.startswith("+") and path is not None:
            if path not in skip:
                found.append((path, number, line[1:]))
            number += 1
    return found
