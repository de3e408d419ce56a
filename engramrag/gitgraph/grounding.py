"""Grounding checks: nothing a model writes enters the decision graph, or reaches a user, unchecked.

A claim carries a quote from a file at a commit. It is accepted only when the quote is in that file verbatim
(line breaks and runs of spaces count as one space: a quote copied across a wrapped line is still the source's
words), every figure the claim states is inside its quote (a number not in the quote is the model's, not the
source's; record numbers such as ADR-0016 or #12 are names, not figures), every file it names exists in git at
that commit, and every qualified identifier it names (``pkg.mod.func``, ``crate::schema::validator::validate``)
is found as a whole: written out somewhere, or its last parts as words of the file its module parts name.
An answer is accepted only when every id it cites was returned by a tool in the same run. A rejection names each
check that failed and why, so the model (or a person) can fix exactly that.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engramrag.gitgraph.gitcli import Git, GitError
from engramrag.messages import one_line

QUOTE_VERBATIM = "quote-verbatim"
FIGURE_IN_QUOTE = "figure-in-quote"
FILE_AT_COMMIT = "file-at-commit"
IDENTIFIER_EXISTS = "identifier-exists"
CITED_ID_RETURNED = "cited-id-returned"

FIGURE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
# Numbers that name a record, not a quantity: ADR-0016, adr-7, RFC 7231, PR #12, #12.
RECORD_NUMBER = re.compile(r"\b[A-Za-z]{1,6}-\d+\b|\b[A-Z]{2,6}[ _]?#?\d+\b|(?<![\w&])#\d+\b")
WHITESPACE = re.compile(r"\s+")
ROOT_PARTS = frozenset({"crate", "self", "super"})  # Rust's path roots name no file
MODULE_FILES = ("mod", "__init__", "index", "lib", "main")
BACKTICKED = re.compile(r"`([^`\n]+)`")
QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”")
IDENTIFIER_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
QUALIFIED = re.compile(r"^[A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_][\w]*)+(?:\(\))?$")
FILE_NAME = re.compile(r"^[\w.@+-]*(?:/[\w.@+-]+)+/?$|^[\w@+-][\w.@+-]*\.[A-Za-z0-9]{1,8}$")
SHA_PREFIX = re.compile(r"^[0-9a-f]{7,64}$")


@dataclass(frozen=True)
class Failure:
    check: str
    detail: str


@dataclass(frozen=True)
class Verdict:
    """The outcome of the checks: accepted when nothing failed; ``checks`` lists what was checked."""

    checks: tuple[str, ...]
    failures: tuple[Failure, ...] = field(default=())

    @property
    def accepted(self) -> bool:
        return not self.failures

    @property
    def failed_checks(self) -> list[str]:
        return sorted({failure.check for failure in self.failures})

    @property
    def reason(self) -> str:
        if self.accepted:
            return "accepted"
        return "rejected: " + "; ".join(f"{failure.check}: {failure.detail}" for failure in self.failures)

    def to_json(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "checks": list(self.checks),
            "failures": [{"check": failure.check, "detail": failure.detail} for failure in self.failures],
            "reason": self.reason,
        }


def check_claim(
    repo_path: str | os.PathLike[str],
    sha: str,
    *,
    quote: str | None = None,
    source_path: str | None = None,
    claim: str = "",
    files: Iterable[str] = (),
    identifiers: Iterable[str] = (),
) -> Verdict:
    """Check a model-written claim about the repository at commit ``sha``.

    ``quote`` must appear verbatim in ``source_path`` at ``sha``; every figure in ``claim`` (outside backticks
    and outside its own quotation marks) must appear inside ``quote``; every file in ``files`` and every
    backticked path in ``claim`` must exist at ``sha``; every part of every identifier in ``identifiers`` and
    every backticked qualified identifier in ``claim`` must be an identifier in the files at ``sha``.
    """
    git = Git(repo_path)
    commit = git.resolve(sha)
    if commit is None:
        return Verdict((FILE_AT_COMMIT,), (Failure(FILE_AT_COMMIT, f"{sha!r} names no commit"),))
    named_files, named_identifiers = names_in(claim)
    files = _unique([*files, *named_files, *([source_path] if source_path else [])])
    identifiers = _unique([*identifiers, *named_identifiers])
    checks: list[str] = []
    failures: list[Failure] = []
    if files:
        checks.append(FILE_AT_COMMIT)
        failures += [
            Failure(FILE_AT_COMMIT, f"{path} does not exist at {commit[:12]}")
            for path in files
            if not git.file_exists(commit, path.rstrip("/"))
        ]
    if quote is not None:
        checks.append(QUOTE_VERBATIM)
        failures += _check_quote(git, commit, source_path, quote)
        if claim:
            checks.append(FIGURE_IN_QUOTE)
            failures += check_figures(claim, quote)
    if identifiers:
        checks.append(IDENTIFIER_EXISTS)
        failures += _check_identifiers(git, commit, identifiers)
    return Verdict(tuple(checks), tuple(failures))


def _check_quote(git: Git, commit: str, source_path: str | None, quote: str) -> list[Failure]:
    if not quote.strip():
        return [Failure(QUOTE_VERBATIM, "the quote is empty")]
    if not source_path:
        return [Failure(QUOTE_VERBATIM, "the quote names no source file")]
    with git.blobs() as blobs:
        content = blobs.read(f"{commit}:{source_path}")
    if content is None:
        return [Failure(QUOTE_VERBATIM, f"{source_path} cannot be read at {commit[:12]}")]
    return quote_failures(quote, content.decode("utf-8", "replace"), f"{source_path} at {commit[:12]}")


def quote_failures(quote: str, text: str, where: str) -> list[Failure]:
    """The quote-verbatim check on a text already at hand (``where`` names it in the failure): nothing when
    ``quote`` is in ``text`` verbatim, line breaks and runs of spaces counting as one space."""
    if not quote.strip():
        return [Failure(QUOTE_VERBATIM, f"the quote from {where} is empty")]
    if spaced(quote) in spaced(text):
        return []
    return [Failure(QUOTE_VERBATIM, f"{one_line(quote, 80)!r} is not verbatim in {where}")]


def figures(text: str) -> list[str]:
    """The numbers written in ``text``, thousands separators removed (``10,000`` and ``10000`` are one figure)."""
    found = []
    for match in FIGURE.finditer(text):
        value = match.group(0)
        found.append(value.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", value) else value)
    return found


def spaced(text: str) -> str:
    """Line breaks and runs of spaces as one space, as every quote check compares a quote with its source."""
    return WHITESPACE.sub(" ", text).strip()


def check_figures(claim: str, quote: str) -> list[Failure]:
    own = RECORD_NUMBER.sub(" ", BACKTICKED.sub(" ", claim))
    own = own.replace(quote, " ") if quote else own
    own = QUOTED.sub(lambda match: " " if match.group(0)[1:-1] and match.group(0)[1:-1] in quote else match.group(0),
                     own)
    inside = set(figures(quote))
    missing = _unique(value for value in figures(own) if value not in inside)
    return [Failure(FIGURE_IN_QUOTE, f"{value} is not in the quote") for value in missing]


def _check_identifiers(git: Git, commit: str, identifiers: Iterable[str]) -> list[Failure]:
    tree = git.tree(commit)
    failures = []
    for identifier in identifiers:
        name = identifier.removesuffix("()")
        parts = [part for part in re.split(r"\.|::", name) if part]
        wrong = [part for part in parts if not IDENTIFIER_PART.match(part)]
        if wrong:
            failures += [Failure(IDENTIFIER_EXISTS, f"{part!r} in {identifier} is not an identifier") for part in wrong]
            continue
        missing, where = _identifier_missing(git, commit, tree, name, parts)
        failures += [
            Failure(IDENTIFIER_EXISTS, f"{part!r} of {identifier} is not a word of {where} at {commit[:12]}")
            for part in missing
        ]
    return failures


def _identifier_missing(
    git: Git, commit: str, tree: Mapping[str, str], name: str, parts: list[str]
) -> tuple[list[str], str]:
    """The parts of a qualified name not found, and where they were looked for: nothing when the whole name is
    written in some file; else the longest run of leading parts that names files (``schema/validator.rs``,
    ``pkg/mod.py``, ``pkg/mod/__init__.py``) must hold every remaining part as a word."""
    if _in_tree(git, commit, [name], fixed=True):
        return [], ""
    named = [part for part in parts if part not in ROOT_PARTS]
    for split in range(len(named) - 1, 0, -1):
        module, rest = named[:split], named[split:]
        files = sorted(path for path in tree if _names_module(path, module))
        if files:
            where = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
            return [part for part in rest if not _in_tree(git, commit, [part], files=files)], where
    if _in_tree(git, commit, named, all_match=True):  # Class.method: both words in one file
        return [], ""
    return named, "any one file (and no file is named by its module parts)"


def _names_module(path: str, module: list[str]) -> bool:
    pieces = path.split("/")
    pieces[-1] = pieces[-1].split(".", 1)[0]
    if len(pieces) > 1 and pieces[-1] in MODULE_FILES:
        pieces.pop()
    return pieces[-len(module):] == module


def _in_tree(
    git: Git, commit: str, words: list[str], fixed: bool = False, files: Iterable[str] = (), all_match: bool = False
) -> bool:
    """Whether a word (``fixed``: a string) occurs in some file at the commit (``git grep`` on the tree);
    ``all_match``: every one of ``words`` in one file."""
    patterns = [argument for word in words for argument in ("-e", word)]
    options = ["-q", "-F", "-I", *([] if fixed else ["-w"]), *(["--all-match"] if all_match else [])]
    try:
        code = git.returncode("grep", *options, *patterns, commit, "--", *files)
    except GitError:
        return False
    return code == 0


def names_in(claim: str) -> tuple[list[str], list[str]]:
    """The file names and qualified identifiers a claim names in backticks: ``src/app.py``, ``pkg.mod.func``.
    A backticked name with a file extension is read as a file when it has a slash or no identifier shape."""
    files, identifiers = [], []
    for match in BACKTICKED.finditer(claim):
        value = match.group(1).strip()
        if "/" in value and FILE_NAME.match(value):
            files.append(value)
        elif QUALIFIED.match(value) and not re.search(r"\.(?:md|py|txt|json|ya?ml|toml|js|ts|rs|go|cfg|ini)$", value):
            identifiers.append(value)
        elif FILE_NAME.match(value):
            files.append(value)
    return files, identifiers


def check_answer(cited_ids: Iterable[str], returned_ids: Iterable[str]) -> Verdict:
    """Every id the answer cites must be one a tool returned in this run. A commit may be cited by a prefix of
    at least 7 hex digits when exactly one returned commit starts with it."""
    returned = set(returned_ids)
    failures = []
    for cited in _unique(cited_ids):
        if cited in returned:
            continue
        if SHA_PREFIX.match(cited) and len([item for item in returned if item.startswith(cited)]) == 1:
            continue
        failures.append(Failure(CITED_ID_RETURNED, f"{cited} was not returned by any tool in this run"))
    return Verdict((CITED_ID_RETURNED,), tuple(failures))


def returned_ids(answers: Iterable[Mapping[str, Any]]) -> set[str]:
    """The ids the tools' answers returned: decision ids, commit shas, file paths and person keys."""
    found: set[str] = set()
    for result in answers:
        evidence = result.get("evidence", {})
        found.update(item["id"] for item in evidence.get("decisions", ()))
        found.update(item["sha"] for item in evidence.get("commits", ()))
        found.update(item["path"] for item in evidence.get("files", ()))
        found.update(item["key"] for item in evidence.get("people", ()))
    return found


def _unique(values: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen
