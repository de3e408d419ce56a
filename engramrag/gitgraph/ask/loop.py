"""The Ask loop: a question about a repository, answered by a tool-calling model and verified before anyone sees it.

The model is any OpenAI-compatible chat server with tool calling, reached with the extractor's settings
(``ENGRAM_LLM_BASE_URL``, ``ENGRAM_LLM_MODEL``, ``ENGRAM_LLM_API_KEY``, ``ENGRAM_LLM_TIMEOUT_S``,
``ENGRAM_LLM_MAX_RETRIES``, ``ENGRAM_LLM_TEMPERATURE``: :class:`LLMConfig`). Each step sends the conversation and
the decision-graph tools; tool calls are run on the repository and their answers appended, until the model replies
with its final JSON answer or ``max_steps`` model calls were made. The answer is then verified
(:mod:`engramrag.gitgraph.ask.verify`). A reply that is not the JSON asked for is answered with what was wrong and
counts as a step.

Every step is reported as it happens through ``on_event`` (a tool call, its result, the answer, the verification,
a failure), and the whole run is kept in :class:`AskResult` (events, messages, tool answers) for ``--json``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engramrag.extract.llm.config import LLMConfig, env_name
from engramrag.extract.llm.prompt import reply_json, validate
from engramrag.gitgraph.ask.tools_schema import ToolOutcome, call_tool, parse_arguments, tool_schemas
from engramrag.gitgraph.ask.verify import ANSWER_SCHEMA, verify
from engramrag.gitgraph.grounding import Verdict
from engramrag.messages import one_line
from engramrag.store import Home

DEFAULT_MAX_STEPS = 8
VERIFIED = "verified"
FAILED = "failed"  # the answer did not pass verification
NO_ANSWER = "no-answer"  # no valid final answer within max_steps
UNREACHABLE = "unreachable"  # the model server could not be used

SYSTEM_PROMPT = """You answer questions about the git repository at {root} from its decision graph: decision \
records (ADRs, DECISIONS.md) with their exact source lines, commits, files and people. Use the tools to find the \
evidence; file paths are relative to the repository's top folder. Call as many tools as you need, then reply \
with only one JSON object and no other text:
{{"answer": "<your answer>", "citations": [{{"id": "<an id a tool returned>", "quote": "<text copied exactly>"}}]}}
Rules, checked before anyone reads your answer:
- cite only ids a tool returned in this conversation: a decision's "id", a commit's "sha", a file's "path", a \
person's "key";
- each quote is copied character for character from what a tool returned for that id (a decision's "text" or \
"title", a commit's "subject");
- every number in your answer must appear in a quote or in the evidence of an id you cite;
- if the tools do not answer the question, say so in the answer and cite what you did find."""

RETRY_PROMPT = (
    "Your reply was not the JSON object asked for ({problem}). Reply with only "
    '{{"answer": "...", "citations": [{{"id": "...", "quote": "..."}}]}}, or call a tool.'
)


@dataclass(frozen=True)
class Event:
    """One thing that happened: ``tool_call`` (name, arguments), ``tool_result`` (name, ok, summary),
    ``retry`` (a reply that was not the answer's JSON), ``answer`` (the model's answer, not yet verified),
    ``verification`` (the verdict) or ``failed`` (the run ends without a verified answer: reason)."""

    kind: str
    step: int
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "step": self.step, **self.data}


@dataclass
class AskResult:
    question: str
    repo: str
    model: str
    status: str = NO_ANSWER
    answer: dict[str, Any] | None = None  # the model's final answer (verified or not: see ``status``)
    verdict: Verdict | None = None
    reason: str = ""
    steps: int = 0
    events: list[Event] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[ToolOutcome] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return self.status == VERIFIED

    def to_json(self) -> dict[str, Any]:
        """The whole transcript. ``answer`` is only the verified one; an answer that failed is ``rejected``."""
        return {
            "question": self.question,
            "repo": self.repo,
            "model": self.model,
            "status": self.status,
            "verified": self.verified,
            "answer": self.answer if self.verified else None,
            "rejected": self.answer if self.status == FAILED else None,
            "verification": self.verdict.to_json() if self.verdict else None,
            "reason": self.reason,
            "steps": self.steps,
            "events": [event.to_json() for event in self.events],
            "tool_calls": [
                {"name": item.name, "arguments": item.arguments, "result": item.result, "error": item.error}
                for item in self.tool_results
            ],
            "messages": self.messages,
        }


class MalformedAnswer(ValueError):
    """A final reply that is not ``{"answer": ..., "citations": [...]}``."""


def ask_config(environ: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
    """The model server's settings (the extractor's ``ENGRAM_LLM_*``), or ValueError saying what to set."""
    try:
        return LLMConfig.from_environment(environ, **{key: value for key, value in overrides.items() if value})
    except ValueError as error:
        raise ValueError(f"engram ask needs a model server with tool calling: {error}. {how_to_configure()}") from None


def how_to_configure() -> str:
    return (
        f"Set {env_name('base_url')} (the server's address with /v1, e.g. http://127.0.0.1:11434/v1 for Ollama) "
        f"and {env_name('model')} (a model that calls tools, e.g. qwen2.5:7b-instruct), and "
        f"{env_name('api_key')} if the server needs one"
    )


def parse_answer(content: str | None) -> dict[str, Any]:
    """The final answer in a reply (code fences and prose around one object tolerated), or MalformedAnswer."""
    if content is None or not content.strip():
        raise MalformedAnswer("the reply was empty")
    try:
        value = reply_json(content)
    except ValueError as error:
        raise MalformedAnswer(f"not valid JSON ({type(error).__name__}: {error})") from error
    if not isinstance(value, dict):
        raise MalformedAnswer(f"expected a JSON object, got {type(value).__name__}")
    value.setdefault("citations", [])
    problems = validate(value, ANSWER_SCHEMA)
    if problems:
        raise MalformedAnswer("; ".join(problems[:3]))
    return {"answer": value["answer"], "citations": [{"id": c["id"], "quote": c["quote"]} for c in value["citations"]]}


def ask(
    question: str,
    home: Home | str | os.PathLike[str],
    repo: str | os.PathLike[str],
    config: LLMConfig,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    on_event: Callable[[Event], None] | None = None,
) -> AskResult:
    """Answer ``question`` about ``repo`` (ingested into ``home``) with the model ``config`` names; never raises
    for the server's or the model's failures (they end the run with a status and a reason). LookupError when the
    repository was never ingested, before the model is asked anything."""
    import openai

    from engramrag.gitgraph.tools.base import open_repo, repository_root

    if max_steps < 1:
        raise ValueError(f"max_steps must be 1 or more, got {max_steps}")
    root = repository_root(repo)
    with open_repo(home, root):
        pass  # a repository that was never ingested is an error before anything is asked
    result = AskResult(question, str(root), config.model)
    result.messages = [
        {"role": "system", "content": SYSTEM_PROMPT.format(root=root)},
        {"role": "user", "content": question},
    ]

    def emit(kind: str, **data: Any) -> None:
        event = Event(kind, result.steps, data)
        result.events.append(event)
        if on_event is not None:
            on_event(event)

    def end(status: str, reason: str) -> AskResult:
        result.status, result.reason = status, reason
        emit("failed", status=status, reason=reason)
        return result

    client = openai.OpenAI(
        base_url=config.base_url,
        api_key=config.api_key or "not-needed",  # the client insists on a key; local servers ignore it
        timeout=config.timeout_s,
        max_retries=config.max_retries,
    )
    tools = tool_schemas()
    try:
        while result.steps < max_steps:
            result.steps += 1
            try:
                response = client.chat.completions.create(
                    model=config.model, messages=result.messages, tools=tools, temperature=config.temperature
                )
            except openai.OpenAIError as error:
                return end(UNREACHABLE, server_problem(error, config))
            if not getattr(response, "choices", None):
                return end(UNREACHABLE, f"the model server at {config.base_url} did not answer with a chat "
                                        f"completion: {one_line(repr(response), 300)}")  # fmt: skip
            message = response.choices[0].message
            calls = list(message.tool_calls or ())
            if calls:
                result.messages.append({
                    "role": "assistant",
                    "content": message.content or "",
                    "tool_calls": [
                        {"id": call.id, "type": "function",
                         "function": {"name": call.function.name, "arguments": call.function.arguments or "{}"}}
                        for call in calls
                    ],
                })  # fmt: skip
                for call in calls:
                    name, arguments, problem = _arguments(call.function.name, call.function.arguments)
                    emit("tool_call", name=name, arguments=arguments)
                    outcome = (
                        ToolOutcome(name, arguments, error=problem)
                        if problem
                        else call_tool(home, root, name, arguments)
                    )
                    result.tool_results.append(outcome)
                    emit("tool_result", name=outcome.name, ok=outcome.ok, summary=outcome.summary())
                    result.messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome.for_model()})
                continue
            result.messages.append({"role": "assistant", "content": message.content or ""})
            try:
                answer = parse_answer(message.content)
            except MalformedAnswer as problem:
                emit("retry", problem=str(problem))
                result.messages.append({"role": "user", "content": RETRY_PROMPT.format(problem=problem)})
                continue
            result.answer = answer
            emit("answer", **answer)
            results = [item.result for item in result.tool_results if item.result is not None]
            result.verdict = verify(answer, results, root)
            emit("verification", **result.verdict.to_json())
            if result.verdict.accepted:
                result.status = VERIFIED
                return result
            return end(FAILED, result.verdict.reason)
        return end(NO_ANSWER, f"no final answer after {max_steps} model call(s); raise --max-steps or ask a "
                              "narrower question")  # fmt: skip
    finally:
        client.close()


def _arguments(name: str, raw: str | None) -> tuple[str, dict[str, Any], str | None]:
    """(name, arguments, problem): arguments that are not a JSON object are kept raw, with the problem."""
    try:
        return name, parse_arguments(raw), None
    except ValueError as error:
        return name, {"raw": raw}, str(error)


def server_problem(error: Exception, config: LLMConfig) -> str:
    """What went wrong with the model server, and what to do about it, in one sentence."""
    import openai

    where = config.base_url
    if isinstance(error, openai.APITimeoutError):
        return (f"timed out after {config.timeout_s:g} s waiting for the model server at {where}; raise "
                f"{env_name('timeout_s')} or use a faster model")  # fmt: skip
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__ or error
        return (
            f"could not reach the model server at {where} ({type(cause).__name__}: "
            f"{one_line(str(cause) or 'connection closed', 300)}); is it running? Check {env_name('base_url')}"
        )
    if isinstance(error, openai.APIStatusError):
        message = one_line(str(getattr(error, "message", "") or error), 300)
        hint = {
            401: f"check {env_name('api_key')}",
            403: f"check {env_name('api_key')}",
            404: f"check {env_name('base_url')} (it ends in /v1) and {env_name('model')} ({config.model!r})",
            429: f"the server is rate-limiting; try later or raise {env_name('max_retries')}",
        }.get(error.status_code)
        if hint is None and error.status_code == 400 and "tool" in message.casefold():
            hint = f"the model {config.model!r} may not support tool calling; choose one that does"
        return (f"the model server at {where} answered HTTP {error.status_code}: {message}"
                + (f"; {hint}" if hint else ""))  # fmt: skip
    return f"the model server at {where} failed: {type(error).__name__}: {one_line(str(error), 300)}"


__all__ = [
    "DEFAULT_MAX_STEPS",
    "FAILED",
    "NO_ANSWER",
    "UNREACHABLE",
    "VERIFIED",
    "AskResult",
    "Event",
    "MalformedAnswer",
    "ask",
    "ask_config",
    "how_to_configure",
    "parse_answer",
    "server_problem",
]
