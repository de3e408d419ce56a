"""Settings of the ``openai`` extractor, read from the environment by ``LLMConfig.from_environment``.

Every field can be set with ``ENGRAM_LLM_<FIELD>`` (``ENGRAM_LLM_TIMEOUT_S=60``); the server address and the
model name have no sensible default, so a missing one is an error that names the variable to set.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engramrag.extract.base import CORE_KINDS

ENV_PREFIX = "ENGRAM_LLM_"
STRUCTURED_OUTPUTS = ("auto", "json_schema", "json_object", "none")


def env_name(name: str) -> str:
    return ENV_PREFIX + name.upper()


@dataclass(frozen=True)
class LLMConfig:
    """How to reach the model server and how hard to try."""

    base_url: str = field(
        metadata={
            "help": f"Chat server address including /v1, e.g. http://127.0.0.1:11434/v1 (env {ENV_PREFIX}BASE_URL)."
        }
    )
    model: str = field(metadata={"help": f"Model name as the server knows it (env {env_name('model')})."})
    api_key: str = field(
        default="", metadata={"help": f"Bearer token; local servers usually need none (env {env_name('api_key')})."}
    )
    timeout_s: float = field(
        default=120.0, metadata={"help": "Seconds to wait for one answer before the request counts as failed."}
    )
    max_retries: int = field(
        default=4,
        metadata={"help": "Transport retries of one request (429, 5xx, dropped connections, timeouts), with backoff."},
    )
    unreachable_after: int = field(
        default=3,
        metadata={
            "help": "Connection attempts in a row that fail (refused, unknown host, connect timeout) after which the "
            "server counts as unreachable: the build sends it no more documents and the next build retries them; "
            "0: never."
        },
    )
    malformed_retries: int = field(
        default=2, metadata={"help": "Times a reply that is not valid JSON for the schema is asked for again."}
    )
    concurrency: int = field(default=4, metadata={"help": "Documents extracted at once (env ENGRAM_LLM_CONCURRENCY)."})
    max_segments: int = field(default=16, metadata={"help": "Most segments (model calls) one document is split into."})
    segment_chars: int = field(
        default=6000, metadata={"help": "Target size of a segment in characters; segments follow headings."}
    )
    structured_output: str = field(
        default="auto",
        metadata={
            "help": "auto (JSON schema, falling back to JSON mode, then plain text, when the server rejects it), "
            "json_schema, json_object or none."
        },
    )
    temperature: float = field(default=0.0, metadata={"help": "Sampling temperature; 0 keeps answers repeatable."})
    custom_kinds: tuple[tuple[str, str], ...] = field(
        default=(),
        metadata={
            "help": "Custom kinds the model may use, each declared under a core kind (env "
            "ENGRAM_LLM_CUSTOM_KINDS=Database=Artifact,Squad=Organization); resolution must know the same list."
        },
    )

    def __post_init__(self) -> None:
        checks = (
            (self.timeout_s > 0, f"timeout_s must be positive, got {self.timeout_s}"),
            (self.max_retries >= 0, f"max_retries must be 0 or more, got {self.max_retries}"),
            (self.unreachable_after >= 0, f"unreachable_after must be 0 or more, got {self.unreachable_after}"),
            (self.malformed_retries >= 0, f"malformed_retries must be 0 or more, got {self.malformed_retries}"),
            (self.concurrency >= 1, f"concurrency must be 1 or more, got {self.concurrency}"),
            (self.max_segments >= 1, f"max_segments must be 1 or more, got {self.max_segments}"),
            (self.segment_chars >= 200, f"segment_chars must be at least 200, got {self.segment_chars}"),
            (
                self.structured_output in STRUCTURED_OUTPUTS,
                f"structured_output must be one of {', '.join(STRUCTURED_OUTPUTS)}, got {self.structured_output!r}",
            ),
        )
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        for kind, parent in self.custom_kinds:
            if parent not in CORE_KINDS:
                raise ValueError(
                    f"custom kind {kind!r} is declared under {parent!r}; declare it under one of "
                    f"{', '.join(CORE_KINDS)}"
                )

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind the model may answer with: the core kinds, then the declared custom kinds."""
        return CORE_KINDS + tuple(kind for kind, _ in self.custom_kinds if kind not in CORE_KINDS)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
        """The settings from ``ENGRAM_LLM_*`` variables; keyword arguments win over the environment."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for spec in dataclasses.fields(cls):
            raw = environ.get(env_name(spec.name), "").strip()
            if raw:
                values[spec.name] = _parse(spec.name, raw, spec.type)
        values |= overrides
        for required in ("base_url", "model"):
            if not values.get(required):
                example = "http://127.0.0.1:11434/v1" if required == "base_url" else "llama3.1:8b"
                raise ValueError(
                    f"the openai extractor needs {env_name(required)} (e.g. {env_name(required)}={example}); "
                    "it is not set"
                )
        return cls(**values)


def _parse(name: str, raw: str, annotation: object) -> Any:
    variable = env_name(name)
    try:
        if name == "custom_kinds":
            return parse_custom_kinds(raw)
        if annotation in (int, "int"):
            return int(raw)
        if annotation in (float, "float"):
            return float(raw)
    except ValueError as error:
        raise ValueError(f"{variable}={raw!r} is not valid: {error}") from error
    return raw


def parse_custom_kinds(raw: str) -> tuple[tuple[str, str], ...]:
    """``Database=Artifact, Squad=Organization`` → ``(("Database", "Artifact"), ("Squad", "Organization"))``."""
    pairs = []
    for item in raw.split(","):
        if not item.strip():
            continue
        kind, separator, parent = item.partition("=")
        if not separator or not kind.strip() or not parent.strip():
            raise ValueError(f"expected Kind=CoreKind pairs separated by commas, found {item.strip()!r}")
        pairs.append((kind.strip(), parent.strip()))
    return tuple(pairs)


__all__ = ["STRUCTURED_OUTPUTS", "LLMConfig", "env_name", "parse_custom_kinds"]
