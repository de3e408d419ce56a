"""``learn``: an agent records what it learned as a note in the agent folder, verified before anything is written.

What an agent learned is only worth keeping if a person can check it, so the note is refused before any write
unless it passes ``note_checks``: no live document, agent note or pending learn already has a similar title (a
second note on the same thing splits the graph; the refusal names the existing ones so the agent can extend
them instead); every source is a readable note inside the vault; at least one source is quoted, with at least
``note_checks.MIN_QUOTE_CHARS`` characters; and every quote appears verbatim in its source, with only runs of
whitespace treated as equal so a quote across a line wrap still matches. The note records each source with the
line its quote starts on, so a reviewer can open the exact place. ``writes`` runs the same checks again on the
rendered bytes, as it does for any write under the agent folder. The write itself goes through
``writes.propose_write``, so it is a bound confirmation row like every agent write; even when the permission
mode writes it at once, the note stays out of the graph until a person approves it (``approvals``).
"""

from __future__ import annotations

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

from engramrag.agent import destinations, titles
from engramrag.agent.note_checks import (
    LearnRefused,
    Source,
    agent_author,
    check_title_free,
    find_quote,
    require_a_quote,
    similar_notes,
    source_entries,
    verify_source,
)
from engramrag.agent.writes import Executed, Pending, Policy, propose_write
from engramrag.store import Home
from engramrag.vault.config import VaultConfig

SIMILAR_RATIO = titles.SIMILAR_RATIO
MAX_TITLE_CHARS = 200
MAX_SLUG_CHARS = 60
CHECKS = ("title", "body", "agent", "duplicate-title", "source", "quote")
_WORD = re.compile(r"[^\W_]+")


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
    pending = check_title_free(home, root, title, config, moment)
    entries = source_entries(sources)
    checked = tuple(verify_source(root, home, entry, index, config) for index, entry in enumerate(entries, 1))
    require_a_quote(checked)
    content = render_note(title, body, agent_author(agent), moment, checked)
    if len(content.encode("utf-8")) > config.max_file_bytes:
        raise LearnRefused(
            "body", f"the note would be over the vault's {config.max_file_bytes:,}-byte limit; split it up."
        )
    path = _free_path(root, config, slug(title, body), {entry["path"] for entry in pending})
    outcome = propose_write(home, root, path, content, agent.strip(), policy, now=moment)
    return LearnResult(path, outcome, CHECKS, checked)


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


def _checked_title(title: Any) -> str:
    if not isinstance(title, str) or not title.strip():
        raise LearnRefused("title", "the note needs a title: one line saying what was learned.")
    title = title.strip()
    if "\n" in title or "\r" in title:
        raise LearnRefused("title", "the title must be one line; put the rest in the body.")
    if len(title) > MAX_TITLE_CHARS:
        raise LearnRefused("title", f"the title is over {MAX_TITLE_CHARS} characters; shorten it.")
    return title


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
    "MAX_TITLE_CHARS",
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
