"""The checks a model's answer about a supersession proposal must pass, and what one call brings back.

Shared by the proposer and the verifier (``revise.proposer``, ``revise.verifier``) and the client
(``revise.model_chat``): the names of the checks in the order they are made, the answer of one call, the JSON object
an answer must be, the decision documents sent, and the quote-verbatim check of both quotes. Nothing here talks to a
server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engramrag.extract.llm.prompt import reply_json, validate
from engramrag.gitgraph.grounding import Failure, quote_failures
from engramrag.messages import one_line
from engramrag.revise.supersession import DecisionSide

# The checks a model review can fail, in the order they are made (``grounding.QUOTE_VERBATIM`` is the quote check).
DECISION_TEXT = "decision-text"  # both decisions have source text to quote from
SERVER_ANSWERED = "server-answered"
ANSWER_FORMAT = "answer-format"
PROPOSER_PROPOSES = "proposer-proposes"
VERIFIER_CONFIRMS = "verifier-confirms"


@dataclass(frozen=True)
class ChatReply:
    """One call's answer: ``data`` when it is the JSON object asked for, else the failed check and why."""

    data: dict[str, Any] | None
    failure: Failure | None
    reached: bool  # the server answered at all (even with an error status)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0


def json_object(content: str, schema: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The one JSON object in a reply (code fences and prose around it tolerated) when it fits ``schema``, else
    None and what is wrong."""
    try:
        answer = reply_json(content or "")
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return None, f"the answer is not one JSON object: {one_line(content)!r}"
    problems = validate(answer, dict(schema))
    if problems:
        return None, "the answer does not fit the schema: " + "; ".join(problems[:3])
    return answer, ""


def decision_document(side: DecisionSide, max_chars: int) -> dict[str, Any]:
    """One decision as the model sees it: its title, date, status and exact source lines (the text its quotes
    must come from)."""
    return {"title": side.title, "decided_on": side.decided_on, "status": side.status, "file": side.path,
            "text": side.quote[:max_chars]}  # fmt: skip


def quotes_failures(earlier: DecisionSide, later: DecisionSide, earlier_quote: str, later_quote: str,
                    who: str) -> list[Failure]:  # fmt: skip
    """The quote-verbatim check (``grounding.quote_failures``) of a quote from each side, each in its own
    decision's source text."""
    failures = []
    for side, quote, name in ((earlier, earlier_quote, "earlier"), (later, later_quote, "later")):
        where = f"the {name} decision's text ({side.path}, {side.title!r})"
        failures += [Failure(f.check, f"{who}'s {name} quote: {f.detail}")
                     for f in quote_failures(quote, side.quote, where)]  # fmt: skip
    return failures


def missing_text(earlier: DecisionSide, later: DecisionSide) -> Failure | None:
    """A side with no located source text cannot be quoted: nothing to ask the model about."""
    empty = [name for name, side in (("earlier", earlier), ("later", later)) if not side.quote.strip()]
    if not empty:
        return None
    return Failure(DECISION_TEXT, f"the {' and '.join(empty)} decision has no located text to quote from")
