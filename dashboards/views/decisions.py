"""Decisions of a git repository: the timeline of its decision records with their supersessions, the records that
hold at the ingested HEAD, and, for one commit, its diff beside the decisions it touches.

It reads the home's decision graph (``gitgraph.duckdb``, written by ``engram git ingest``) and the repository's
own clone (for the diff); it writes nothing. A reviewer looks at a change and the decisions that govern the files it
touched side by side, because whether a change goes against a decision is read in both at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboards import timeline
from dashboards.stores import escape_markdown, page_header
from engramrag.gitgraph.gitcli import Git, GitError
from engramrag.gitgraph.store import gitgraph_path, gitgraph_reader
from engramrag.gitgraph.tools import review
from engramrag.gitgraph.tools.base import is_retired_status
from engramrag.store import Home, StoreBusy

DIFF_LINES = 400
COMMITS_SHOWN = 500
QUOTE_HEIGHT = 220
STATUS_COLOURS = {"accepted": "#dbeafe", "supersed": "#e5e7eb", "obsolete": "#e5e7eb", "deprecat": "#e5e7eb",
                  "reject": "#fee2e2", "proposed": "#fef3c7"}
CONFLICT_STYLE = 'color="#ea580c", style=dashed, dir=none, label="same day", fontcolor="#ea580c"'

REPOS_SQL = "SELECT repo_id, path, head, ingested_at, commits FROM repos ORDER BY path"
DECISIONS_SQL = """
SELECT decision_id, title, decided_on, status, path, line_start, line_end, same_day_conflict, conflicts_with
FROM decision_current WHERE repo_id = ? ORDER BY decided_on NULLS LAST, path, line_start
"""
LINKS_SQL = "SELECT DISTINCT from_id, to_id FROM decision_links WHERE repo_id = ? AND kind = 'supersedes'"
COMMITS_SQL = """
SELECT sha, committed_at, subject, is_merge FROM commits WHERE repo_id = ? ORDER BY seq DESC LIMIT ?
"""


def ingest_message(path: Path) -> str:
    return (f"No git repository is ingested into `{path}` yet. Run `engram git ingest REPO --home {path}` "
            "(REPO: the folder of a clone), then reload this page.")


def render() -> None:
    path, home = page_header("Decisions")
    if home is None:
        return
    if not gitgraph_path(home).exists():
        st.info(ingest_message(path))
        return
    try:
        repos = read_repos(home)
        if repos.empty:
            st.info(ingest_message(path))
            return
        repo = _pick_repo(repos)
        decisions, links, commits = read_repository(home, repo["repo_id"])
    except StoreBusy as error:
        st.warning(str(error))
        return
    st.caption(f"`{repo['path']}` · HEAD `{str(repo['head'])[:12]}` · {repo['commits']} commits · ingested "
               f"{str(repo['ingested_at'])[:19]}")
    _timeline(decisions, links)
    _current(decisions, links)
    _commit(home, repo["path"], commits)


def read_repos(home: Home) -> pd.DataFrame:
    """The repositories ingested into ``home`` (empty when none)."""
    with gitgraph_reader(home) as connection:
        if connection is None:
            return pd.DataFrame(columns=["repo_id", "path", "head", "ingested_at", "commits"])
        return connection.execute(REPOS_SQL).df()


def read_repository(home: Home, repo: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One repository's decisions at HEAD, its supersession links (from_id supersedes to_id) and recent commits."""
    with gitgraph_reader(home) as connection:
        assert connection is not None
        decisions = connection.execute(DECISIONS_SQL, [repo]).df()
        links = connection.execute(LINKS_SQL, [repo]).df()
        commits = connection.execute(COMMITS_SQL, [repo, COMMITS_SHOWN]).df()
    decisions["decided_on"] = [value.isoformat()[:10] if pd.notna(value) else None for value in decisions["decided_on"]]
    return decisions, links, commits


def _pick_repo(repos: pd.DataFrame) -> dict[str, Any]:
    rows = repos.to_dict("records")
    if len(rows) == 1:
        return rows[0]
    chosen = st.selectbox("Repository", [row["repo_id"] for row in rows], key="decisions_repo",
                          format_func=lambda key: next(row["path"] for row in rows if row["repo_id"] == key))
    return next(row for row in rows if row["repo_id"] == chosen)


def _timeline(decisions: pd.DataFrame, links: pd.DataFrame) -> None:
    st.subheader("Timeline")
    if decisions["decided_on"].dropna().empty:
        st.caption("No dated decision records in this repository.")
        return
    st.graphviz_chart(timeline_dot(decisions, links))
    st.caption("Dated decisions from top (earliest) to bottom, one row per date, filled by status. Solid green "
               "arrows: supersessions written in the records; dashed orange lines: records of the same day that "
               "contradict each other (which came later is not known from the dates).")


