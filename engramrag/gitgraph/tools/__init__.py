"""The questions the decision graph answers about a repository, each ``(home, repo_path, ...) -> dict``.

Every answer is ``{"answer": short text, "evidence": {"decisions", "commits", "files", "people"}, ...}`` with
ids, dates and exact source lines, plus fields particular to the question.
"""

from __future__ import annotations

from engramrag.gitgraph.tools.commits import review, told
from engramrag.gitgraph.tools.decisions import disproven, trace
from engramrag.gitgraph.tools.impact import what_breaks
from engramrag.gitgraph.tools.people import who_knows
from engramrag.gitgraph.tools.why import origin, why

__all__ = ["disproven", "origin", "review", "told", "trace", "what_breaks", "who_knows", "why"]
