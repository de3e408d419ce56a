"""The checks every note an agent puts in the agent folder passes, whichever tool wrote it.

``learn`` runs them before it renders a note, and ``writes`` runs them again on the exact bytes of any write or
edit under the agent folder, in every permission mode, so ``write learned/x.md`` cannot skip them. A note
passes when: its title is not similar to a live document's, another agent note's or a pending learn's
(``titles.similar_titles``); its author is the agent that writes it (a person's name goes under
``claimed_author``, recorded as a claim, never as that person's authorship); it cites sources that are readable
notes in the vault, none of them an unapproved agent note; and at least one source carries a quote of at
least ``MIN_QUOTE_CHARS`` characters, each quote verbatim in its source now (runs of whitespace count as one
space) and starting on the line the note says.

Why 20 characters: a quote's job is to pin a claim to one place a reviewer can open. One or two words ("a",
"Tern") appear in almost any note and so verify nothing; 20 characters is about four English words or a
short Korean clause, which rarely repeats by chance in one note, while still letting an agent quote a single
fact ("latency under 40 ms in the load test").
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engramrag.agent import approvals, confirmations, destinations
from engramrag.agent.confirmations import Refused
from engramrag.agent.domains import split_document
from engramrag.agent.titles import similar_titles
from engramrag.catalog.connection import catalog_reader, has_table
from engramrag.messages import one_line
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.markdown import AGENT_AUTHOR, AUTHOR_KEYS, normalised_text, parse_document

MIN_QUOTE_CHARS = 20



class LearnRefused(Refused):
    """A note refused before writing; ``check`` names the check, ``existing`` lists similar notes (path, title)."""

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


def agent_author(agent: str) -> str:
    """The ``author`` an agent's note carries: the agent's name, marked as an agent's (``agent:NAME``) if it is not."""
    agent = agent.strip()
    return agent if AGENT_AUTHOR.match(agent) else f"agent:{agent}"


def find_quote(text: str, quote: str) -> int | None:
    """The 1-based line where ``quote`` starts in ``text``, treating any run of whitespace as one space."""
    words = quote.split()
    if not words:
        return None
    match = re.search(r"\s+".join(re.escape(word) for word in words), text)
    return None if match is None else text.count("\n", 0, match.start()) + 1


def source_entries(sources: Any) -> list[tuple[str, str | None, Any]]:
    """(path, quote, stated line) of each source; LearnRefused for a malformed source or a too-short quote."""
    if isinstance(sources, str | bytes | Mapping) or not isinstance(sources, Sequence) or not sources:
        raise LearnRefused(
            "source",
            'a learned note needs sources: a list of {"path": "notes/x.md", "quote": "exact text"}, at least one '
            f"with a quote of {MIN_QUOTE_CHARS} characters or more.",
        )
    entries = []
    for index, source in enumerate(sources, 1):
        if isinstance(source, str):
            entries.append((source, None, None))
            continue
        if not isinstance(source, Mapping) or not isinstance(source.get("path"), str):
            raise LearnRefused("source", f"source {index} is {source!r}; give a vault path or a mapping with 'path'.")
        quote = source.get("quote")
        if quote is not None and not isinstance(quote, str):
            raise LearnRefused("quote", f"the quote of source {index} ({source['path']}) must be text.")
        if quote is not None and len(" ".join(quote.split())) < MIN_QUOTE_CHARS:
            raise LearnRefused(
                "quote",
                f"the quote of source {index} ({source['path']}) is {one_line(quote, 40)!r}, shorter than "
                f"{MIN_QUOTE_CHARS} characters, so it would match almost anywhere; quote the sentence that says it.",
            )
        entries.append((source["path"], quote, source.get("line")))
    return entries


def require_a_quote(sources: Sequence[Source]) -> None:
    """LearnRefused unless at least one verified source carries a quote: a note no quote ties to its sources
    gives a reviewer nothing to check."""
    if not any(source.quote for source in sources):
        raise LearnRefused(
            "quote",
            f"no source carries a quote; quote at least one source verbatim ({MIN_QUOTE_CHARS} characters or more) "
            "so a reviewer can check the note against it.",
        )


def verify_source(
    root: Path, home: Home, entry: tuple[str, str | None, Any], index: int, config: VaultConfig
) -> Source:
    """The source checked now: readable, inside the vault, not a held agent note, its quote verbatim in it."""
    path, quote, stated_line = entry
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
    line = find_quote(text, quote)
    if line is None:
        raise LearnRefused(
            "quote",
            f"the quote of source {index} ({relative}) does not appear verbatim in it: {one_line(quote, 80)!r}. "
            "Copy the exact words from the note (only line breaks and repeated spaces may differ).",
        )
    if stated_line is not None and stated_line != line:
        raise LearnRefused(
            "quote",
            f"the quote of source {index} ({relative}) starts on line {line}, not on line {stated_line} as the note "
            "says; correct the line.",
        )
    return Source(relative, quote.strip(), line)