def timeline_dot(decisions: pd.DataFrame, links: pd.DataFrame) -> str:
    """The repository's timeline (see ``dashboards.timeline``): its dated decisions, same-day conflicting records
    outlined, an arrow from each decision to the one that superseded it and a dashed line between conflicts."""
    dated = decisions.dropna(subset=["decided_on"])
    nodes = [
        timeline.TimelineNode(row.decision_id, row.decided_on, row.title, row.path, row.status,
                              f"{row.decided_on} {row.title} ({row.path}:{row.line_start}-{row.line_end})",
                              flagged=bool(row.same_day_conflict))
        for row in dated.itertuples(index=False)
    ]
    arrows = [timeline.TimelineArrow(row.to_id, row.from_id, timeline.SUPERSEDED_STYLE)
              for row in links.itertuples(index=False) if row.from_id != row.to_id]
    arrows += [timeline.TimelineArrow(left, right, CONFLICT_STYLE) for left, right in conflict_pairs(dated)]
    return timeline.timeline_dot(nodes, arrows, STATUS_COLOURS)


def conflict_pairs(decisions: pd.DataFrame) -> list[tuple[str, str]]:
    """Each same-day conflict once, as a sorted pair of decision ids both present in ``decisions``."""
    present = set(decisions["decision_id"])
    pairs = set()
    for row in decisions.itertuples(index=False):
        others = row.conflicts_with if row.conflicts_with is not None else []
        for other in others:
            if other in present and other != row.decision_id:
                pairs.add(tuple(sorted((row.decision_id, other))))
    return sorted(pairs)


def _current(decisions: pd.DataFrame, links: pd.DataFrame) -> None:
    st.subheader("Decisions at HEAD")
    if decisions.empty:
        st.caption("No decision records found in this repository.")
        return
    st.dataframe(decision_table(decisions, links), hide_index=True, width="stretch")


def decision_table(decisions: pd.DataFrame, links: pd.DataFrame) -> pd.DataFrame:
    """The records as they read at HEAD, with where they are and whether they still hold (not superseded by a
    link nor retired by their status)."""
    superseded = set(links["to_id"])
    return pd.DataFrame({
        "title": decisions["title"],
        "date": decisions["decided_on"],
        "status": decisions["status"],
        "holds": [not (key in superseded or is_retired_status(status))
                  for key, status in zip(decisions["decision_id"], decisions["status"], strict=True)],
        "same day conflict": decisions["same_day_conflict"].fillna(False).astype(bool),
        "where": [f"{path}:{start}-{end}" for path, start, end
                  in zip(decisions["path"], decisions["line_start"], decisions["line_end"], strict=True)],
    })  # fmt: skip


def _commit(home: Home, repo_path: str, commits: pd.DataFrame) -> None:
    st.subheader("A commit and the decisions it touches")
    if commits.empty:
        st.caption("No commits ingested.")
        return
    labels = {row.sha: f"{row.sha[:10]} · {str(row.committed_at)[:10]} · {row.subject}"
              for row in commits.itertuples(index=False)}
    sha = st.selectbox(f"Commit (the newest {len(labels)}; type a sha or words of the subject to search)",
                       list(labels), key="decisions_commit", format_func=lambda key: labels.get(key, key))
    if not sha:
        return
    diff_column, decisions_column = st.columns([3, 2])
    with diff_column:
        try:
            diff = commit_diff(repo_path, sha)
        except GitError as error:
            st.warning(f"The diff cannot be read from `{repo_path}`: {error}")
        else:
            st.code(diff, language="diff")
    with decisions_column:
        try:
            reviewed = review(home, repo_path, sha)
        except (LookupError, GitError, StoreBusy) as error:
            st.warning(str(error))
            return
        _touched(reviewed)


def commit_diff(repo_path: str, sha: str, limit: int = DIFF_LINES) -> str:
    """``git show --stat --patch`` of the commit, cut after ``limit`` lines (a large change would fill the page)."""
    text = Git(repo_path).text("show", "--stat", "--patch", "--no-color", "--format=commit %H%nAuthor: %an <%ae>%n"
                               "Date:   %aI%n%n    %s%n", sha)
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    return "\n".join(lines[:limit]) + f"\n… cut: {len(lines) - limit} more lines (git show {sha[:12]})"


def _touched(reviewed: dict[str, Any]) -> None:
    decisions = reviewed["evidence"]["decisions"]
    st.markdown(escape_markdown(reviewed["answer"]))
    for conflict in reviewed["contradictions"]:
        st.error(f"Contradicts **{escape_markdown(conflict['decision_title'])}**: names "
                 f"“{escape_markdown(conflict['term'])}” of the superseded "
                 f"**{escape_markdown(conflict['superseded_title'])}**", icon=":material/report:")
    if not decisions:
        st.caption("This commit touches no file a decision governs and changes no decision record.")
    contradicted = {item["decision"] for item in reviewed["contradictions"]}
    for decision in decisions:
        with st.container(border=True):
            st.markdown(f"**{escape_markdown(decision['title'])}**  \n"
                        f":gray[{decision['date'] or 'undated'} · {escape_markdown(decision['status'] or 'no status')}"
                        f"{'' if decision['current'] else ' · no longer holds'}]")
            notes = []
            if decision.get("governs_touched"):
                notes.append("governs " + ", ".join(f"`{path}`" for path in decision["governs_touched"]))
            if decision.get("record_changed"):
                notes.append("this commit changed its record")
            if decision["id"] in contradicted:
                notes.append(":red[the commit contradicts it]")
            if decision.get("same_day_conflict"):
                notes.append(":orange[same-day conflict]")
            st.caption(f"`{decision['path']}` lines {decision['lines']}" + "".join(f" · {note}" for note in notes))
            st.code(decision["text"] or "", language="markdown", wrap_lines=True, height=QUOTE_HEIGHT)


render()
