"""How the vault is read."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

BUCKETS_ENV = "ENGRAM_BUCKETS"
DEFAULT_BUCKETS = 16


def configured_bucket_count() -> int:
    """The bucket count a home is built with: ``ENGRAM_BUCKETS``, else 16. Read where the partitions are defined
    (Dagster needs them when it loads the code, before any resource exists) and by commands that plan a build."""
    value = os.environ.get(BUCKETS_ENV, "").strip()
    if not value:
        return DEFAULT_BUCKETS
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{BUCKETS_ENV}={value!r} is not a positive whole number; unset it to use {DEFAULT_BUCKETS}")
    return int(value)


@dataclass(frozen=True)
class VaultConfig:
    bucket_count: int = field(
        default=DEFAULT_BUCKETS,
        metadata={"help": "Number of hash buckets (Dagster partitions) documents are spread over."},
    )
    max_file_bytes: int = field(
        default=2_000_000, metadata={"help": "Files larger than this are rejected, not read."}
    )
    suffixes: tuple[str, ...] = field(
        default=(".md", ".markdown"), metadata={"help": "File suffixes read as Markdown documents."}
    )
    sources_folder: str = field(
        default="sources",
        metadata={
            "help": "Top-level folder whose non-Markdown files (see convertible_suffixes) are converted to Markdown "
            "and read as documents; the originals are never changed."
        },
    )
    convertible_suffixes: tuple[str, ...] = field(
        default=(".html", ".htm", ".pdf", ".docx", ".csv", ".xlsx", ".txt"),
        metadata={"help": "File suffixes converted to Markdown when they lie inside the sources folder."},
    )
    agent_folder: str = field(
        default="learned", metadata={"help": "Top-level folder whose notes are flagged as agent-authored."}
    )
    chunk_chars: int = field(
        default=1200, metadata={"help": "Target size of a chunk; sections longer than this are split at paragraphs."}
    )
