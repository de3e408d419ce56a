"""Parsing one Markdown file: front matter, headings, links, tags and chunks, all with exact spans."""

from __future__ import annotations

import re
from typing import Any

import yaml

from engramrag.vault.chunking import chunk_body
from engramrag.vault.config import VaultConfig
from engramrag.vault.document import Document, Heading, Link, Tag, span_of
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.ids import bucket_of, document_id, sha256_hex

FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
WIKI_LINK = re.compile(r"(?<!!)\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|([^\[\]\n]+))?\]\]")
MARKDOWN_LINK = re.compile(r"(?<!!)\[([^\[\]\n]+)\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_TAG = re.compile(r"(?:(?<=\s)|^)#([\w][\w/-]*)", re.MULTILINE)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 10x faster
AUTHOR_KEYS = ("author", "authors", "작성자")
AGENT_AUTHOR = re.compile(r"^(agent|bot|ai)[:/]", re.IGNORECASE)
MAX_STRAY_NULS = 16  # more NUL bytes than this in otherwise valid UTF-8 is a binary format, not damage


def _binary_message(raw: bytes, relative_path: str) -> str:
    """What to tell about a file with NUL bytes: a text file with a few of them (an editor's or a sync tool's
    damage) is told where they are and how to remove them; anything else is told it is not a note."""
    count = raw.count(b"\x00")
    try:
        raw.replace(b"\x00", b"").decode("utf-8")
    except UnicodeDecodeError:
        text = False
    else:
        text = count <= MAX_STRAY_NULS
    if not text:
        return (f"{relative_path}: looks binary (NUL bytes and no text around them), not a Markdown note; keep only "
                "notes in the vault (PDF, Word and HTML files go in the sources folder, which converts them).")
    first = raw.index(b"\x00")
    line = raw.count(b"\n", 0, first) + 1
    return (f"{relative_path}: a text file with {count} NUL byte(s), the first on line {line} (byte {first}), which no "
            f"note has (an editor or sync tool damaged it); remove them, e.g. `tr -d '\\000' < {relative_path} > "
            "fixed.md`, and the next build reads it.")


def parse_document(raw: bytes, relative_path: str, config: VaultConfig) -> Document:
    """Parse a file's bytes into a Document, or raise DocumentRejected saying why and what to do."""
    if len(raw) > config.max_file_bytes:
        raise DocumentRejected(
            "too_large",
            f"{relative_path}: {len(raw):,} bytes is over the {config.max_file_bytes:,}-byte limit; "
            "split the note or raise ENGRAM_MAX_FILE_BYTES.",
        )
    if b"\x00" in raw[:8192]:
        raise DocumentRejected("binary", _binary_message(raw, relative_path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DocumentRejected(
            "not_utf8",
            f"{relative_path}: not valid UTF-8 at byte {error.start}; re-save the file as UTF-8.",
        ) from None
    text = normalised_text(text)
    if not text.strip():
        raise DocumentRejected(
            "empty",
            f"{relative_path}: empty ({'0 bytes' if not raw else 'only whitespace'}), nothing to read; write the note "
            "and the next build reads it, or delete the file (an earlier version stays in the stores until then).",
        )
    front_matter, body_start = _front_matter(text, relative_path)
    masked = mask_code(text, body_start)

    headings = tuple(_headings(text, masked, body_start))
    title = _title(front_matter, headings, relative_path)
    author = _author(front_matter)
    in_agent_folder = relative_path.split("/", 1)[0] == config.agent_folder
    if in_agent_folder and author and not AGENT_AUTHOR.match(author):
        front_matter, author = _as_claimed_author(front_matter), None
    agent_authored = in_agent_folder or bool(author and AGENT_AUTHOR.match(author))
    document = Document(
        path=relative_path,
        doc_id=document_id(relative_path),
        bucket=bucket_of(relative_path, config.bucket_count),
        text=text,
        body_hash=sha256_hex(text),
        body_start=body_start,
        front_matter=front_matter,
        title=title,
        author=author,
        agent_authored=agent_authored,
        size_bytes=len(raw),
        headings=headings,
    )
    links = tuple(_links(document, masked))
    tags = tuple(_tags(document, masked))
    chunks = tuple(chunk_body(document, config.chunk_chars))
    return Document(**{**document.__dict__, "links": links, "tags": tags, "chunks": chunks})


def normalised_text(text: str) -> str:
    """The text as documents store and hash it: no byte-order mark, "\\n" line ends."""
    return text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def content_hash(raw: bytes) -> str:
    """The body hash a file would get from parse_document, without parsing it ("" when not UTF-8)."""
    try:
        return sha256_hex(normalised_text(raw.decode("utf-8")))
    except UnicodeDecodeError:
        return ""


def _front_matter(text: str, relative_path: str) -> tuple[dict[str, Any], int]:
    match = FRONT_MATTER.match(text)
    if not match:
        if text.startswith("---\n"):
            raise DocumentRejected(
                "broken_front_matter",
                f"{relative_path}: front matter opened with '---' on line 1 is never closed; add a closing '---' line.",
            )
        return {}, 0
    try:
        loaded = yaml.load(match.group(1) or "", Loader=SAFE_LOADER) or {}
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" near line {where.line + 2}" if where is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise DocumentRejected(
            "broken_front_matter",
            f"{relative_path}: front matter is not valid YAML{line} ({problem}); fix the YAML between the '---' lines.",
        ) from None
    if not isinstance(loaded, dict):
        raise DocumentRejected(
            "broken_front_matter",
            f"{relative_path}: front matter must be a YAML mapping (key: value lines), not {type(loaded).__name__}.",
        )
    return {str(key): _plain(value) for key, value in loaded.items()}, match.end()


def _plain(value: Any) -> Any:
    """YAML dates and other scalars become strings so front matter is JSON- and RDF-friendly."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def mask_code(text: str, body_start: int) -> str:
    """The text with front matter and fenced code blocks blanked out (same length, newlines kept), so that
    headings, links and tags inside code are not read as structure."""
    chars = list(text)
    for index in range(body_start):
        if chars[index] != "\n":
            chars[index] = " "
    for match in FENCE.finditer(text, body_start):
        for index in range(match.start(), match.end()):
            if chars[index] != "\n":
                chars[index] = " "
    return "".join(chars)


_mask_code = mask_code  # the former private name, kept for callers that used it


def _headings(text: str, masked: str, body_start: int):
    for match in HEADING.finditer(masked, body_start):
        yield Heading(len(match.group(1)), match.group(2).strip(), span_of(text, match.start(2), match.end(2)))


def _title(front_matter: dict[str, Any], headings: tuple[Heading, ...], relative_path: str) -> str:
    title = front_matter.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    for heading in headings:
        if heading.level == 1:
            return heading.text
    return relative_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _as_claimed_author(front_matter: dict[str, Any]) -> dict[str, Any]:
    """The front matter of an agent's note with its person author moved to ``claimed_author``: an agent that
    writes ``author: Alice`` claims Alice wrote it, which the graph records as a claim, not as her authorship."""
    claimed = [front_matter[key] for key in AUTHOR_KEYS if key in front_matter]
    kept = {key: value for key, value in front_matter.items() if key not in AUTHOR_KEYS}
    names = [name for value in claimed for name in (value if isinstance(value, list) else [value])]
    existing = kept.get("claimed_author")
    names = ([*existing] if isinstance(existing, list) else [existing] if existing else []) + names
    kept["claimed_author"] = names[0] if len(names) == 1 else names
    return kept


def _author(front_matter: dict[str, Any]) -> str | None:
    for key in AUTHOR_KEYS:
        value = front_matter.get(key)
        if isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _links(document: Document, masked: str):
    for match in WIKI_LINK.finditer(masked, document.body_start):
        alias = match.group(2).strip() if match.group(2) else None
        yield Link(match.group(1).strip(), alias, "wiki", document.span(match.start(), match.end()))
    for match in MARKDOWN_LINK.finditer(masked, document.body_start):
        target = match.group(2)
        if target.startswith("#"):
            continue
        yield Link(target, match.group(1).strip(), "markdown", document.span(match.start(), match.end()))


def _tags(document: Document, masked: str):
    listed = document.front_matter.get("tags") or []
    if isinstance(listed, str):
        listed = [part for part in re.split(r"[,\s]+", listed) if part]
    for name in listed:
        yield Tag(str(name).lstrip("#"), None)
    for match in INLINE_TAG.finditer(masked, document.body_start):
        if match.group(1).isdigit():
            continue
        line_start = masked.rfind("\n", 0, match.start()) + 1
        if masked.startswith("#", line_start) and HEADING.match(masked, line_start):
            continue  # a heading, not a tag
        yield Tag(match.group(1), document.span(match.start(), match.end()))
