"""Listing the vault: which files are documents, and which bucket each falls in."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engramrag.vault.config import VaultConfig
from engramrag.vault.converters import is_convertible
from engramrag.vault.ids import bucket_of


@dataclass(frozen=True)
class VaultFile:
    path: str  # vault-relative, POSIX
    absolute: Path
    bucket: int
    size_bytes: int
    mtime_ns: int
    outside: str | None = None  # a link that leads out of the vault: where it leads (never read)


class VaultMissing(FileNotFoundError):
    pass


def scan_vault(vault: Path, config: VaultConfig, buckets: Iterable[int] | None = None) -> list[VaultFile]:
    """Every Markdown file of the vault and every convertible file of its sources folder (optionally only
    those in ``buckets``), sorted by path. Hidden files and folders (``.git``, ``.obsidian``, ``.engram``) are
    skipped; a PDF or HTML file outside the sources folder is not a document. Linked folders are not followed; a
    linked file that leads out of the vault is listed with where it leads (``outside``), so that the sync can
    refuse it by name instead of reading, say, /etc/passwd into the memory an agent searches. A link to a
    document of the vault is left out: that document is read once, under its real path."""
    if not vault.is_dir():
        raise VaultMissing(f"vault folder {vault} does not exist; pass --vault DIR or set ENGRAM_VAULT.")
    wanted = set(buckets) if buckets is not None else None
    root = vault.resolve()
    found: list[VaultFile] = []
    inside_links: dict[str, str] = {}  # a link's path -> the vault path it leads to
    for folder, subfolders, files in os.walk(vault):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        for name in files:
            if name.startswith("."):
                continue
            absolute = Path(folder) / name
            relative = absolute.relative_to(vault).as_posix()
            if not name.lower().endswith(config.suffixes) and not is_convertible(relative, config):
                continue
            bucket = bucket_of(relative, config.bucket_count)
            if wanted is not None and bucket not in wanted:
                continue
            try:
                stat = absolute.stat()
            except OSError:
                continue  # vanished between listing and stat; the next scan sees it gone
            outside = None
            if absolute.is_symlink():
                target = absolute.resolve()
                if target.is_relative_to(root):
                    inside_links[relative] = target.relative_to(root).as_posix()
                else:
                    outside = str(target)
            found.append(VaultFile(relative, absolute, bucket, stat.st_size, stat.st_mtime_ns, outside))
    if inside_links:
        listed = {file.path for file in found if file.path not in inside_links}
        # Bucket-filtered scans list only some documents: whether the target is one is decided on its own path.
        found = [
            file for file in found
            if file.path not in inside_links or not _is_document(inside_links[file.path], listed, vault, config)
        ]  # fmt: skip
    found.sort(key=lambda file: file.path)
    return found


def _is_document(path: str, listed: set[str], vault: Path, config: VaultConfig) -> bool:
    """Whether a vault path is a document of its own: listed, or a visible file a full scan would list."""
    if path in listed:
        return True
    parts = path.split("/")
    if any(part.startswith(".") for part in parts):
        return False
    named = parts[-1].lower().endswith(config.suffixes) or is_convertible(path, config)
    return named and (vault / path).is_file() and not (vault / path).is_symlink()