def quote_status(vault: str | os.PathLike[str], home: Home, sources: Any, config: VaultConfig | None = None) -> list[
    dict[str, Any]
]:
    """Each source of a note as a reviewer sees it: path, quote, stated line, and whether the quote is verbatim
    in the source now (``verbatim`` None for a source without a quote) with the line it really starts on."""
    config = config or VaultConfig()
    root = Path(vault).resolve()
    shown = []
    for source in sources if isinstance(sources, list) else []:
        path = source if isinstance(source, str) else str(source.get("path", "")) if isinstance(source, dict) else ""
        quote = source.get("quote") if isinstance(source, dict) else None
        entry: dict[str, Any] = {"path": path, "quote": quote,
                                 "line": source.get("line") if isinstance(source, dict) else None}
        try:
            raw = destinations.read_bytes(root, destinations.relative_parts(path, config))
        except Refused as refusal:
            shown.append({**entry, "verbatim": False, "found_line": None, "problem": str(refusal)})
            continue
        if raw is None:
            shown.append({**entry, "verbatim": False, "found_line": None, "problem": "the source does not exist"})
            continue
        if not isinstance(quote, str):
            shown.append({**entry, "verbatim": None, "found_line": None, "problem": "no quote: nothing was checked"})
            continue
        found = find_quote(normalised_text(raw.decode("utf-8", errors="replace")), quote)
        problem = None
        if found is None:
            problem = "not verbatim in the source now"
        elif len(" ".join(quote.split())) < MIN_QUOTE_CHARS:
            problem = f"shorter than {MIN_QUOTE_CHARS} characters: it checks almost nothing"
        elif entry["line"] is not None and entry["line"] != found:
            problem = f"starts on line {found}, not {entry['line']}"
        shown.append({**entry, "verbatim": found is not None, "found_line": found, "problem": problem})
    return shown


def similar_notes(
    home: Home,
    vault: str | os.PathLike[str],
    title: str,
    config: VaultConfig | None = None,
    pending: Sequence[Mapping[str, str]] | None = None,
    exclude: str | None = None,
) -> list[dict[str, str]]:
    """Live catalog documents, agent notes and pending learns whose title is similar to ``title`` (``exclude``:
    the note's own path, for a rewrite of it). Agent notes are read from the vault: held ones are not in the
    catalog."""
    config = config or VaultConfig()
    candidates: dict[str, dict[str, str]] = {}
    for entry in [*_catalog_titles(home), *_agent_note_titles(vault, config), *(pending or [])]:
        candidates.setdefault(entry["path"], dict(entry))
    found = [
        entry for path, entry in candidates.items()
        if path != exclude and similar_titles(title, entry["title"])
    ]
    return sorted(found, key=lambda entry: entry["path"])


def check_title_free(
    home: Home, root: Path, title: str, config: VaultConfig, now: datetime, exclude: str | None = None
) -> list[dict[str, str]]:
    """The pending learns (path, title); LearnRefused("duplicate-title") when a similar title exists."""
    pending = pending_learns(home, config, now)
    existing = similar_notes(home, root, title, config, pending, exclude)
    if existing:
        listed = "; ".join(f"{entry['path']} ({entry['title']!r})" for entry in existing)
        raise LearnRefused(
            "duplicate-title",
            f"a note with a similar title already exists: {listed}. Read it and extend it with an edit, or choose "
            "a title that says how this note differs.",
            existing,
        )
    return pending


def check_agent_note(
    home: Home,
    root: Path,
    relative_path: str,
    prior: bytes | None,
    new: bytes,
    agent: str,
    config: VaultConfig | None = None,
    now: datetime | None = None,
) -> None:
    """Every check a note in the agent folder passes, on the exact bytes about to be proposed; LearnRefused."""
    config = config or VaultConfig()
    try:
        document = parse_document(new, relative_path, config)
    except DocumentRejected as rejection:
        raise LearnRefused("body", f"{relative_path} cannot be read as a note: {rejection.message}") from None
    front, _ = split_document(new.decode("utf-8"))
    check_author(relative_path, prior, new, agent)
    if prior is None and not any(key in front for key in AUTHOR_KEYS):
        raise LearnRefused("author", f"{relative_path} names no author; write author: {agent_author(agent)}.")
    check_title_free(home, root, document.title, config, now or datetime.now(UTC), exclude=relative_path)
    entries = source_entries(front.get("sources"))
    require_a_quote([verify_source(root, home, entry, index, config) for index, entry in enumerate(entries, 1)])


def check_author(relative_path: str, prior: bytes | None, new: bytes, agent: str) -> None:
    """Refuse an agent write that sets or changes an author field to anyone but the agent itself, anywhere in the
    vault: the build would record it as that person's authorship. A person's name goes under ``claimed_author``."""
    front, prior_front = _front(new), _front(prior)
    expected = agent_author(agent)
    for key in AUTHOR_KEYS:
        if key in front and front.get(key) != prior_front.get(key) and front.get(key) != expected:
            raise LearnRefused(
                "author",
                f"{relative_path} would say {key}: {one_line(front.get(key), 60)!r}, but an agent writes it; an "
                f"agent's note carries the agent as author ({key}: {expected}). Put a person's name under "
                "claimed_author.",
            )


def _front(raw: bytes | None) -> dict[str, Any]:
    if raw is None:
        return {}
    try:
        return split_document(raw.decode("utf-8"))[0]
    except (UnicodeDecodeError, ValueError):
        return {}


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


def pending_learns(home: Home, config: VaultConfig, now: datetime) -> list[dict[str, str]]:
    """Agent-folder notes proposed but not yet written (a confirmation still open at ``now``): path and title."""
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


__all__ = [
    "MIN_QUOTE_CHARS",
    "LearnRefused",
    "Source",
    "agent_author",
    "check_agent_note",
    "check_author",
    "check_title_free",
    "find_quote",
    "pending_learns",
    "quote_status",
    "require_a_quote",
    "similar_notes",
    "source_entries",
    "verify_source",
]
