"""The decision-graph questions offered to a model as tools: their JSON schemas and one dispatcher.

Each tool is one of :mod:`engramrag.gitgraph.tools` (and rank/path from :mod:`engramrag.gitgraph.graph`), asked
about the one repository the run is about, so the model never names a repository. Paths are relative to the
repository's top folder. A tool that cannot answer (an unknown file, an ambiguous decision name) gives the model
the reason as its result, so it can ask again; only successful answers count as evidence.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engramrag.store import Home

LIST_LIMIT = 20  # items of each list shown to the model (the full answer is kept for verification)
TEXT_LIMIT = 2000  # characters of each string shown to the model

Question = Callable[[Home | str | os.PathLike[str], Path, Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]
    run: Question

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": self.properties,
                    "required": list(self.required),
                    "additionalProperties": False,
                },
            },
        }


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


PATH = _string("A file path relative to the repository's top folder, e.g. src/app.py.")
COMMIT = _string("A commit: a sha (7 or more hex digits), HEAD, HEAD~2, a tag or a branch.")


def _why(home: Any, repo: Path, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from engramrag.gitgraph.tools import why

    return why(home, repo, arguments["path"])


def _what_breaks(home: Any, repo: Path, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from engramrag.gitgraph.tools import what_breaks

    return what_breaks(home, repo, arguments["path"])


def _who_knows(home: Any, repo: Path, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from engramrag.gitgraph.tools import who_knows

    return who_knows(home, repo, arguments["path"])


def _disproven(home: Any, repo: Path, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from engramrag.gitgraph.tools import disproven

    return disproven(home, repo, arguments["topic"])


def _trace(home: Any, repo: Path, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from engramrag.gitgraph.tools import trace

    return trace(home, repo, arguments["decision"])


def _origin(home: Any, repo: Path, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from engramrag.gitgraph.tools import origin

    return origin(home, repo, arguments["path"], arguments.get("line"))


def _told(home: Any, repo: Path, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from engramrag.gitgraph.tools import told

    return told(home, repo, arguments["commit"])


def _review(home: Any, repo: Path, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from engramrag.gitgraph.tools import review
    from engramrag.gitgraph.tools.commits import review_range

    commit = arguments["commit"]
    return review_range(home, repo, commit) if ".." in commit else review(home, repo, commit)


def _rank(home: Any, repo: Path, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from engramrag.gitgraph.graph import rank_files

    return rank_files(home, repo, max(1, min(int(arguments.get("top") or 10), 100)))


def _path(home: Any, repo: Path, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from engramrag.gitgraph.graph import shortest_path

    return shortest_path(home, repo, arguments["source"], arguments["target"])


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool("why", "Why a file is the way it is: the decisions governing it (current first, superseded ones "
             "marked), with their exact source lines, the commits that changed it and the commits that wrote "
             "those decisions.", {"path": PATH}, ("path",), _why),
        Tool("what_breaks", "What a change to a file may break: files changed together with it, decisions naming "
             "it, people and tests touched with it.", {"path": PATH}, ("path",), _what_breaks),
        Tool("who_knows", "Who knows a file: people ranked by recent, substantial changes and decisions they "
             "wrote; AI agents listed apart.", {"path": PATH}, ("path",), _who_knows),
        Tool("disproven", "Decisions about a topic that were superseded or retired (obsolete, deprecated, "
             "rejected), with what replaced them and when.",
             {"topic": _string("Words that must all occur in the decision's title or text, e.g. 'catalog'.")},
             ("topic",), _disproven),
        Tool("trace", "One decision's whole life: its versions, its supersession chain both ways, the files it "
             "governs and the commits that wrote its lines.",
             {"decision": _string("A decision id as a tool returned it, a record's path, an ADR number "
                                  "(ADR-4 or 4) or words of its title.")},
             ("decision",), _trace),
        Tool("origin", "The commit that introduced a file, or one of its lines, and the decisions governing the "
             "file that were in force then.",
             {"path": PATH, "line": {"type": "integer", "description": "A line number (1-based); omit for the "
                                     "whole file."}},
             ("path",), _origin),
        Tool("told", "The agent-instruction sections (AGENTS.md, CLAUDE.md, ...) in force for the files a commit "
             "touched, and the AI agents on that commit.", {"commit": COMMIT}, ("commit",), _told),
        Tool("review", "The decisions a commit (or every commit of a range BASE..HEAD) touches or contradicts, "
             "and the instructions in force when it was written.",
             {"commit": _string("A commit (sha, HEAD~1, a tag) or a range BASE..HEAD.")}, ("commit",), _review),
        Tool("rank", "The files carrying the most reasoning: PageRank over files, commits, decisions and people, "
             "restarted at the decisions.",
             {"top": {"type": "integer", "description": "How many files (1-100, default 10)."}}, (), _rank),
        Tool("path", "One shortest path between two nodes of the decision graph, each node with its evidence.",
             {"source": _string("kind:key (file:src/a.py, commit:SHA, decision:ID, person:KEY) or a name."),
              "target": _string("Like source.")},
             ("source", "target"), _path),
    )
}  # fmt: skip


def tool_schemas() -> list[dict[str, Any]]:
    """The ``tools`` argument of a chat completion request."""
    return [tool.schema() for tool in TOOLS.values()]


@dataclass(frozen=True)
class ToolOutcome:
    """One tool call's outcome: the full answer (kept for verification) or the reason it failed."""

    name: str
    arguments: dict[str, Any]
    result: dict[str, Any] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None

    def for_model(self) -> str:
        """The tool message's content: the answer with long lists and texts cut, or the error."""
        if self.result is None:
            return json.dumps({"error": self.error}, ensure_ascii=False)
        return json.dumps(_compact(self.result), ensure_ascii=False, default=str)

    def summary(self) -> str:
        """One line for people: the tool's own answer text and how much evidence came with it."""
        if self.result is None:
            return f"error: {self.error}"
        evidence = self.result.get("evidence", {})
        counts = ", ".join(f"{len(items)} {kind}" for kind, items in evidence.items() if items)
        text = str(self.result.get("answer", ""))
        text = text if len(text) <= 240 else text[:239] + "…"
        return f"{text} [{counts or 'no evidence'}]"


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """A tool call's arguments (a JSON object as text; empty means none), or ValueError saying what is wrong."""
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as error:
        raise ValueError(f"the arguments are not JSON ({error})") from error
    if not isinstance(value, dict):
        raise ValueError(f"the arguments must be a JSON object, got {type(value).__name__}")
    return value


