"""Settings of the model review of supersession proposals: whether it runs, and the server it asks.

Off by default: the model reviews supersession proposals only with ``ENGRAM_LLM_SUPERSESSION=1`` and a server
configured with the extractor's settings (``ENGRAM_LLM_BASE_URL``, ``ENGRAM_LLM_MODEL``, ``ENGRAM_LLM_API_KEY``,
``ENGRAM_LLM_TIMEOUT_S``, ``ENGRAM_LLM_MAX_RETRIES``, ``ENGRAM_LLM_TEMPERATURE``,
``ENGRAM_LLM_STRUCTURED_OUTPUT``: :class:`LLMConfig`). The settings are read when asked for, never at import. Apart
from the client (``revise.model_chat``) so that every build can read them without importing ``openai``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engramrag.extract.llm.config import LLMConfig, env_name

ENABLE_ENV = "ENGRAM_LLM_SUPERSESSION"


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
