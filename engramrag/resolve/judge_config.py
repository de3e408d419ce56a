"""Settings of the optional LLM judge of merge candidates (off by default), and the switch that makes one.

Apart from the client (``resolve.judge``) so that every build can read them, and the candidates step can ask for a
judge, without importing ``openai``: the client is imported only when the judge is on (``make_judge``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engramrag.extract.llm.config import env_name

if TYPE_CHECKING:
    from engramrag.resolve.judge import LLMJudge

ENV = {name: env_name(name) for name in ("base_url", "model", "api_key")}  # the extractor's variables
ENABLE_ENV = "ENGRAM_LLM_JUDGE"  # the server settings may serve an LLM extractor too; the judge is its own choice


@dataclass(frozen=True)
class JudgeConfig:
    """Settings of the optional LLM judge; ``from_env`` reads them from the environment."""

    enabled: bool = field(
        default=False, metadata={"help": f"Ask the judge at all (env {ENABLE_ENV}=1); off by default."}
    )
    base_url: str = field(
        default="http://127.0.0.1:8000/v1",
        metadata={"help": f"Chat server address including /v1 (env {ENV['base_url']})."},
    )
    model: str = field(default="", metadata={"help": f"Model name as the server knows it (env {ENV['model']})."})
    api_key: str = field(
        default="", metadata={"help": f"Bearer token; local servers usually need none (env {ENV['api_key']})."}
    )
    timeout_s: float = field(default=30.0, metadata={"help": "Seconds to wait for one answer."})
    max_retries: int = field(
        default=2, metadata={"help": "Retries of a failed request (connection errors, 408/409/429/5xx), with backoff."}
    )
    json_mode: bool = field(
        default=True,
        metadata={"help": "Ask for response_format json_object; turn off for servers that reject it."},
    )
    max_tokens: int = field(default=200, metadata={"help": "Longest answer the model may give."})

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {self.max_retries}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> JudgeConfig:
        """The settings from ``ENGRAM_LLM_BASE_URL``, ``ENGRAM_LLM_MODEL``, ``ENGRAM_LLM_API_KEY`` and
        ``ENGRAM_LLM_JUDGE`` (1/true/yes enables it); keyword arguments win over the environment."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {name: environ[var] for name, var in ENV.items() if environ.get(var)}
        if ENABLE_ENV in environ:
            values["enabled"] = environ[ENABLE_ENV].strip().lower() in ("1", "true", "yes", "on")
        return cls(**(values | overrides))


def make_judge(config: JudgeConfig | None = None) -> LLMJudge | None:
    """The judge when enabled (by default from the environment), else None."""
    config = JudgeConfig.from_env() if config is None else config
    if not config.enabled:
        return None
    from engramrag.resolve.judge import LLMJudge  # the one place the client (and openai) is imported

    return LLMJudge(config)
