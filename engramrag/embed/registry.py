"""Embedder backends by name."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from engramrag.embed.base import Embedder, HashEmbedderConfig, OpenAIEmbedderConfig

# Settings of the openai backend that fall back to the environment when not given.
OPENAI_ENV = {"base_url": "ENGRAM_EMBED_BASE_URL", "model": "ENGRAM_EMBED_MODEL", "api_key": "ENGRAM_EMBED_API_KEY"}


def available_embedders() -> tuple[str, ...]:
    return ("hash", "openai")


def make_embedder(name: str = "hash", **settings: Any) -> Embedder:
    """An embedder by backend name; ``settings`` are fields of that backend's config dataclass.

    For ``openai``, ``base_url``, ``model`` and ``api_key`` not given (or None) are read from
    ENGRAM_EMBED_BASE_URL, ENGRAM_EMBED_MODEL and ENGRAM_EMBED_API_KEY.
    """
    if name == "hash":
        from engramrag.embed.hashing import HashEmbedder

        return HashEmbedder(_config(HashEmbedderConfig, name, settings))
    if name == "openai":
        from engramrag.embed.openai_compatible import OpenAIEmbedder

        for key, variable in OPENAI_ENV.items():
            if settings.get(key) is None and os.environ.get(variable):
                settings[key] = os.environ[variable]
        return OpenAIEmbedder(_config(OpenAIEmbedderConfig, name, settings))
    raise ValueError(f"unknown embedder {name!r}; available: {', '.join(available_embedders())}")


def _config(config_type: type, name: str, settings: dict[str, Any]) -> Any:
    known = {f.name for f in dataclasses.fields(config_type)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown} for embedder {name!r}; known: {sorted(known)}")
    return config_type(**{key: value for key, value in settings.items() if value is not None})
