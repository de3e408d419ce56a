"""The model server the supersession proposer and verifier talk to, and the checks both of their answers pass.

Off by default: the model reviews supersession proposals only with ``ENGRAM_LLM_SUPERSESSION=1`` and a server
configured with the extractor's settings (``ENGRAM_LLM_BASE_URL``, ``ENGRAM_LLM_MODEL``, ``ENGRAM_LLM_API_KEY``,
``ENGRAM_LLM_TIMEOUT_S``, ``ENGRAM_LLM_MAX_RETRIES``, ``ENGRAM_LLM_TEMPERATURE``,
``ENGRAM_LLM_STRUCTURED_OUTPUT``: :class:`LLMConfig`). The settings are read when asked for, never at import.

One call is one request for one JSON object. Nothing here raises on a bad answer: a server error or an answer
that is not the JSON asked for comes back as a :class:`ChatReply` naming the check that failed
(``server-answered`` or ``answer-format``), so a batch never stops on one pair. The decision texts go to the model
as data inside a JSON document, and the system prompts say so: stored text is never an instruction.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engramrag.extract.llm.config import LLMConfig, env_name
from engramrag.extract.llm.prompt import reply_json, validate
from engramrag.gitgraph.grounding import Failure, quote_failures
from engramrag.messages import one_line
from engramrag.revise.supersession import DecisionSide

ENABLE_ENV = "ENGRAM_LLM_SUPERSESSION"
# The checks a model review can fail, in the order they are made (``grounding.QUOTE_VERBATIM`` is the quote check).
DECISION_TEXT = "decision-text"  # both decisions have source text to quote from
SERVER_ANSWERED = "server-answered"
ANSWER_FORMAT = "answer-format"
PROPOSER_PROPOSES = "proposer-proposes"
VERIFIER_CONFIRMS = "verifier-confirms"
FORMAT_WORDS = ("response_format", "json_object", "json_schema", "structured")


@dataclass(frozen=True)
class ModelReviewConfig:
    """Settings of the model review of supersession proposals; ``from_env`` reads them from the environment."""

    enabled: bool = field(
        default=False,
        metadata={"help": f"Let a model propose and a second, independent call verify supersessions (env {ENABLE_ENV}"
                  "=1); off by default, and off whatever this says when no server is configured."},
    )
    server: LLMConfig | None = field(
        default=None,
        metadata={"help": f"The chat server, the extractor's settings ({env_name('base_url')}, {env_name('model')}, "
                  f"{env_name('api_key')}...); None: no server configured."},
    )
    max_pairs: int = field(
        default=200,
        metadata={"help": "Most proposals asked about in one recomputation, best score first; the others wait for a "
                  "person as without a model."},
    )
    max_tokens: int = field(default=600, metadata={"help": "Longest answer one call may give."})
    max_text_chars: int = field(
        default=6000, metadata={"help": "Longest decision text sent to the model; a longer one is cut."}
    )
    unreachable_after: int = field(
        default=3,
        metadata={"help": "Pairs in a row whose call got no answer from the server, after which the remaining pairs "
                  "are not asked in this recomputation (they wait for a person, and the next one asks again)."},
    )
    problem: str = field(default="", metadata={"help": "Why the server settings could not be read, if they could not."})

    def __post_init__(self) -> None:
        for name in ("max_pairs", "max_tokens", "max_text_chars", "unreachable_after"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be 1 or more, got {getattr(self, name)}")

    @property
    def active(self) -> bool:
        """Whether proposals are sent to a model at all."""
        return self.enabled and self.server is not None

    @property
    def model(self) -> str:
        return self.server.model if self.server is not None else ""

    def settings(self) -> str:
        """What the review's outputs depend on, for the build's freshness check."""
        if not self.active:
            return "off"
        assert self.server is not None
        return f"{self.server.base_url}|{self.model}|{self.max_pairs}|{self.max_text_chars}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ModelReviewConfig:
        """``ENGRAM_LLM_SUPERSESSION`` (1/true/yes/on enables it) and the server from ``ENGRAM_LLM_*``; a server
        that is not configured (or configured wrongly) leaves the review off and says why in ``problem``."""
        environ = os.environ if environ is None else environ
        enabled = environ.get(ENABLE_ENV, "").strip().lower() in ("1", "true", "yes", "on")
        server, problem = None, ""
        if enabled:
            try:
                server = LLMConfig.from_environment(environ)
            except ValueError as error:
                problem = str(error)
        return cls(**({"enabled": enabled, "server": server, "problem": problem} | overrides))


@dataclass(frozen=True)
class ChatReply:
    """One call's answer: ``data`` when it is the JSON object asked for, else the failed check and why."""

    data: dict[str, Any] | None
    failure: Failure | None
    reached: bool  # the server answered at all (even with an error status)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0


