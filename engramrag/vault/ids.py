"""Content-hash identifiers: documents, buckets, entities and statements."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from urllib.parse import quote


def sha256_hex(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def short_hash(*parts: str, length: int = 16) -> str:
    """A stable id from the given parts (joined with a separator that cannot occur in them)."""
    return sha256_hex("\x1f".join(parts))[:length]


def document_id(relative_path: str) -> str:
    """A document's id is derived from its vault-relative POSIX path: a rename is a new document."""
    return short_hash("doc", relative_path)


def bucket_of(relative_path: str, bucket_count: int) -> int:
    """The hash bucket of a document. Stable across runs and machines for a given bucket count."""
    return int(sha256_hex(relative_path)[:8], 16) % bucket_count


def bucket_key(bucket: int) -> str:
    """The Dagster partition key of a bucket: zero-padded so keys sort numerically."""
    return f"{bucket:02d}"


@lru_cache(maxsize=1 << 17)  # every IRI of a note repeats it; the timeline asks 270,000 times at 10,000 notes
def path_segment(relative_path: str) -> str:
    """The path as it appears inside an IRI: percent-encoded, slashes kept."""
    return quote(relative_path, safe="/")
