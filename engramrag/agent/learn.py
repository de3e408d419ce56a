"""``learn``: an agent records what it learned as a note in the agent folder, verified before anything is written.

What an agent learned is only worth keeping if a person can check it, so the note is refused before any write
unless: no live document, agent note or pending learn already has a similar title (a second note on the same
thing splits the graph; the refusal names the existing ones so the agent can extend them instead); every
source is a readable note inside the vault; and every quote appears verbatim in its source, with only runs of
whitespace treated as equal so a quote across a line wrap still matches. The note records each source with the
line its quote starts on, so a reviewer can open the exact place. The write itself goes through
``writes.propose_write``, so it is a bound confirmation row like every agent write; even when the permission
mode writes it at once, the note stays out of the graph until a person approves it (``approvals``).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from engramrag.agent import approvals, confirmations, destinations
from engramrag.agent.confirmations import Refused
from engramrag.agent.writes import Executed, Pending, Policy, propose_write
from engramrag.catalog.connection import catalog_reader, has_table
from engramrag.extract.textutil import normalise_label
from engramrag.messages import one_line
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.markdown import normalised_text, parse_document

SIMILAR_RATIO = 0.85
MIN_CONTAINED_WORDS = 3
MAX_TITLE_CHARS = 200
MAX_SLUG_CHARS = 60
CHECKS = ("title", "body", "agent", "duplicate-title", "source", "quote")
_WORD = re.compile(r"[^\W_]+")


class LearnRefused(Refused):
    """A learn refused before writing; ``check`` names the check, ``existing`` lists similar notes (path, title)."""

    def __init__(self, check: str, message: str, existing: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(check, message)
        self.check = check
        self.existing = [dict(entry) for entry in existing]


@dataclass(frozen=True)
class Source:
    """A verified source: its vault path and, when quoted, the quote and the 1-based line it starts on."""

    path: str
    quote: str | None = None
    line: int | None = None

    def as_front_matter(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"path": self.path}
        if self.quote is not None:
            entry |= {"quote": self.quote, "line": self.line}
        return entry


@dataclass(frozen=True)
class LearnResult:
    """Where the note goes, whether it was written (Executed) or waits for a person (Pending), what was checked."""

    path: str
    outcome: Pending | Executed
    checks: tuple[str, ...]
    sources: tuple[Source, ...] = ()


def learn(
    home: Home,
    vault: str | os.PathLike[str],
    title: str,
    body: str,
    sources: Sequence[Mapping[str, Any] | str],
    agent: str,
    policy: Policy | None = None,
    now: datetime | None = None,
    config: VaultConfig | None = None,
) -> LearnResult:
    """Verify and propose ``learned/<slug>.md``; LearnRefused names the failed check and what to do instead."""
    moment = now or datetime.now(UTC)
    config = config or VaultConfig()
    root = Path(vault).resolve()
    title = _checked_title(title)
    if not isinstance(body, str) or not body.strip():
        raise LearnRefused("body", "the note has no body; write what was learned, citing the sources.")
    if not isinstance(agent, str) or not agent.strip():
        raise LearnRefused("agent", "every learned note names its agent; pass the agent's name.")
    pending = _pending_learns(home, config, moment)
    existing = similar_notes(home, root, title, config, pending)
    if existing:
        listed = "; ".join(f"{entry['path']} ({entry['title']!r})" for entry in existing)
        raise LearnRefused(
            "duplicate-title",
            f"a note with a similar title already exists: {listed}. Read it and extend it with an edit, or choose "
            "a title that says how this note differs.",
            existing,
        )
    checked = tuple(_verify(root, home, entry, index, config) for index, entry in enumerate(_entries(sources), 1))
    content = render_note(title, body, agent.strip(), moment, checked)
    if len(content.encode("utf-8")) > config.max_file_bytes:
        raise LearnRefused(
            "body", f"the note would be over the vault's {config.max_file_bytes:,}-byte limit; split it up."
        )
    path = _free_path(root, config, slug(title, body), {entry["path"] for entry in pending})
    outcome = propose_write(home, root, path, content, agent.strip(), policy, now=moment)
    return LearnResult(path, outcome, CHECKS, checked)


def similar_notes(
    home: Home,
    vault: str | os.PathLike[str],
    title: str,
    config: VaultConfig | None = None,
    pending: Sequence[Mapping[str, str]] | None = None,
) -> list[dict[str, str]]:
    """Live catalog documents, agent notes and pending learns whose title is similar to ``title``.

    Similar means the same normalised label, a difflib ratio of at least ``SIMILAR_RATIO`` between the
    normalised titles, or every word of the shorter title (three words or more) inside the longer one, which
    catches a title that adds a parenthesis or a subtitle. Agent notes are read from the vault because held
    notes are not in the catalog.
    """
    config = config or VaultConfig()
    wanted = normalise_label(title)
    candidates: dict[str, dict[str, str]] = {}
    for entry in [*_catalog_titles(home), *_agent_note_titles(vault, config), *(pending or [])]:
        candidates.setdefault(entry["path"], dict(entry))
    found = []
    for entry in candidates.values():
        if _similar_titles(wanted, normalise_label(entry["title"])):
            found.append(entry)
    return sorted(found, key=lambda entry: entry["path"])


def _similar_titles(wanted: str, other: str) -> bool:
    if other == wanted or difflib.SequenceMatcher(None, wanted, other).ratio() >= SIMILAR_RATIO:
        return True
    shorter, longer = sorted((set(_WORD.findall(wanted)), set(_WORD.findall(other))), key=len)
    return len(shorter) >= MIN_CONTAINED_WORDS and shorter <= longer


def slug(title: str, body: str = "") -> str:
    """The file name stem for a title: lowercase ASCII words and other letters (Hangul kept) joined by '-'.

    A title with no letters or digits falls back to a short hash of the title and body.
    """
    words = _WORD.findall(unicodedata.normalize("NFKC", title).casefold())
    stem = ""
    for word in words:
        candidate = f"{stem}-{word}" if stem else word
        if len(candidate) > MAX_SLUG_CHARS:
            stem = stem or word[:MAX_SLUG_CHARS]
            break
        stem = candidate
    if stem:
        return stem
    return hashlib.blake2b(f"{title}\n{body}".encode(), digest_size=5).hexdigest()


def render_note(title: str, body: str, agent: str, moment: datetime, sources: Sequence[Source]) -> str:
    """The note's text: front matter (title, pending status, author, when, sources with lines), then the body."""
    front = {
        "title": title,
        "status": "pending",
        "author": agent,
        "learned_at": moment.astimezone(UTC).isoformat(timespec="seconds"),
        "sources": [source.as_front_matter() for source in sources],
    }
    dumped = yaml.safe_dump(front, allow_unicode=True, sort_keys=False, width=100)
    return f"---\n{dumped}---\n\n{body.strip(chr(10))}\n"


