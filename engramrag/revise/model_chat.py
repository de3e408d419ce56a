"""The model server the supersession proposer and verifier talk to, through the official ``openai`` client.

Its settings are ``revise.model_review_config.ModelReviewConfig`` (off by default), the checks of its answers
``revise.model_checks``; this module is imported only when a review is active (``revise.model_review``).

One call is one request for one JSON object. Nothing here raises on a bad answer: a server error or an answer
that is not the JSON asked for comes back as a :class:`ChatReply` naming the check that failed
(``server-answered`` or ``answer-format``), so a batch never stops on one pair. The decision texts go to the model
as data inside a JSON document, and the system prompts say so: stored text is never an instruction.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import openai

from engramrag.extract.llm.config import env_name
from engramrag.gitgraph.grounding import Failure
from engramrag.messages import one_line
from engramrag.revise.model_checks import ANSWER_FORMAT, SERVER_ANSWERED, ChatReply, json_object
from engramrag.revise.model_review_config import ModelReviewConfig

FORMAT_WORDS = ("response_format", "json_object", "json_schema", "structured")


class ModelChat:
    """Asks for one JSON object per call through the official ``openai`` client; safe to share between threads.
    Every call is a fresh conversation: nothing of one call reaches another."""

    def __init__(self, config: ModelReviewConfig) -> None:
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


def _failed(check: str, detail: str, reached: bool, started: float) -> ChatReply:
    return ChatReply(None, Failure(check, detail), reached, latency_ms=_since(started))


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)
