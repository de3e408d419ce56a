"""The ``openai`` extractor: any OpenAI-compatible chat server (vLLM, Ollama, llama.cpp, OpenAI) as an extractor.

The light parts (settings, call records) import directly; the extractor, its client and its cache are loaded on
first use, so reading a call record does not import the ``openai`` client.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from engramrag.extract.llm.calls import CallRecord, LLMExtractionFailed
from engramrag.extract.llm.config import LLMConfig

if TYPE_CHECKING:
    from engramrag.extract.llm.cache import ResponseCache, ResponseCacheError
    from engramrag.extract.llm.extractor import Estimate, OpenAIExtractor
    from engramrag.extract.llm.prompt import PROMPT_VERSION

_LAZY = {
    "Estimate": "extractor",
    "OpenAIExtractor": "extractor",
    "ResponseCache": "cache",
    "ResponseCacheError": "cache",
    "PROMPT_VERSION": "prompt",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PROMPT_VERSION",
    "CallRecord",
    "Estimate",
    "LLMConfig",
    "LLMExtractionFailed",
    "OpenAIExtractor",
    "ResponseCache",
    "ResponseCacheError",
]