def find_quote(text: str, quote: str) -> int | None:
    """The 1-based line where ``quote`` starts in ``text``, treating any run of whitespace as one space."""
    words = quote.split()
    if not words:
        return None
    match = re.search(r"\s+".join(re.escape(word) for word in words), text)
    return None if match is None else text.count("\n", 0, match.start()) + 1


def _checked_title(title: Any) -> str:
    if not isinstance(title, str) or not title.strip():
        raise LearnRefused("title", "the note needs a title: one line saying what was learned.")
    title = title.strip()
    if "\n" in title or "\r" in title:
        raise LearnRefused("title", "the title must be one line; put the rest in the body.")
    if len(title) > MAX_TITLE_CHARS:
        raise LearnRefused("title", f"the title is over {MAX_TITLE_CHARS} characters; shorten it.")
    return title


def _entries(sources: Any) -> list[tuple[str, str | None]]:
    if isinstance(sources, str | bytes | Mapping) or not isinstance(sources, Sequence) or not sources:
        raise LearnRefused(
            "source",
            'a learned note needs sources: a list of {"path": "notes/x.md", "quote": "exact text"} (quote optional) '
            "or of vault paths.",
        )
    entries = []
    for index, source in enumerate(sources, 1):
        if isinstance(source, str):
            entries.append((source, None))
            continue
        if not isinstance(source, Mapping) or not isinstance(source.get("path"), str):
            raise LearnRefused("source", f"source {index} is {source!r}; give a vault path or a mapping with 'path'.")
        quote = source.get("quote")
        if quote is not None and not isinstance(quote, str):
            raise LearnRefused("quote", f"the quote of source {index} ({source['path']}) must be text.")
        entries.append((source["path"], quote))
    return entries


