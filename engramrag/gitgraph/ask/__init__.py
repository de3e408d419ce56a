"""Ask: a question about a repository answered by a tool-calling model over the decision graph, and verified.

``tools_schema`` offers the decision-graph questions as tools, ``loop`` runs the conversation, ``verify`` checks the
final answer against what the tools returned in the same run. ``engram ask`` and the dashboard's Ask page use
:func:`ask`.
"""

from __future__ import annotations

from engramrag.gitgraph.ask.loop import (
    DEFAULT_MAX_STEPS,
    FAILED,
    NO_ANSWER,
    UNREACHABLE,
    VERIFIED,
    AskResult,
    Event,
    ask,
    ask_config,
    how_to_configure,
)

__all__ = [
    "DEFAULT_MAX_STEPS",
    "FAILED",
    "NO_ANSWER",
    "UNREACHABLE",
    "VERIFIED",
    "AskResult",
    "Event",
    "ask",
    "ask_config",
    "how_to_configure",
]
