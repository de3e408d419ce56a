"""Embedders: turn texts into L2-normalised float32 vectors (DESIGN.md, "Layers": embed/).

``hash`` is the offline default (deterministic, no downloads); ``openai`` talks to any OpenAI-compatible
``/v1/embeddings`` server. Pick one by name with :func:`engramrag.embed.registry.make_embedder`.
"""

from engramrag.embed.base import Embedder, EmbeddingServerError, HashEmbedderConfig, OpenAIEmbedderConfig
from engramrag.embed.registry import available_embedders, make_embedder

__all__ = [
    "Embedder",
    "EmbeddingServerError",
    "HashEmbedderConfig",
    "OpenAIEmbedderConfig",
    "available_embedders",
    "make_embedder",
]
