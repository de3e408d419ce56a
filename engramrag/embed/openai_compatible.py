"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` server (vLLM, llama.cpp, Ollama, OpenAI...)."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import numpy as np
import openai

from engramrag.embed.base import EmbeddingServerError, OpenAIEmbedderConfig, l2_normalise
from engramrag.messages import one_line

_HINT = "Is the server running? Set ENGRAM_EMBED_BASE_URL to its address (for example http://127.0.0.1:8000/v1)."


class OpenAIEmbedder:
    """Batches the input, keeps its order and L2-normalises the answers.

    The client retries connection errors and 408/409/429/5xx answers ``max_retries`` times with
    exponential backoff (honouring Retry-After); what still fails raises :class:`EmbeddingServerError`.
    """

    def __init__(self, config: OpenAIEmbedderConfig) -> None:
        if not config.model:
            raise ValueError("the openai embedder needs a model name: pass model=... or set ENGRAM_EMBED_MODEL")
        self.config = config
        self._dimension = config.dimension
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key or "not-needed",  # the client insists on a key; local servers ignore it
            max_retries=config.max_retries,
            timeout=config.timeout,
        )

    @property
    def name(self) -> str:
        return f"openai/{self.config.model}"

    @property
    def dimension(self) -> int:
        """The vector length; when not configured, learned from the first answer (probing once if need be)."""
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        size = self.config.batch_size
        parts = [self._embed_batch(texts[start : start + size]) for start in range(0, len(texts), size)]
        return l2_normalise(np.vstack(parts))

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        url, model = self.config.base_url, self.config.model
        # Servers reject empty strings; a blank text gets the vector of a single space.
        inputs = [text if text.strip() else " " for text in batch]
        try:
            response = self._client.embeddings.create(model=model, input=inputs, encoding_format="float")
        except openai.APITimeoutError as error:
            raise EmbeddingServerError(
                f"the embedding server at {url} did not answer within {self.config.timeout:g}s "
                f"(after {self.config.max_retries} retries). {_HINT}"
            ) from error
        except openai.APIConnectionError as error:
            raise EmbeddingServerError(
                f"cannot reach the embedding server at {url} ({error}; "
                f"after {self.config.max_retries} retries). {_HINT}"
            ) from error
        except openai.APIStatusError as error:
            hint = " Check ENGRAM_EMBED_MODEL." if error.status_code in (400, 404) else ""
            raise EmbeddingServerError(
                f"the embedding server at {url} answered HTTP {error.status_code} for model {model!r}: "
                f"{one_line(error.message, 300)}.{hint}"
            ) from error
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise EmbeddingServerError(
                f"the embedding server at {url} returned {len(data)} vectors for {len(batch)} texts"
            )
        matrix = np.asarray([_vector(item.embedding) for item in data], dtype=np.float32)
        if matrix.ndim != 2:
            raise EmbeddingServerError(f"the embedding server at {url} returned vectors of unequal length")
        if self._dimension is None:
            self._dimension = matrix.shape[1]
        elif matrix.shape[1] != self._dimension:
            raise EmbeddingServerError(
                f"the embedding server at {url} returned {matrix.shape[1]}-dimensional vectors for model {model!r}, "
                f"expected {self._dimension}"
            )
        return matrix


def _vector(embedding: list[float] | str) -> np.ndarray:
    """A float list, or the base64 little-endian float32 some servers send whatever was asked."""
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4")
    return np.asarray(embedding, dtype=np.float32)
