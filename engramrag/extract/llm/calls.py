"""What one model call cost and how it went, and the failure that carries those records.

A call is one segment of one document: asked of the server (``cached`` False, tokens paid now) or answered from
the response cache (``cached`` True, tokens 0: the original cost stays in the cache row). ``requests`` counts
HTTP requests, so transport retries, re-asks after malformed replies and structured-output fallbacks all show.
These records reach the catalog's ``llm_calls`` table, failed ones included, so spend is never under-counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal


@dataclass(frozen=True)
class CallRecord:
    path: str
    body_hash: str
    segment: int  # 0-based
    segments: int
    model: str
    prompt_version: str
    tokens_in: int
    tokens_out: int
    latency_ms: float
    requests: int  # HTTP requests made for this call; retries = requests - 1
    cached: bool
    status: Literal["ok", "failed"]
    error: str | None
    called_at: datetime  # UTC


class LLMExtractionFailed(RuntimeError):
    """A document could not be extracted after every retry. ``reason`` says what to do about it; ``calls`` holds
    every call made for the document (the failed one last), so what was paid is still accounted for."""

    def __init__(self, reason: str, calls: Sequence[CallRecord] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.calls = list(calls)


__all__ = ["CallRecord", "LLMExtractionFailed"]