class ModelChat:
    """Asks for one JSON object per call through the official ``openai`` client; safe to share between threads.
    Every call is a fresh conversation: nothing of one call reaches another."""

    def __init__(self, config: ModelReviewConfig) -> None:
        import openai  # imported when a client is used: the settings module is read by every build

        if config.server is None:
            raise ValueError(f"the supersession review needs a model server: set {env_name('base_url')} and "
                             f"{env_name('model')}")
        self.config = config
        self.server = config.server
        self._json_mode = self.server.structured_output != "none"
        self._client = openai.OpenAI(
            base_url=self.server.base_url,
            api_key=self.server.api_key or "not-needed",  # the client insists on a key; local servers ignore it
            timeout=self.server.timeout_s,
            max_retries=self.server.max_retries,
        )

    def ask(self, system: str, document: Mapping[str, Any], schema: Mapping[str, Any]) -> ChatReply:
        """The answer to ``document`` (sent as JSON data) under the ``system`` instructions, checked against
        ``schema``; never raises for what the server or the model does."""
        import openai

        started = time.perf_counter()
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": json.dumps(document, ensure_ascii=False, indent=1)},
        ]
        arguments: dict[str, Any] = {
            "model": self.server.model,
            "messages": messages,
            "temperature": self.server.temperature,
            "max_tokens": self.config.max_tokens,
        }
        try:
            response = self._create(arguments)
            content = response.choices[0].message.content or ""
            usage = getattr(response, "usage", None)
        except openai.APIStatusError as error:
            return _failed(SERVER_ANSWERED, f"HTTP {error.status_code} from {self.server.base_url}: {one_line(error)}",
                           True, started)
        except openai.APIConnectionError as error:  # timeouts included
            cause = error.__cause__ or error
            return _failed(SERVER_ANSWERED, f"no answer from {self.server.base_url}: {type(cause).__name__}: "
                           f"{one_line(cause)}", False, started)
        except (openai.OpenAIError, ValueError, IndexError, AttributeError, TypeError) as error:
            return _failed(ANSWER_FORMAT, f"the server's answer is not a chat completion: {one_line(error)}", True,
                           started)
        tokens = (int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))
        data, problem = json_object(content, schema)
        if data is None:
            return ChatReply(None, Failure(ANSWER_FORMAT, problem), True, *tokens, _since(started))
        return ChatReply(data, None, True, *tokens, _since(started))

    def _create(self, arguments: dict[str, Any]) -> Any:
        """One completion; a server that rejects JSON mode is asked again without it (and not asked with it
        again in this run) when the structured-output setting is ``auto``."""
        import openai

        if self._json_mode:
            try:
                return self._client.chat.completions.create(**arguments, response_format={"type": "json_object"})
            except openai.APIStatusError as error:
                rejects = error.status_code == 400 and any(word in str(error).lower() for word in FORMAT_WORDS)
                if not (rejects and self.server.structured_output == "auto"):
                    raise
                self._json_mode = False
        return self._client.chat.completions.create(**arguments)

    def close(self) -> None:
        self._client.close()


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


def _failed(check: str, detail: str, reached: bool, started: float) -> ChatReply:
    return ChatReply(None, Failure(check, detail), reached, latency_ms=_since(started))


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


__all__ = [
    "ANSWER_FORMAT",
    "DECISION_TEXT",
    "ENABLE_ENV",
    "PROPOSER_PROPOSES",
    "SERVER_ANSWERED",
    "VERIFIER_CONFIRMS",
    "ChatReply",
    "ModelChat",
    "ModelReviewConfig",
    "decision_document",
    "json_object",
    "missing_text",
    "quotes_failures",
]
