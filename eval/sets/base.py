"""What every retrieval evaluation set provides: a vault on disk and questions with gold documents.

A question's ``gold`` is the set of vault-relative paths that together answer it; an empty ``gold`` marks a
question the vault cannot answer (used to measure abstention, never recall). ``group`` tells what kind of
question it is (``single-session``, ``multi-session``, ``alias``, ``2hop``, ``unanswerable``...), so results are
reported per group as well as overall.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    gold: tuple[str, ...]  # vault-relative paths; () = the vault holds no answer
    group: str
    language: str = "en"  # "en" or "ko"

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


@dataclass(frozen=True)
class RetrievalSet:
    name: str
    vault: Path
    questions: tuple[Question, ...]
    digest: str  # of the vault's paths and bytes: a home built from another vault is not reused
    description: str = ""


def write_files(vault: Path, files: Mapping[str, str], managed_suffix: str = ".md") -> str:
    """Make ``vault`` hold exactly ``files`` (relative path -> text): only files whose bytes differ are
    written, so a rebuild of an unchanged set finds nothing changed, and stray ``managed_suffix`` files are
    removed. Returns the digest of the paths and contents."""
    vault.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    for relative in sorted(files):
        content = files[relative].encode("utf-8")
        target = vault / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_bytes() != content:
            target.write_bytes(content)
        digest.update(relative.encode() + b"\0" + content + b"\0")
    wanted = set(files)
    for stray in vault.rglob(f"*{managed_suffix}"):
        if stray.relative_to(vault).as_posix() not in wanted:
            stray.unlink()
    return digest.hexdigest()[:16]


def check_questions(questions: Sequence[Question], files: Mapping[str, str]) -> None:
    """Every gold path exists and every id is unique; raises ValueError naming the first problem."""
    seen: set[str] = set()
    for question in questions:
        if question.id in seen:
            raise ValueError(f"question id {question.id!r} is used twice")
        seen.add(question.id)
        missing = [path for path in question.gold if path not in files]
        if missing:
            raise ValueError(f"{question.id}: gold {missing[0]!r} is not a file of the set")
