"""Listing the vault: which files are documents, and which bucket each falls in."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from engramrag.vault.config import VaultConfig
from engramrag.vault.converters import is_convertible
from engramrag.vault.ids import bucket_of


@dataclass(frozen=True)
class VaultFile:
    path: str  # vault-relative, POSIX
    location: str  # where it is on disk (the vault folder joined with ``path``)
    bucket: int
    size_bytes: int
    mtime_ns: int
    outside: str | None = None  # a link that leads out of the vault: where it leads (never read)

    @property
    def absolute(self) -> Path:
        return Path(self.location)


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
    # os.scandir and string paths: a Path per file cost most of a look at a 10,000-note vault (engram watch and
    # every build look first).
    for entry, relative in _visible_files(str(vault), ""):
        if not _named_as_document(relative, config):
            continue
        bucket = bucket_of(relative, config.bucket_count)
        if wanted is not None and bucket not in wanted:
            continue
        try:
            stat = entry.stat()
        except OSError:
            continue  # vanished between listing and stat, or a broken link; the next scan sees it
        outside = None
        if entry.is_symlink():
            target = Path(entry.path).resolve()
            if target.is_relative_to(root):
                inside_links[relative] = target.relative_to(root).as_posix()
            else:
                outside = str(target)
        found.append(VaultFile(relative, entry.path, bucket, stat.st_size, stat.st_mtime_ns, outside))
    if inside_links:
        listed = {file.path for file in found if file.path not in inside_links}
        # Bucket-filtered scans list only some documents: whether the target is one is decided on its own path.
        found = [
            file for file in found
            if file.path not in inside_links or not _is_document(inside_links[file.path], listed, vault, config)
        ]  # fmt: skip
    found.sort(key=lambda file: file.path)
    return found


def vault_files(vault: Path, config: VaultConfig, paths: Iterable[str]) -> list[VaultFile]:
    """The files of ``paths`` (vault-relative, POSIX) that ``scan_vault`` would list, sorted by path: only these are
    looked at (``engram watch`` knows from the system which files were written). A path that is gone, hidden, not a
    document, a folder, under a linked folder, or a link to another document of the vault is not listed."""
    if not vault.is_dir():
        raise VaultMissing(f"vault folder {vault} does not exist; pass --vault DIR or set ENGRAM_VAULT.")
    root = vault.resolve()
    found = []
    for relative in sorted(set(paths)):
        parts = relative.split("/")
        if "" in parts or hidden(relative) or not _named_as_document(relative, config):
            continue
        location = os.path.join(str(vault), *parts)
        folders = [os.path.join(str(vault), *parts[:depth]) for depth in range(1, len(parts))]
        if any(os.path.islink(folder) for folder in folders) or os.path.isdir(location):
            continue  # a linked folder is not followed
        try:
            stat = os.stat(location)
        except OSError:
            continue  # gone (a deletion the catalog tells), or a broken link
        outside = None
        if os.path.islink(location):
            target = Path(location).resolve()
            if not target.is_relative_to(root):
                outside = str(target)
            elif _is_document(target.relative_to(root).as_posix(), set(), vault, config):
                continue  # that document is read once, under its real path
        found.append(VaultFile(relative, location, bucket_of(relative, config.bucket_count), stat.st_size,
                               stat.st_mtime_ns, outside))  # fmt: skip
    return found


def _visible_files(folder: str, relative: str) -> Iterator[tuple[os.DirEntry[str], str]]:
    """Each file under ``folder`` with its vault-relative path (``relative`` is the folder's, "" or ending in
    "/"), skipping hidden names; linked folders are not followed. A folder that cannot be read, or that went away
    while the vault was listed, is skipped, as ``os.walk`` skips it."""
    try:
        with os.scandir(folder) as entries:
            listed = [entry for entry in entries if not entry.name.startswith(".")]
    except OSError:
        return
    for entry in listed:
        if not entry.is_dir():
            yield entry, relative + entry.name
        elif not entry.is_symlink():
            yield from _visible_files(entry.path, f"{relative}{entry.name}/")


def _is_document(path: str, listed: set[str], vault: Path, config: VaultConfig) -> bool:
    """Whether a vault path is a document of its own: listed, or a visible file a full scan would list."""
    if path in listed:
        return True
    if hidden(path) or not _named_as_document(path, config):
        return False
    return (vault / path).is_file() and not (vault / path).is_symlink()


def hidden(relative: str) -> bool:
    """Whether a vault path (POSIX, relative) is hidden or under a hidden folder (``.git``, ``.obsidian``, a home's
    ``.engram``): no scan lists it, and a write there is no change to the vault."""
    return any(part.startswith(".") for part in relative.split("/"))


def _named_as_document(relative: str, config: VaultConfig) -> bool:
    """A Markdown name, or a convertible file of the sources folder (a PDF elsewhere is not a document)."""
    return relative.rsplit("/", 1)[-1].lower().endswith(config.suffixes) or is_convertible(relative, config)
