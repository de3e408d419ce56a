"""One JSON answer from an OpenAI-compatible chat server, through the official ``openai`` client.

Three kinds of trouble are handled at three levels:

- transport (429, 5xx, dropped connections, timeouts): the client's own retries with backoff, honouring
  ``Retry-After``, up to ``max_retries``;
- a server that rejects structured output (a 400 naming ``response_format``/``json_schema``): with
  ``structured_output="auto"`` the request steps down from ``json_schema`` to ``json_object`` to plain text
  with an "only JSON" rule, and the step is remembered for every later request of the run;
- a reply that is not valid JSON for the schema: asked again, saying what was wrong, up to
  ``malformed_retries`` times;
- a server that cannot be connected to at all (refused, unknown host, connect timeout): after
  ``unreachable_after`` such attempts in a row the run's breaker opens (``breaker``), the attempt that opened it
  is not retried, and no later request of the run is sent.

Every HTTP request is counted by an httpx event hook on the client's connection pool (per thread, since
documents are extracted on several threads at once), so a call knows how many requests it took, retries
included, and the tokens of every reply are summed, malformed ones included: they were paid for too.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import openai

from engramrag.extract.llm import prompt
from engramrag.extract.llm.breaker import Breaker
from engramrag.extract.llm.config import LLMConfig, env_name
from engramrag.messages import one_line

log = logging.getLogger(__name__)
STEP_DOWN = {"json_schema": "json_object", "json_object": "none"}
FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output", "guided_json")


@dataclass(frozen=True)
class Answer:
    data: dict[str, Any]
    tokens_in: int
    tokens_out: int
    requests: int
    latency_ms: float
    usage_reported: bool  # False when a reply came without ``usage`` (its tokens count as 0)


class ChatFailed(RuntimeError):
    """No usable answer after every retry; ``reason`` says what happened and what to do. The counts are what the
    attempt cost anyway."""

    def __init__(self, reason: str, requests: int, tokens_in: int, tokens_out: int, latency_ms: float) -> None:
        super().__init__(reason)
        self.reason = reason
        self.requests = requests
        self.tokens_in = tokens_in
        self.tokens_out = tokens_out
        self.latency_ms = latency_ms


class _Refused(Exception):
    """The server gave no reply at all (after the transport retries)."""


class _NotSent(openai.OpenAIError):
    """The breaker is open: the request was not sent. An ``OpenAIError``, so the client does not retry it."""


class _BreakerHttpClient(openai.DefaultHttpxClient):
    """The client's HTTP connection pool, behind the run's breaker: a request is not sent once the breaker is
    open, and every attempt tells the breaker whether the server could be reached."""

    def __init__(self, breaker: Breaker, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.breaker = breaker

    def send(self, request: Any, **kwargs: Any) -> Any:
        if self.breaker.is_open:
            raise _NotSent(self.breaker.stopped())
        try:
            response = super().send(request, **kwargs)
        except Exception as error:
            reason = f"{type(error).__name__}: {one_line(error, 300)}"
            if _cannot_connect(error) and self.breaker.unreachable(reason):
                raise _NotSent(self.breaker.stopped()) from error
            raise
        self.breaker.reached()
        return response


class StructuredChat:
    """Asks for one JSON object per call; safe to share between threads."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self._counter = threading.local()
        self.breaker = Breaker(config.base_url, config.unreachable_after, env_name("base_url"))
        self._http = _BreakerHttpClient(self.breaker, event_hooks={"request": [self._count_request]})
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key or "not-needed",  # the client insists on a key; local servers ignore it
            timeout=config.timeout_s,
            max_retries=config.max_retries,
            http_client=self._http,
        )
        self._lock = threading.Lock()
        self._mode = "json_schema" if config.structured_output == "auto" else config.structured_output
        self.fallbacks: list[str] = []  # "json_schema -> json_object", in the order they happened
        self.usage_missing = False

    @property
    def mode(self) -> str:
        """The structured-output mode requests use now: json_schema, json_object or none."""
        return self._mode

    def ask(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> Answer:
        """The first reply that is valid for ``schema``, or ChatFailed."""
        started = time.perf_counter()
        self._counter.requests = 0
        tokens_in = tokens_out = 0
        usage_reported = True
        conversation, problem = messages, ""
        attempts = 1 + self.config.malformed_retries
        for _ in range(attempts):
            try:
                response = self._create(conversation, schema)
            except _Refused as refused:
                raise ChatFailed(str(refused), self._requests(), tokens_in, tokens_out, _since(started)) from None
            except (ValueError, openai.OpenAIError) as error:  # a 200 whose body is not JSON at all
                detail = one_line(error, 300)
                problem = f"the server's answer is not a chat completion ({type(error).__name__}: {detail})"
                continue
            if not hasattr(response, "choices"):  # the client hands back a non-JSON body as text
                problem = f"the server's answer is not a chat completion: {one_line(repr(response), 300)}"
                continue
            usage = getattr(response, "usage", None)
            if usage is None:
                usage_reported = False
                self._warn_usage_missing()
            tokens_in += int(getattr(usage, "prompt_tokens", 0) or 0)
            tokens_out += int(getattr(usage, "completion_tokens", 0) or 0)
            content, finish = _content(response)
            try:
                data = prompt.parse_reply(content)
            except prompt.MalformedReply as malformed:
                problem = str(malformed) + (" (the reply was cut off at the token limit)" if finish == "length" else "")
                conversation = prompt.reask(messages, content or "", problem)
                continue
            return Answer(data, tokens_in, tokens_out, self._requests(), _since(started), usage_reported)
        reason = f"the reply was not valid JSON for the extraction schema {attempts} times: {one_line(problem, 300)}"
        raise ChatFailed(reason, self._requests(), tokens_in, tokens_out, _since(started))

    def close(self) -> None:
        self._client.close()

    # one reply ---------------------------------------------------------------------------------------------

    def _create(self, conversation: list[dict[str, str]], schema: dict[str, Any]) -> Any:
        """One reply through the client's retries, stepping down the structured-output mode when allowed."""
        while True:
            mode = self._mode
            before = self._requests()
            try:
                return self._client.chat.completions.create(**self._arguments(conversation, schema, mode))
            except _NotSent as not_sent:
                raise _Refused(str(not_sent)) from None
            except openai.APIStatusError as error:
                if not _rejects_format(error):
                    raise _Refused(self._status_reason(error, self._requests() - before)) from None
                if self.config.structured_output != "auto" or not self._step_down(mode, error):
                    raise _Refused(
                        f"the model server at {self.config.base_url} does not accept response_format {mode} "
                        f"(HTTP {error.status_code}: {_message(error)}); set {env_name('structured_output')}=auto "
                        "to fall back to a mode it supports"
                    ) from None
            except openai.APITimeoutError:
                tries = self._requests() - before
                raise _Refused(
                    f"timed out after {self.config.timeout_s:g} s waiting for the model server at "
                    f"{self.config.base_url} ({_times(tries)}); it may be overloaded or the model too slow: raise "
                    f"{env_name('timeout_s')} or lower {env_name('concurrency')}"
                ) from None
            except openai.APIConnectionError as error:
                tries = self._requests() - before
                cause = error.__cause__ or error
                raise _Refused(
                    f"could not get an answer from the model server at {self.config.base_url} ({_times(tries)}): "
                    f"{type(cause).__name__}: {one_line(str(cause) or 'connection closed', 300)}; is it running and "
                    f"reachable at {env_name('base_url')}?"
                ) from None

    def _arguments(self, conversation: list[dict[str, str]], schema: dict[str, Any], mode: str) -> dict[str, Any]:
        if mode == "none":
            system = conversation[0]
            if prompt.PLAIN_TEXT_RULE not in system["content"]:
                system = {**system, "content": system["content"] + "\n" + prompt.PLAIN_TEXT_RULE}
            conversation = [system, *conversation[1:]]
        arguments: dict[str, Any] = {
            "model": self.config.model,
            "messages": conversation,
            "temperature": self.config.temperature,
        }
        if mode == "json_schema":
            arguments["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": prompt.SCHEMA_NAME, "schema": schema, "strict": True},
            }
        elif mode == "json_object":
            arguments["response_format"] = {"type": "json_object"}
        return arguments

    def _step_down(self, mode: str, error: openai.APIStatusError) -> bool:
        """Move every later request to the next mode after ``mode`` (once, whichever thread saw it first)."""
        with self._lock:
            if self._mode != mode:
                return True  # another thread already stepped down
            lower = STEP_DOWN.get(mode)
            if lower is None:
                return False
            self._mode = lower
            self.fallbacks.append(f"{mode} -> {lower}")
        log.warning(
            "the model server at %s rejects response_format %s (HTTP %s: %s); using %s for the rest of the run",
            self.config.base_url, mode, error.status_code, _message(error), lower,
        )  # fmt: skip
        return True

    def _status_reason(self, error: openai.APIStatusError, tries: int) -> str:
        where, code, message = self.config.base_url, error.status_code, _message(error)
        if code == 429:
            return (
                f"the model server at {where} kept rate-limiting (HTTP 429) {_times(tries)}: {message}; lower "
                f"{env_name('concurrency')} or raise {env_name('max_retries')}"
            )
        if code >= 500:
            return f"the model server at {where} answered HTTP {code} {_times(tries)}: {message}"
        if code in (401, 403):
            return (
                f"the model server at {where} refused the credentials (HTTP {code}: {message}); check "
                f"{env_name('api_key')}"
            )
        if code == 404:
            return (
                f"the model server at {where} answered HTTP 404 ({message}); check that {env_name('base_url')} ends "
                f"in /v1 and that the server has the model {self.config.model!r}"
            )
        return f"the model server at {where} refused the request (HTTP {code}): {message}"

    # request counting ---------------------------------------------------------------------------------------

    def _count_request(self, request: Any) -> None:
        self._counter.requests = getattr(self._counter, "requests", 0) + 1

    def _requests(self) -> int:
        return getattr(self._counter, "requests", 0)

    def _warn_usage_missing(self) -> None:
        with self._lock:
            first = not self.usage_missing
            self.usage_missing = True
        if first:
            log.warning(
                "the model server at %s reports no token usage; tokens and cost of its calls are recorded as 0",
                self.config.base_url,
            )


def _cannot_connect(error: Exception) -> bool:
    """Whether no connection could be made (refused, unknown host, connect timeout): httpx's ``ConnectError``
    and ``ConnectTimeout``, by name, since the ``openai`` client's HTTP library differs between versions."""
    return any(kind.__name__ in ("ConnectError", "ConnectTimeout") for kind in type(error).__mro__)


def _content(response: Any) -> tuple[str | None, str | None]:
    """The text and finish reason of a reply; an odd reply shape reads as an empty reply, which is re-asked."""
    try:
        choice = response.choices[0]
        return choice.message.content, getattr(choice, "finish_reason", None)
    except (AttributeError, IndexError, TypeError):
        return None, None


def _rejects_format(error: openai.APIStatusError) -> bool:
    if error.status_code not in (400, 422):
        return False
    text = f"{error.message} {error.body}".lower()
    return any(word in text for word in FORMAT_WORDS)


def _message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = inner.get("message") if isinstance(inner, dict) else inner
        if text:
            return one_line(str(text), 300)
    return one_line(error.message, 300)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


__all__ = ["Answer", "ChatFailed", "StructuredChat"]