def check_arguments(tool: Tool, arguments: Mapping[str, Any]) -> list[str]:
    """What is wrong with the arguments under the tool's schema: missing, unexpected or of the wrong type."""
    problems = [f"{name} is missing" for name in tool.required if arguments.get(name) in (None, "")]
    for name, value in arguments.items():
        spec = tool.properties.get(name)
        if spec is None:
            problems.append(f"{name} is not an argument of {tool.name} (it takes {', '.join(tool.properties)})")
        elif value is None:
            continue
        elif spec["type"] == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            problems.append(f"{name} must be an integer, got {value!r}")
        elif spec["type"] == "string" and not isinstance(value, str):
            problems.append(f"{name} must be a string, got {value!r}")
    return problems


def call_tool(home: Home | str | os.PathLike[str], repo: Path, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
    """Run one tool call on the repository; never raises for the model's mistakes or a question with no answer."""
    tool = TOOLS.get(name)
    given = dict(arguments)
    if tool is None:
        return ToolOutcome(name, given, error=f"there is no tool {name!r}; the tools are {', '.join(TOOLS)}")
    problems = check_arguments(tool, given)
    if problems:
        return ToolOutcome(name, given, error="; ".join(problems))
    try:
        return ToolOutcome(name, given, result=tool.run(home, repo, given))
    except (LookupError, ValueError) as error:
        return ToolOutcome(name, given, error=str(error))


def _compact(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _compact(item) for key, item in value.items()}
    if isinstance(value, list):
        shown = [_compact(item) for item in value[:LIST_LIMIT]]
        if len(value) > LIST_LIMIT:
            shown.append(f"… {len(value) - LIST_LIMIT} more not shown")
        return shown
    if isinstance(value, str) and len(value) > TEXT_LIMIT:
        return value[: TEXT_LIMIT - 1] + "…"
    return value


__all__ = ["TOOLS", "Tool", "ToolOutcome", "call_tool", "check_arguments", "parse_arguments", "tool_schemas"]
