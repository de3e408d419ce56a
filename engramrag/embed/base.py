"""The Embedder protocol, the backends' settings and what every backend shares."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


class EmbeddingServerError(RuntimeError):
    """An embedding server could not be reached or gave an unusable answer."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. Rows are float32, L2-normalised, one per input text, in input order."""

    @property
    def name(self) -> str:
        """A stable identity of the backend and of every setting that changes the vectors.

        The vector store records it: vectors from two different names are never mixed in one table.
        """
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class HashEmbedderConfig:
    """Settings of the offline hash embedder (``hash``)."""

    dimension: int = field(default=512, metadata={"help": "Length of each vector (number of hash buckets)."})
    ngram_min: int = field(default=2, metadata={"help": "Shortest character n-gram, counted with word-boundary marks."})
    ngram_max: int = field(default=4, metadata={"help": "Longest character n-gram."})
    word_weight: float = field(
        default=1.0, metadata={"help": "Weight of whole-word features relative to one character n-gram."}
    )
    jamo: bool = field(
        default=False,
        metadata={"help": "Take the n-grams of Hangul words over their jamo (ㅂ ㅏ ㄱ) instead of their syllables."},
    )
    seed: str = field(default="engram", metadata={"help": "Key of the feature hash; a new seed gives new vectors."})

    def __post_init__(self) -> None:
        if self.dimension < 8:
            raise ValueError(f"hash embedder dimension must be at least 8, got {self.dimension}")
        if not 1 <= self.ngram_min <= self.ngram_max:
            raise ValueError(f"need 1 <= ngram_min <= ngram_max, got {self.ngram_min}..{self.ngram_max}")


@dataclass(frozen=True)
class OpenAIEmbedderConfig:
    """Settings of an OpenAI-compatible embedding server (``openai``): vLLM, llama.cpp, Ollama, OpenAI..."""

    base_url: str = field(
        default="http://127.0.0.1:8000/v1",
        metadata={"help": "Server address including /v1 (env ENGRAM_EMBED_BASE_URL)."},
    )
    model: str = field(
        default="", metadata={"help": "Embedding model name as the server knows it (env ENGRAM_EMBED_MODEL)."}
    )
    api_key: str = field(
        default="", metadata={"help": "Bearer token; local servers usually need none (env ENGRAM_EMBED_API_KEY)."}
    )
    batch_size: int = field(default=64, metadata={"help": "Texts per request."})
    max_retries: int = field(
        default=3, metadata={"help": "Retries of a failed request (connection errors, 408/409/429/5xx), with backoff."}
    )
    timeout: float = field(default=60.0, metadata={"help": "Seconds to wait for one request."})
    dimension: int | None = field(
        default=None,
        metadata={"help": "Expected vector length; checked against the answers. Unset: learned from the first answer."},
    )

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {self.batch_size}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {self.max_retries}")


def config_help(config_type: type) -> dict[str, str]:
    """Field name -> help text of a backend's settings dataclass (for the command line and docs)."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(config_type)}


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32. An all-zero row stays zero."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.maximum(norms, np.float32(1e-12), out=norms)
    return matrix / norms
