"""Why a file could not be read as a vault document."""

from __future__ import annotations


class DocumentRejected(Exception):
    """Raised for a file that cannot join the lifecycle. ``reason`` is a short machine-readable code;
    the message says what is wrong and what to do about it."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
