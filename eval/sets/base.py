"""What every retrieval evaluation set provides: a vault on disk and questions with gold documents.

A question's ``gold`` is the set of vault-relative paths that together answer it; an empty ``gold`` marks a
question the vault cannot answer (used to measure abstention, never recall). ``group`` tells what kind of
question it is (``single-session``, ``multi-session``, ``alias``, ``2hop``, ``unanswerable``...), so results are
reported per group as well as overall.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
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


def occurs(term: str, text: str) -> bool:
    """Whether ``term`` is in ``text``: as a whole word for Latin terms (case-insensitive), as a substring for
    Korean ones (particles attach to the word: 고양이가)."""
    if term.isascii():
        return re.search(rf"\b{re.escape(term)}\b", text, re.IGNORECASE) is not None
    return term.lower() in text.lower()


def absent_violations(files: Mapping[str, str], questions: Sequence[Question],
                      absent: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Problems with the unanswerable questions' absent words: one occurs in a vault file, or a question holds
    none of its own. Empty when the set is sound."""
    text = "\n".join(files.values())
    problems = []
    for question in questions:
        if question.answerable:
            continue
        words = absent.get(question.id, ())
        if not any(occurs(word, question.question) for word in words):
            problems.append(f"{question.id}: none of {words} is in {question.question!r}")
        problems += [f"{question.id}: {word!r} occurs in the vault" for word in words if occurs(word, text)]
    return problems


def finish_set(
    name: str,
    vault: Path,
    files: Mapping[str, str],
    questions: Sequence[Question],
    absent: Mapping[str, tuple[str, ...]],
    description: str,
) -> RetrievalSet:
    """Check a generated set (gold paths, ids, the unanswerable questions' absent words), write its vault and
    return it; raises ValueError naming the first problems."""
    check_questions(questions, files)
    problems = absent_violations(files, questions, absent)
    if problems:
        raise ValueError("unanswerable questions that the vault may answer: " + "; ".join(problems[:5]))
    digest = write_files(vault, files)
    return RetrievalSet(name, vault, tuple(questions), digest, description)


def summary(retrieval_set: RetrievalSet) -> str:
    """Notes and questions per group, one line each."""
    notes = sum(1 for _ in retrieval_set.vault.rglob("*.md"))
    groups = Counter(q.group for q in retrieval_set.questions)
    korean = sum(q.language == "ko" for q in retrieval_set.questions)
    lines = [f"{retrieval_set.name}: {notes} notes, {len(retrieval_set.questions)} questions "
             f"({korean} Korean), digest {retrieval_set.digest}"]
    lines += [f"  {group}: {count}" for group, count in sorted(groups.items())]
    return "\n".join(lines)
