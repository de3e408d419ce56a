"""The decision graph as an igraph graph: structural answers the tables alone do not give.

Nodes are decisions, commits, files and people, named ``kind:key`` (``file:src/app.py``, ``commit:<sha>``,
``decision:<id>``, ``person:<key>``). Edges: a decision to the files it governs (a file named in the record
weighs more than one merely changed with it) and to the commits that wrote its lines, supersession between
decisions, a commit to the files it changed, a person to the commits they wrote or co-wrote. Files are merged
across renames (the latest name stands for all). Merges and huge commits keep their people but not their files,
as in co-change: they say nothing about which files belong together.

Which files carry the most reasoning is Personalized PageRank with the walk restarting at the decisions
(retired ones at a quarter of the weight): a file many decisions reach, directly or through the commits that
wrote them, ranks high. Decision records and instruction files are left out of the ranking: they are the
reasoning, not what carries it.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import igraph as ig

from engramrag.gitgraph.instructions import is_instruction_file
from engramrag.gitgraph.tools.base import (
    Repo,
    answer,
    commits_by_sha,
    current_decisions,
    open_repo,
    people_by_key,
    record_paths,
    rename_forward,
)
from engramrag.gitgraph.tools.decisions import resolve_decision
from engramrag.store import Home

KINDS = ("decision", "commit", "file", "person")
WEIGHTS = {"named-in-record": 3.0, "changed-with-record": 1.0, "blame": 1.0, "supersedes": 1.0, "changed": 1.0,
           "wrote": 1.0}  # fmt: skip
RETIRED_RESET = 0.25
DAMPING = 0.85
HUGE_COMMIT_FILES = 50


@dataclass
class GitGraph:
    """The graph, its node names (vertex i is ``names[i]``) and a label for each node."""

    graph: ig.Graph
    names: list[str]
    labels: list[str]
    index: dict[str, int]
    reset: dict[int, float]
    head_files: set[str]
    hidden_from_rank: set[str]

    def file_rank(self, top: int = 10) -> list[dict[str, Any]]:
        """Files (present at the ingested HEAD) by the reasoning they carry, highest first."""
        if not self.reset:
            return []
        vertices, weights = zip(*sorted(self.reset.items()), strict=True)
        reset = [0.0] * len(self.names)
        for vertex, weight in zip(vertices, weights, strict=True):
            reset[vertex] = weight
        scores = self.graph.personalized_pagerank(
            damping=DAMPING, reset=reset, weights="weight", directed=False
        )
        ranked = []
        for vertex, name in enumerate(self.names):
            kind, _, key = name.partition(":")
            if kind != "file" or key in self.hidden_from_rank or (self.head_files and key not in self.head_files):
                continue
            governed_by = sum(
                1 for other in self.graph.neighbors(vertex) if self.names[other].startswith("decision:")
            )
            ranked.append({"path": key, "score": round(scores[vertex], 6), "decisions": governed_by})
        ranked.sort(key=lambda item: (-item["score"], item["path"]))
        return ranked[:top]

    def shortest_path(self, source: str, target: str) -> list[dict[str, str]]:
        """The nodes on one shortest (fewest-edge) path between two nodes; empty when they are not connected."""
        start, end = self.index[source], self.index[target]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # igraph warns when the target is unreachable
            path = self.graph.get_shortest_path(start, end, output="vpath")
        return [self.node(vertex) for vertex in path]

    def node(self, vertex: int) -> dict[str, str]:
        kind, _, key = self.names[vertex].partition(":")
        return {"node": self.names[vertex], "kind": kind, "id": key, "label": self.labels[vertex]}


class _Builder:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.labels: list[str] = []
        self.index: dict[str, int] = {}
        self.edges: list[tuple[int, int]] = []
        self.weights: list[float] = []

    def node(self, kind: str, key: str, label: str | None = None) -> int:
        name = f"{kind}:{key}"
        found = self.index.get(name)
        if found is None:
            found = self.index[name] = len(self.names)
            self.names.append(name)
            self.labels.append(label or key)
        elif label:
            self.labels[found] = label
        return found

    def edge(self, left: int, right: int, weight: float) -> None:
        if left != right:
            self.edges.append((left, right))
            self.weights.append(weight)


def load_graph(repo: Repo) -> GitGraph:
    """Build the graph of one ingested repository from the store."""
    build = _Builder()
    latest = rename_forward(repo)

    def file_node(path: str) -> int:
        name = latest.get(path, path)
        return build.node("file", name)

    decisions = repo.rows(
        "SELECT decision_id, title, status FROM decision_current WHERE repo_id = $repo ORDER BY decision_id"
    )
    for row in decisions:
        build.node("decision", row["decision_id"], row["title"])
    for row in repo.rows(
        "SELECT DISTINCT decision_id, path, reason FROM rationale WHERE repo_id = $repo ORDER BY ALL"
    ):
        build.edge(build.node("decision", row["decision_id"]), file_node(row["path"]), WEIGHTS.get(row["reason"], 1.0))
    for row in repo.rows("SELECT DISTINCT decision_id, sha FROM decision_blame WHERE repo_id = $repo ORDER BY ALL"):
        build.edge(build.node("decision", row["decision_id"]), build.node("commit", row["sha"]), WEIGHTS["blame"])
    for later, earlier in sorted(repo.links.since):
        build.edge(build.node("decision", later), build.node("decision", earlier), WEIGHTS["supersedes"])
    commits = repo.rows(
        "SELECT c.sha, c.subject, c.is_merge, count(fc.path) AS files FROM commits c LEFT JOIN file_changes fc "
        "ON fc.repo_id = c.repo_id AND fc.sha = c.sha WHERE c.repo_id = $repo "
        "GROUP BY c.sha, c.subject, c.is_merge, c.seq ORDER BY c.seq"
    )
    for row in commits:
        build.node("commit", row["sha"], f"{row['sha'][:12]} {row['subject']}")
    with_files = {row["sha"] for row in commits if not row["is_merge"] and row["files"] <= HUGE_COMMIT_FILES}
    for row in repo.rows("SELECT sha, path FROM file_changes WHERE repo_id = $repo ORDER BY sha, path"):
        if row["sha"] in with_files:
            build.edge(build.node("commit", row["sha"]), file_node(row["path"]), WEIGHTS["changed"])
    names = {row["person_key"]: row["name"] for row in repo.rows("SELECT person_key, name FROM people")}
    for row in repo.rows(
        "SELECT DISTINCT sha, person_key FROM commit_people WHERE repo_id = $repo AND role IN ('author', 'co-author') "
        "ORDER BY ALL"
    ):
        person = build.node("person", row["person_key"], names.get(row["person_key"]))
        build.edge(person, build.node("commit", row["sha"]), WEIGHTS["wrote"])
    graph = ig.Graph(n=len(build.names), edges=build.edges, directed=False)
    graph.es["weight"] = build.weights
    graph.simplify(multiple=True, loops=True, combine_edges={"weight": "sum"})
    retired = {item["id"] for item in current_decisions(repo, [row["decision_id"] for row in decisions])
               if not item["current"]}  # fmt: skip
    reset = {
        build.index[f"decision:{row['decision_id']}"]: RETIRED_RESET if row["decision_id"] in retired else 1.0
        for row in decisions
    }
    head = {row["path"] for row in repo.rows("SELECT path FROM head_files WHERE repo_id = $repo")}
    hidden = record_paths(repo) | {name for name in head if is_instruction_file(name)}
    hidden |= {latest.get(name, name) for name in hidden}
    return GitGraph(graph, build.names, build.labels, build.index, reset, head, hidden)


def resolve_node(repo: Repo, graph: GitGraph, name: str) -> str:
    """A node name from what a person types: ``kind:key``, a file path, a decision (id, number or title), a
    commit (any revision) or a person (key or name)."""
    kind, _, key = name.partition(":")
    if kind in KINDS and key:
        if kind == "commit" and f"commit:{key}" not in graph.index:
            sha = repo.git.resolve(key)
            return _known(graph, f"commit:{sha}" if sha else name)
        if kind == "decision" and name not in graph.index:
            return _known(graph, f"decision:{resolve_decision(repo, key)}")
        return _known(graph, name)
    if f"file:{name}" in graph.index:
        return f"file:{name}"
    if f"person:{name}" in graph.index:
        return f"person:{name}"
    people = [item for item in graph.index if item.startswith("person:") and graph.labels[graph.index[item]] == name]
    if len(people) == 1:
        return people[0]
    sha = repo.git.resolve(name) if not name.startswith("-") else None
    if sha and f"commit:{sha}" in graph.index:
        return f"commit:{sha}"
    return _known(graph, f"decision:{resolve_decision(repo, name)}")


def _known(graph: GitGraph, name: str) -> str:
    if name not in graph.index:
        raise LookupError(f"{name} is not a node of the decision graph")
    return name


def rank_files(
    home: Home | str | os.PathLike[str], repo_path: str | os.PathLike[str], top: int = 10
) -> dict[str, Any]:
    """The files carrying the most reasoning (PageRank restarted at the decisions), as an answer."""
    with open_repo(home, repo_path) as repo:
        graph = load_graph(repo)
        ranked = graph.file_rank(top)
        text = (
            "files carrying the most reasoning: "
            + ", ".join(f"{item['path']} ({item['decisions']} decision(s))" for item in ranked[:5])
            if ranked
            else "no decision reaches any file"
        )
        return answer(text, files=ranked, ranking=[item["path"] for item in ranked])


def shortest_path(
    home: Home | str | os.PathLike[str], repo_path: str | os.PathLike[str], source: str, target: str
) -> dict[str, Any]:
    """One shortest path between two nodes, with each node's evidence row."""
    with open_repo(home, repo_path) as repo:
        graph = load_graph(repo)
        start, end = resolve_node(repo, graph, source), resolve_node(repo, graph, target)
        nodes = graph.shortest_path(start, end)
        keys: dict[str, list[str]] = {kind: [node["id"] for node in nodes if node["kind"] == kind] for kind in KINDS}
        text = (
            f"{len(nodes) - 1} step(s): " + " -> ".join(node["label"] for node in nodes)
            if nodes
            else f"{start} and {end} are not connected"
        )
        return answer(
            text,
            decisions=current_decisions(repo, keys["decision"]),
            commits=commits_by_sha(repo, keys["commit"]),
            files=[{"path": path} for path in keys["file"]],
            people=people_by_key(repo, keys["person"]),
            path=nodes,
            source=start,
            target=end,
        )
