"""The agent's ``read`` tool: some lines of one vault note, with what the graph says about those lines.

An agent that found a document through search wants the passage and the machine's interpretation of it side
by side, so it can check a statement against the words it came from. The text is always the file as it is
now, read through the same no-symlink path resolution as agent writes (a read must not be a way out of the
vault either); the statements and entities come from the catalog, which describes the version last
extracted. When the two differ the result says ``stale`` instead of pretending they match: line numbers of a
changed file may no longer point at the statement's words, and a note that was never built (a new file, a
learned note waiting for approval) has no statements at all.

Originals in the sources folder (``sources/report.pdf``) are read as the Markdown the lifecycle converts them
to, because that text is what the statements' line numbers count: the catalog's copy when the catalog was made
from the original's current bytes, otherwise the current original converted now (and then ``stale``).
Freshness of an original is judged by its own bytes, as sync judges it, so a converter upgrade alone does not
make every source look changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import duckdb

from engramrag.agent import destinations
from engramrag.catalog.connection import catalog_reader
from engramrag.extract.textutil import normalise_label
from engramrag.ontology.vocab import document_iri, entity_iri, statement_iri
from engramrag.store import Home
from engramrag.vault import converters
from engramrag.vault.config import VaultConfig
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.markdown import content_hash, normalised_text, parse_document

DEFAULT_MAX_CHARS = 20_000
DEFAULT_MAX_STATEMENTS = 500
MIN_LABEL_CHARS = 2  # shorter labels match inside too many words to count as a mention


class UnreadableNote(ValueError):
    """The note exists nowhere, is not text, an original cannot be converted, or the requested lines are not in
    it; the message says which (for a failed conversion: the converter's reason and what to do)."""


def read_document(
    home: Home,
    vault: str | os.PathLike[str],
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    *,
    max_statements: int = DEFAULT_MAX_STATEMENTS,
    config: VaultConfig | None = None,
) -> dict[str, Any]:
    """Lines ``start_line..end_line`` (1-based, inclusive; missing ends mean the file's first or last line) of
    the note at vault-relative ``path``, and the catalog's statements and entities on those lines. A convertible
    original in the sources folder (``sources/report.pdf``) is read as its converted Markdown, the text those
    statements' line numbers count; ``converted_from`` (the format, e.g. "PDF") and ``original_path`` say so
    and are None for plain notes.

    Raises ``Refused`` for a path that could leave the vault (``..``, absolute, a symlink on the way) or is
    neither a Markdown note nor a convertible original, and ``UnreadableNote`` for a missing or non-UTF-8 file,
    an original that cannot be converted, or a range past its end.
    Whole lines are returned until ``max_chars`` would be exceeded (a longer first line is cut and marked so);
    ``truncated`` and ``next_line`` then say where to continue. Statements are those whose lines overlap the
    lines actually returned."""
    if max_chars < 1 or max_statements < 0:
        raise ValueError("max_chars must be at least 1 and max_statements at least 0")
    config = config or VaultConfig()
    parts = destinations.readable_parts(path, config)
    relative = "/".join(parts)
    raw = destinations.read_bytes(Path(vault).resolve(), parts)
    if raw is None:
        raise UnreadableNote(f"{relative} does not exist in the vault; paths are relative to the vault's folder.")
    form = None
    if converters.is_convertible(relative, config):
        form = converters.FORMATS[PurePosixPath(relative).suffix.lower()]

    with catalog_reader(home) as catalog:
        document, held = _document_row(catalog, relative, converted=form is not None)
        if form is None:
            source = _note_source(raw, relative, config, document)
        else:
            source = _converted_source(raw, relative, config, document, form.label)
        all_lines = split_lines(source.text)
        first, last = _requested_range(relative, len(all_lines), start_line, end_line)
        shown, truncated = _fit(all_lines, first, last, max_chars)
        shown_last = shown[-1]["line"] if shown else first - 1
        found = _catalog_view(catalog, document, held, relative, first, shown_last, max_statements)
    state = _freshness(relative, found, source)
    entities = _entities_in_range(found, shown, relative)
    return {
        "path": relative,
        "doc_id": document["doc_id"] if document else None,
        "document_iri": str(document_iri(relative)),
        "title": source.title,
        "converted_from": source.converted_from,
        "original_path": relative if source.converted_from else None,
        "total_lines": len(all_lines),
        "start_line": first,
        "end_line": shown_last,
        "lines": shown,
        "truncated": truncated,
        "next_line": shown_last + 1 if truncated else None,
        "stale": state["stale"],
        "in_catalog": document is not None,
        "message": state["message"],
        "held_back": state.get("held_back"),
        "statements": found["statements"],
        "statements_truncated": found["statements_truncated"],
        "unlocated_statements": found["unlocated"],
        "entities": entities,
    }


@dataclass(frozen=True)
class _Source:
    """The text shown for a path and whether the catalog's statements were extracted from exactly it.

    ``current`` is False when the catalog has a row for the path that describes other content than what is
    shown (the file changed since, or its newest content was synced but never extracted)."""

    text: str
    title: str
    current: bool
    converted_from: str | None = None
    converted_now: bool = False


def _note_source(raw: bytes, relative: str, config: VaultConfig, document: dict[str, Any] | None) -> _Source:
    try:
        text = normalised_text(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        message = f"{relative} is not valid UTF-8 (byte {error.start}); it cannot be read as a note."
        raise UnreadableNote(message) from None
    current = document is not None and document["extracted_hash"] == content_hash(raw)
    return _Source(text, _title(raw, relative, config, document), current)


def _converted_source(
    raw: bytes, relative: str, config: VaultConfig, document: dict[str, Any] | None, label: str
) -> _Source:
    """The converted Markdown of an original: the catalog's text when the catalog was converted from these very
    bytes (its statements' line numbers count that text), else the original converted now."""
    if document is not None and document["source_sha256"] == converters.source_hash(raw):
        current = document["extracted_hash"] is not None and document["extracted_hash"] == document["body_hash"]
        return _Source(document["text"], document["title"], current, label)
    try:
        converted = converters.convert_document(raw, relative, config)
    except DocumentRejected as rejection:
        raise UnreadableNote(rejection.message) from None
    return _Source(converted.text, converted.title, False, label, converted_now=True)


def split_lines(text: str) -> list[str]:
    """The file's lines as the extractor numbers them: split on "\\n" only, a final newline ends the last line."""
    if not text:
        return []
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def _requested_range(relative: str, total: int, start_line: int | None, end_line: int | None) -> tuple[int, int]:
    for name, value in (("start_line", start_line), ("end_line", end_line)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise UnreadableNote(f"{name} must be a whole line number, not {value!r}.")
    first = max(1, start_line if start_line is not None else 1)
    last = min(total, end_line if end_line is not None else total)
    if start_line is not None and first > total:
        raise UnreadableNote(
            f"{relative} has {total} line{'s' if total != 1 else ''}; line {start_line} is past its end."
        )
    if end_line is not None and end_line < first:
        raise UnreadableNote(f"end_line {end_line} comes before start_line {first}; give a range like 10-40.")
    return first, last


def _fit(lines: list[str], first: int, last: int, max_chars: int) -> tuple[list[dict[str, Any]], bool]:
    shown: list[dict[str, Any]] = []
    used = 0
    for number in range(first, last + 1):
        line = lines[number - 1]
        if used + len(line) > max_chars:
            if not shown:
                shown.append({"line": number, "text": line[:max_chars], "cut": True})
            return shown, True
        shown.append({"line": number, "text": line})
        used += len(line)
    return shown, False


def _document_row(
    catalog: duckdb.DuckDBPyConnection | None, relative: str, converted: bool
) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
    """The path's live catalog row (with the converted text and the original's recorded hash for a converted
    original), or None and why the last build held the file back, if it did."""
    if catalog is None:
        return None, None
    columns = ["doc_id", "title", "body_hash", "extracted_hash", "extractor"]
    if converted:
        columns += ["text", "json_extract_string(front_matter, '$.source_sha256')"]
    row = catalog.execute(
        f"SELECT {', '.join(columns)} FROM documents WHERE path = ? AND NOT gone", [relative]
    ).fetchone()
    if row is None:
        held = catalog.execute("SELECT reason, message FROM rejected_documents WHERE path = ?", [relative]).fetchone()
        return None, held
    names = ("doc_id", "title", "body_hash", "extracted_hash", "extractor", "text", "source_sha256")
    return dict(zip(names[: len(row)], row, strict=True)), None


def _catalog_view(
    catalog: duckdb.DuckDBPyConnection | None,
    document: dict[str, Any] | None,
    held: tuple[str, str] | None,
    relative: str,
    first: int,
    last: int,
    max_statements: int,
) -> dict[str, Any]:
    """The document's statements overlapping ``first..last`` and all its entities."""
    empty = {"catalog": catalog is not None, "document": None, "statements": [], "statements_truncated": False,
             "unlocated": 0, "entities": {}, "held": held}
    if catalog is None or document is None:
        return empty
    doc_id = document["doc_id"]
    entities = {
        key: {"key": key, "label": label, "kind": kind, "aliases": list(aliases or []), "mentions": mentions,
              "first_line": first_line}
        for key, label, kind, aliases, mentions, first_line in catalog.execute(
            "SELECT entity_key, label, kind, aliases, mentions, first_line FROM entities WHERE doc_id = ?", [doc_id]
        ).fetchall()
    }
    rows = catalog.execute(
        """SELECT statement_id, subject, predicate, label, object, object_is_entity, role, line_start, line_end,
                  char_start, char_end, extractor
           FROM statements
           WHERE doc_id = ? AND line_start <= ? AND line_end >= ?
           ORDER BY line_start, char_start, statement_id
           LIMIT ?""",
        [doc_id, last, first, max_statements + 1],
    ).fetchall()
    unlocated = catalog.execute(
        "SELECT count(*) FROM statements WHERE doc_id = ? AND line_start IS NULL", [doc_id]
    ).fetchone()[0]
    statements = [_statement(relative, doc_id, row, entities) for row in rows[:max_statements]]
    return {"catalog": True, "document": document, "statements": statements,
            "statements_truncated": len(rows) > max_statements, "unlocated": unlocated, "entities": entities,
            "held": None}


def _statement(relative: str, doc_id: str, row: tuple, entities: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (statement_id, subject, predicate, label, obj, object_is_entity, role, line_start, line_end, char_start,
     char_end, extractor) = row
    return {
        "statement_id": statement_id,
        "iri": str(statement_iri(relative, statement_id)),
        "doc_id": doc_id,
        "role": role,
        "subject": _entity_ref(relative, subject, entities),
        "predicate": predicate,
        "label": label,
        "object": _entity_ref(relative, obj, entities) if object_is_entity else {"value": obj},
        "object_is_entity": bool(object_is_entity),
        "line_start": line_start,
        "line_end": line_end,
        "char_start": char_start,
        "char_end": char_end,
        "extractor": extractor,
    }


def _entity_ref(relative: str, key: str, entities: dict[str, dict[str, Any]]) -> dict[str, Any]:
    entity = entities.get(key)
    return {
        "key": key,
        "label": entity["label"] if entity else None,
        "kind": entity["kind"] if entity else None,
        "iri": str(entity_iri(relative, key)),
    }


def _entities_in_range(found: dict[str, Any], shown: list[dict[str, Any]], relative: str) -> list[dict[str, Any]]:
    """Entities of the document seen on the returned lines. The catalog keeps no per-mention spans, so an
    entity counts when a statement on these lines names it, its first mention is here, or its label or an
    alias appears in these lines' text; ``seen_as`` says which."""
    if not shown:
        return []
    first, last = shown[0]["line"], shown[-1]["line"]
    haystack = "\n".join(line["text"] for line in shown).casefold()
    reasons: dict[str, set[str]] = {}
    for statement in found["statements"]:
        for side in (statement["subject"], statement["object"]):
            if "key" in side:
                reasons.setdefault(side["key"], set()).add("statement")
    for key, entity in found["entities"].items():
        if entity["first_line"] is not None and first <= entity["first_line"] <= last:
            reasons.setdefault(key, set()).add("first_mention")
        names = [entity["label"], *entity["aliases"]]
        if any(len(name) >= MIN_LABEL_CHARS and name.casefold() in haystack for name in names):
            reasons.setdefault(key, set()).add("text")
    listed = []
    for key, why in reasons.items():
        entity = found["entities"].get(key)
        if entity is None:
            continue
        listed.append(
            {
                "key": key,
                "label": entity["label"],
                "kind": entity["kind"],
                "stable_key": normalise_label(entity["label"]),
                "iri": str(entity_iri(relative, key)),
                "aliases": entity["aliases"],
                "first_line": entity["first_line"],
                "mentions_in_document": entity["mentions"],
                "seen_as": sorted(why),
            }
        )
    listed.sort(key=lambda item: (item["first_line"] if item["first_line"] is not None else 1 << 30, item["label"]))
    return listed


def _freshness(relative: str, found: dict[str, Any], source: _Source) -> dict[str, Any]:
    """Whether the catalog's statements describe the text shown, and if not, why in words."""
    document = found["document"]
    text_is = "the text is current"
    if source.converted_from and source.converted_now:
        text_is = f"the text is the current {source.converted_from} original converted to Markdown just now"
    elif source.converted_from:
        text_is = f"the text is the catalog's Markdown conversion of the current {source.converted_from} original"
    if not found["catalog"]:
        return {"stale": True, "message": f"nothing has been built in this home yet, so the graph holds nothing "
                                          f"about {relative} ({text_is}); run `engram build` to extract it."}
    if document is None:
        what = "a new original" if source.converted_from else "a new note, or a learned note waiting for approval"
        message = (f"{relative} is not in the catalog yet ({what}): {text_is}, but the graph holds no statements "
                   "about it until a build takes it in.")
        if found["held"] is not None:
            reason, detail = found["held"]
            message = (f"{relative} is not in the graph: the last build held it back ({reason}: {detail}). "
                       f"{text_is[0].upper()}{text_is[1:]}; there are no statements about it.")
        return {"stale": True, "message": message, "held_back": found["held"][0] if found["held"] else None}
    if document["extracted_hash"] is None:
        return {"stale": True, "message": f"{relative} was read by a build but never extracted (extraction failed "
                                          f"or is pending): {text_is}, the graph holds no statements about it yet."}
    if not source.current:
        return {"stale": True, "message": f"{relative} changed since it was last extracted: {text_is}, but the "
                                          "statements and entities are what the graph holds for the earlier "
                                          "version, and their line numbers may not match these lines. "
                                          "Run `engram build` to refresh them."}
    return {"stale": False, "message": None}


def _title(raw: bytes, relative: str, config: VaultConfig, document: dict[str, Any] | None) -> str:
    try:
        return parse_document(raw, relative, config).title
    except DocumentRejected:
        if document and document["title"]:
            return document["title"]
        return relative.rsplit("/", 1)[-1].rsplit(".", 1)[0]


__all__ = ["DEFAULT_MAX_CHARS", "DEFAULT_MAX_STATEMENTS", "UnreadableNote", "read_document", "split_lines"]
