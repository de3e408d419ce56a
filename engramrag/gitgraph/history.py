"""Commits, the people on them (AI agents recognised) and the files each commit changed, from one ``git log``.

One pass over the history reads everything: the commit fields, the ``Co-authored-by`` trailers (parsed by git
itself, so only the trailer block counts), the raw diff (status letters, blob ids, renames with ``-M``) and the
numstat line counts. Merges are diffed against their first parent: what the merge brought to the mainline.
Names and emails go through ``.mailmap`` (``%aN``/``%aE``), so one person with two spellings is one person.
Settings of the user's own git configuration that would change what is printed (``log.showRoot``, the log
output encoding, renames) are pinned on the command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from engramrag.gitgraph.gitcli import Git, GitError

FIELDS = ("%H", "%P", "%aN", "%aE", "%cN", "%cE", "%aI", "%cI",
          "%(trailers:key=Co-authored-by,valueonly,separator=%x1f,unfold)", "%s", "%b")  # fmt: skip
LOG_FORMAT = "%x00".join(FIELDS) + "%x00"
NUMSTAT = re.compile(rb"^(\d+|-)\t(\d+|-)\t")
NAME_EMAIL = re.compile(r"^\s*(?P<name>.*?)\s*<(?P<email>[^<>]*)>\s*$")
GITHUB_NOREPLY = re.compile(r"^\d+\+(?P<user>[^@]+)@users\.noreply\.github\.com$")

# (kind, name pattern, email pattern): the names and addresses AI coding agents commit or co-author under.
# "Claude" and "Devin" are also people's first names, so a bare first name followed by a surname is not enough.
AGENT_RULES: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (kind, re.compile(name, re.IGNORECASE), re.compile(email, re.IGNORECASE))
    for kind, name, email in (
        ("claude", r"^claude(?:[\s_-]?(?:code|opus|sonnet|haiku|ai|agent|\d)\b.*|\s*\(.*\)|\[bot\])?$",
         r"@anthropic\.com$|^claude(?:\[bot\]|-code)"),
        ("copilot", r"copilot", r"copilot"),
        ("cursor", r"^cursor(?:\s*agent|\[bot\])?$|^cursoragent$", r"@cursor\.(?:com|sh)$|cursoragent"),
        ("codex", r"\bcodex\b|^chatgpt", r"codex|@openai\.com$"),
        ("gemini", r"^gemini\b|gemini-code-assist", r"gemini"),
        ("devin", r"^devin(?:[\s_-]ai\b.*|\[bot\])$", r"devin-ai|@cognition(?:-labs)?\.(?:ai|com)$"),
        ("aider", r"^aider\b|\(aider\)$", r"^aider@|@aider\.chat$"),
        ("openhands", r"openhands", r"openhands|@all-hands\.dev$"),
        ("bot", r"\[bot\]$|^(?:dependabot|renovate|github-actions)\b", r"\[bot\]@|^(?:dependabot|renovate)\b"),
    )
)  # fmt: skip


@dataclass(frozen=True)
class Person:
    key: str  # the normalised email, else the normalised name
    name: str
    email: str
    is_agent: bool
    agent_kind: str | None


@dataclass(frozen=True)
class FileChange:
    path: str
    old_path: str | None  # the path before a rename
    change: str  # "A" | "M" | "D" | "R"
    added: int | None  # None for binary files
    deleted: int | None
    blob: str | None  # the blob after the change; None when the file was deleted
    old_blob: str | None  # the blob before it; None when the file was added


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    author: Person
    committer: Person
    co_authors: tuple[Person, ...]
    authored_at: datetime  # UTC
    committed_at: datetime  # UTC
    subject: str
    body: str
    changes: tuple[FileChange, ...]

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


def agent_kind(name: str, email: str) -> str | None:
    """Which AI agent (or bot) a name and email belong to, or None for a person."""
    name, email = name.strip(), email.strip()
    for kind, name_pattern, email_pattern in AGENT_RULES:
        if (name and name_pattern.search(name)) or (email and email_pattern.search(email)):
            return kind
    return None


def person_key(name: str, email: str) -> str:
    """The normalised email (a GitHub noreply address without its numeric id, so both forms are one
    account), else the name in lower case with single spaces."""
    email = email.strip().casefold()
    if email:
        noreply = GITHUB_NOREPLY.match(email)
        return f"{noreply.group('user')}@users.noreply.github.com" if noreply else email
    return re.sub(r"\s+", " ", name.strip().casefold())


def full_name(name: str) -> str | None:
    """A name that tells one person from another (at least two words, in lower case with single spaces): the
    same full name under two e-mail addresses is one person (a work and a private address, a changed
    employer). A one-word name ("alice", "root", "ubuntu") may be many people, so it joins nothing."""
    words = name.strip().casefold().split()
    return " ".join(words) if len(words) >= 2 else None


def person(name: str, email: str) -> Person:
    kind = agent_kind(name, email)
    return Person(person_key(name, email), name.strip(), email.strip(), kind is not None, kind)


def parse_identity(value: str) -> Person | None:
    """``Name <email>`` as written in a trailer; a bare name is kept too."""
    match = NAME_EMAIL.match(value)
    name, email = (match.group("name"), match.group("email")) if match else (value.strip(), "")
    return person(name, email) if (name.strip() or email.strip()) else None


def read_history(git: Git, revisions: Sequence[str], expected: Sequence[str]) -> Iterator[Commit]:
    """The commits of ``git log REVISIONS`` in ``expected`` order (parents before children, as ``rev_list``
    gives them); ``expected`` also checks that the output is read in step."""
    if not expected:
        return
    args = (
        "-c", "i18n.logOutputEncoding=UTF-8", "log", "--reverse", "--topo-order", f"--format={LOG_FORMAT}", "-z",
        "--root", "--raw", "--numstat", "-M",
        "--no-abbrev", "--no-ext-diff", "--no-textconv", "--diff-merges=first-parent", "--no-color",
        "--end-of-options", *revisions,
    )  # fmt: skip
    yield from parse_log(git.tokens(*args), expected)


def parse_log(tokens: Iterable[bytes], expected: Sequence[str]) -> Iterator[Commit]:
    stream = _Stream(iter(tokens))
    for want in expected:
        sha = stream.next_nonempty().strip().decode()
        if sha != want:
            raise GitError(f"git log printed commit {sha!r} where {want!r} was expected")
        fields = [stream.next().decode("utf-8", "replace") for _ in FIELDS[1:]]
        parents, a_name, a_email, c_name, c_email, a_date, c_date, trailers, subject, body = fields
        raw, numstat = _diff(stream)
        author, committer = person(a_name, a_email), person(c_name, c_email)
        co_authors = {}
        for value in trailers.split("\x1f"):
            found = parse_identity(value) if value.strip() else None
            if found is not None and found.key not in (author.key, *co_authors):
                co_authors[found.key] = found
        yield Commit(
            sha=sha,
            parents=tuple(parents.split()),
            author=author,
            committer=committer,
            co_authors=tuple(co_authors.values()),
            authored_at=_utc(a_date),
            committed_at=_utc(c_date),
            subject=subject.strip(),
            body=body.strip(),
            changes=tuple(_changes(raw, numstat)),
        )


class _Stream:
    def __init__(self, tokens: Iterator[bytes]) -> None:
        self._tokens = tokens
        self._peeked: bytes | None = None

    def next(self) -> bytes:
        if self._peeked is not None:
            token, self._peeked = self._peeked, None
            return token
        try:
            return next(self._tokens)
        except StopIteration:
            raise GitError("git log output ended in the middle of a commit") from None

    def peek(self) -> bytes | None:
        if self._peeked is None:
            self._peeked = next(self._tokens, None)
        return self._peeked

    def next_nonempty(self) -> bytes:
        while True:
            token = self.next()
            if token.strip():
                return token


def _diff(stream: _Stream) -> tuple[list[tuple[bytes, list[bytes]]], dict[str, tuple[int | None, int | None]]]:
    """The raw entries (status line, paths) and the numstat counts by new path, up to the next commit."""
    raw: list[tuple[bytes, list[bytes]]] = []
    numstat: dict[str, tuple[int | None, int | None]] = {}
    while (token := stream.peek()) is not None:
        stripped = token.lstrip(b"\n")
        if not token.strip():
            stream.next()
        elif stripped.startswith(b":"):
            stream.next()
            status = stripped.rsplit(b" ", 1)[-1]
            count = 2 if status[:1] in (b"R", b"C") else 1
            raw.append((stripped, [stream.next() for _ in range(count)]))
        elif match := NUMSTAT.match(stripped):
            stream.next()
            rest = stripped[match.end() :]
            path = rest if rest else (stream.next(), stream.next())[1]
            numstat[path.decode("utf-8", "replace")] = (_count(match.group(1)), _count(match.group(2)))
        else:
            break
    return raw, numstat


def _changes(
    raw: list[tuple[bytes, list[bytes]]], numstat: dict[str, tuple[int | None, int | None]]
) -> Iterator[FileChange]:
    for line, paths in raw:
        _old_mode, _new_mode, old_blob, new_blob, status = line[1:].decode().split(" ")
        names = [p.decode("utf-8", "replace") for p in paths]
        path, old_path = names[-1], names[0] if len(names) == 2 else None
        letter = status[0]
        change = {"T": "M", "C": "A"}.get(letter, letter)
        added, deleted = numstat.get(path, (None, None))
        yield FileChange(
            path=path,
            old_path=old_path,
            change=change,
            added=added,
            deleted=deleted,
            blob=None if change == "D" else new_blob,
            old_blob=None if change == "A" and old_path is None else old_blob,
        )


def _count(value: bytes) -> int | None:
    return None if value == b"-" else int(value)


def _utc(value: str) -> datetime:
    return datetime.fromisoformat(value.strip()).astimezone(UTC)