def _verify(root: Path, home: Home, entry: tuple[str, str | None], index: int, config: VaultConfig) -> Source:
    path, quote = entry
    try:
        parts = destinations.relative_parts(path, config)
        raw = destinations.read_bytes(root, parts)
    except Refused as refusal:
        raise LearnRefused("source", f"source {index} ({path}) cannot be used: {refusal}") from refusal
    relative = "/".join(parts)
    if raw is None:
        raise LearnRefused(
            "source", f"source {index} ({relative}) does not exist in the vault; cite a note that does."
        )
    try:
        text = normalised_text(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise LearnRefused(
            "source", f"source {index} ({relative}) is not UTF-8 text (byte {error.start}); cite a readable note."
        ) from None
    if approvals.is_held(home, relative, raw, config) is not None:
        raise LearnRefused(
            "source",
            f"source {index} ({relative}) is an agent's note no person has approved; cite the notes it drew on.",
        )
    if quote is None:
        return Source(relative)
    if not quote.strip():
        raise LearnRefused("quote", f"the quote of source {index} ({relative}) is empty; quote text or leave it out.")
    line = find_quote(text, quote)
    if line is None:
        raise LearnRefused(
            "quote",
            f"the quote of source {index} ({relative}) does not appear verbatim in it: {one_line(quote, 80)!r}. "
            "Copy the exact words from the note (only line breaks and repeated spaces may differ).",
        )
    return Source(relative, quote.strip(), line)


def _catalog_titles(home: Home) -> list[dict[str, str]]:
    if not home.catalog_path.exists():
        return []
    with catalog_reader(home) as catalog:
        if catalog is None or not has_table(catalog, "documents"):
            return []
        rows = catalog.execute("SELECT path, title FROM documents WHERE NOT gone ORDER BY path").fetchall()
    return [{"path": path, "title": title, "where": "catalog"} for path, title in rows if title]


def _agent_note_titles(vault: str | os.PathLike[str], config: VaultConfig) -> list[dict[str, str]]:
    found = []
    for path in approvals.agent_note_paths(vault, config):
        try:
            note = approvals.read_note(vault, path, config)
        except Refused:
            continue
        found.append({"path": note.path, "title": note.title, "where": "agent-folder"})
    return found


def _pending_learns(home: Home, config: VaultConfig, now: datetime) -> list[dict[str, str]]:
    """Learned notes proposed but not yet written (a confirmation still open at ``now``): path and title."""
    if not home.decisions_path.exists():
        return []
    found = []
    for row in confirmations.confirmations(home):
        if row["status"] not in (confirmations.PENDING, confirmations.APPROVED) or row["tool"] != "write":
            continue
        if not approvals.in_agent_folder(row["relative_path"], config):
            continue
        expires = row["expires_at"]
        if expires == confirmations.UNKNOWN or datetime.fromisoformat(expires) <= now:
            continue
        content = str(row["arguments"].get("content", ""))
        try:
            title = parse_document(content.encode("utf-8"), row["relative_path"], config).title
        except DocumentRejected:
            continue
        found.append({"path": row["relative_path"], "title": title, "where": f"pending {row['id']}"})
    return found


def _free_path(root: Path, config: VaultConfig, stem: str, reserved: set[str]) -> str:
    folder = config.agent_folder.strip("/")
    suffix = config.suffixes[0]
    number = 1
    while True:
        path = f"{folder}/{stem}{suffix}" if number == 1 else f"{folder}/{stem}-{number}{suffix}"
        if path not in reserved and destinations.read_bytes(root, destinations.relative_parts(path, config)) is None:
            return path
        number += 1


__all__ = [
    "CHECKS",
    "SIMILAR_RATIO",
    "LearnRefused",
    "LearnResult",
    "Source",
    "find_quote",
    "learn",
    "render_note",
    "similar_notes",
    "slug",
]
