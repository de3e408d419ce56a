"""Decision records in one version of a file, and what ties them to each other and to the files they govern.

Records are read by the vault's own parsers (``engramrag.extract.decisions``), so a DECISIONS.md section or an
ADR means the same thing here as in the catalog, and a record's id is the catalog's ``decision_key`` (path and
normalised title). A renamed decision file keeps the ids it was first read under (``origin``), so the versions
of one decision stay one decision across ``git mv``.

Also here, because they read records: same-day conflicts (two live records of one date about the same thing,
neither naming the other), and the files a record names (``PathIndex`` resolves a written name to a path of the
tree at that commit). References are resolved to record ids by the vault's own parser,
``engramrag.revise.references.ReferenceIndex``.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from engramrag.extract.builder import ExtractionBuilder
from engramrag.extract.decision_fields import FIELD_LINE, MARKDOWN_LINK
from engramrag.extract.decisions import (
    ADR_FOLDERS,
    ADR_NAME,
    FILENAME_DATE,
    extract_decisions,
    is_adr,
    is_decision_log,
    log_sections,
)
from engramrag.extract.structure import clean_heading
from engramrag.extract.textutil import normalise_label
from engramrag.revise.supersession import (
    KOREAN_PARTICLE,
    TITLE_STOPWORDS,
    WORD,
    decision_key,
)
from engramrag.vault.config import VaultConfig
from engramrag.vault.document import Document
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.markdown import mask_code, parse_document

MARKDOWN_SUFFIXES = (".md", ".markdown")
REFERENCE_KINDS = ("supersedes", "superseded_by", "partially_supersedes", "partially_superseded_by")
MADR_HEADINGS = frozenset({"context and problem statement", "decision outcome", "considered options",
                           "decision drivers", "pros and cons of the options"})  # fmt: skip
SETTLED_STATUSES = frozenset({"rejected", "superseded", "deprecated", "obsolete"})
BACKTICK = re.compile(r"`([^`\n]+)`")
PATH_LIKE = re.compile(r"(?<![\w@/.:-])/?(?:\.{1,2}/)*[\w.-]+(?:/[\w.-]+)*/?")
EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")
CONFIG = VaultConfig()


@dataclass(frozen=True)
class Reference:
    kind: str  # "supersedes" | "superseded_by", or either with "partially_" before it
    reference: str  # as written: "0004-move-the-catalog.md", "ADR-0004", "2024-03-05: Title"
    line: int


@dataclass(frozen=True)
class Record:
    """One decision record as it reads in one version of its file; lines are 1-based and inclusive."""

    decision_id: str
    path: str
    title: str
    decided_on: str | None
    status: str | None
    line_start: int
    line_end: int
    text: str  # the exact source lines line_start..line_end
    format: str  # "decisions-log" | "nygard" | "madr" | "dated-file"
    references: tuple[Reference, ...] = ()

    @property
    def text_hash(self) -> str:
        return hashlib.sha1(self.text.encode("utf-8")).hexdigest()

    @property
    def live(self) -> bool:
        return is_live(self.status)


def is_live(status: str | None) -> bool:
    """Still in force as far as its own status says (proposed counts: it has not been settled)."""
    return (status or "") not in SETTLED_STATUSES


def is_decision_candidate(path: str) -> bool:
    """Files worth parsing for decision records: DECISIONS.md anywhere, Markdown in an ADR folder, and
    ADR-like file names. Front matter alone (``type: decision`` on an arbitrary note) is not looked for: it
    would mean reading every Markdown version in the history."""
    if is_decision_log(path):
        return True
    name = path.rsplit("/", 1)[-1]
    if not name.casefold().endswith(MARKDOWN_SUFFIXES):
        return False
    folders = [part.casefold() for part in path.split("/")[:-1]]
    return (
        any(folder in ADR_FOLDERS for folder in folders) or "docs/adr" in path.casefold() or bool(ADR_NAME.match(name))
    )


def read_records(
    path: str, raw: bytes, origin: str | None = None, sections: dict[str, list[Record]] | None = None
) -> list[Record]:
    """The decision records of one version of ``path`` (none when the file is not a decision record or cannot
    be read as UTF-8 Markdown). Ids are made from ``origin`` (the path the file was first read under).

    ``sections`` caches the records of DECISIONS.md sections by their text across versions: a log of hundreds
    of entries changes one entry at a time, and parsing only the sections not seen before keeps each version
    cheap. Sections are cut where the vault's parser cuts them, so the records are the same either way."""
    try:
        document = parse_document(raw, path, CONFIG)
    except DocumentRejected:
        return []
    if is_decision_log(path) and sections is not None:
        found = _log_records(document, sections)
    elif is_decision_log(path) or is_adr(document):
        found = _records(document)
    else:
        return []
    taken: set[str] = set()
    return [
        replace(record, decision_id=_unique_id(decision_key(origin or path, record.title), record.decided_on, taken))
        for record in found
    ]


def _records(document: Document) -> list[Record]:
    """The records of a parsed document, ids left empty (they depend on the file's other records)."""
    builder = ExtractionBuilder(document)
    extract_decisions(document, builder, mask_code(document.text, document.body_start))
    extraction = builder.build("gitgraph", "1")
    lines = document.text.split("\n")
    references: dict[str, list[Reference]] = defaultdict(list)
    for statement in extraction.statements:
        if statement.predicate in REFERENCE_KINDS:
            line = statement.span.line_start if statement.span is not None else 0
            references[statement.subject].append(Reference(statement.predicate, statement.obj, line))
    kind = record_format(document.path, document.text, document.front_matter, [h.text for h in document.headings])
    records = []
    for decision in extraction.decisions:
        start, end = decision.span.line_start, decision.span.line_end
        while start < end and not lines[start - 1].strip():
            start += 1
        refs = tuple(Reference(r.kind, r.reference, r.line or start) for r in references.get(decision.entity_key, ()))
        text = "\n".join(lines[start - 1 : end])
        records.append(
            Record("", document.path, decision.title, decision.date, decision.status, start, end, text, kind, refs)
        )
    return records


def _log_records(document: Document, sections: dict[str, list[Record]]) -> list[Record]:
    masked = mask_code(document.text, document.body_start)
    found: list[Record] = []
    line, position = 1, 0
    for _, start, end in log_sections(document, masked):
        line += document.text.count("\n", position, start)
        position = start
        section = document.text[start:end]
        if section not in sections:
            sections[section] = _records(parse_document(section.encode("utf-8"), document.path, CONFIG))
        found.extend(_shifted(record, line - 1) for record in sections[section])
    return found


def _shifted(record: Record, lines: int) -> Record:
    references = tuple(replace(reference, line=reference.line + lines) for reference in record.references)
    return replace(
        record, line_start=record.line_start + lines, line_end=record.line_end + lines, references=references
    )


def record_format(path: str, text: str, front_matter: dict, headings: Iterable[str]) -> str:
    """How the file writes its records: a decisions log, a date-named file, MADR (``- Status:`` list lines,
    its section names, or front matter status) or Nygard/adr-tools (a ``## Status`` section)."""
    if is_decision_log(path):
        return "decisions-log"
    if FILENAME_DATE.match(path.rsplit("/", 1)[-1]):
        return "dated-file"
    listed = any(m.group(0).lstrip().startswith(("-", "*", "+")) for m in FIELD_LINE.finditer(text))
    named = {normalise_label(clean_heading(h)) for h in headings}
    if listed or "status" in front_matter or named & MADR_HEADINGS:
        return "madr"
    return "nygard"


def _unique_id(base: str, date: str | None, taken: set[str]) -> str:
    """The record's id, made distinct within one file version: the same title twice (on one day, a conflict
    that must stay visible) gets its date, then a counter."""
    candidate = base if base not in taken else f"{base}@{date or ''}"
    repeat = 1
    while candidate in taken:
        repeat += 1
        candidate = f"{base}@{date or ''}~{repeat}"
    taken.add(candidate)
    return candidate


def title_words(title: str) -> frozenset[str]:
    """The content words of a title: what was decided about, not how ("use", "adopt", "move")."""
    words = (KOREAN_PARTICLE.sub("", word) for word in WORD.findall(normalise_label(title)))
    return frozenset(word for word in words if word and word not in TITLE_STOPWORDS)


# --- supersession references ----------------------------------------------------------------------------------


# --- same-day conflicts -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dated:
    """What a conflict check needs of a record."""

    decision_id: str
    title: str
    decided_on: str | None
    live: bool
    names: frozenset[str] = frozenset()  # the ids it names (ReferenceIndex.related)


def same_day_conflicts(records: Iterable[Dated]) -> dict[str, set[str]]:
    """id -> the ids it conflicts with: live records of the same date whose titles share a content word,
    neither naming the other (as superseded, or by a link to its file: the same decision recorded twice).
    Dates cannot order them, so both are kept and flagged."""
    by_date: dict[str, list[Dated]] = defaultdict(list)
    for record in records:
        if record.decided_on and record.live:
            by_date[record.decided_on].append(record)
    conflicts: dict[str, set[str]] = defaultdict(set)
    for group in by_date.values():
        words = [title_words(record.title) for record in group]
        for a in range(len(group)):
            for b in range(a + 1, len(group)):
                first, second = group[a], group[b]
                if first.decision_id == second.decision_id or not (words[a] & words[b]):
                    continue
                if second.decision_id in first.names or first.decision_id in second.names:
                    continue
                conflicts[first.decision_id].add(second.decision_id)
                conflicts[second.decision_id].add(first.decision_id)
    return dict(conflicts)


# --- files a record names ---------------------------------------------------------------------------------------


class PathIndex:
    """The files of the tree as the history is walked, to tell which written names are files (or folders)."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._paths: set[str] = set()
        self._by_name: dict[str, set[str]] = defaultdict(set)
        self._folders: Counter[str] = Counter()
        for path in paths:
            self.add(path)

    def add(self, path: str) -> None:
        if path in self._paths:
            return
        self._paths.add(path)
        self._by_name[path.rsplit("/", 1)[-1]].add(path)
        for folder in _folders(path):
            self._folders[folder] += 1

    def remove(self, path: str) -> None:
        if path not in self._paths:
            return
        self._paths.discard(path)
        self._by_name[path.rsplit("/", 1)[-1]].discard(path)
        for folder in _folders(path):
            self._folders[folder] -= 1
            if not self._folders[folder]:
                del self._folders[folder]

    def __contains__(self, path: str) -> bool:
        return path in self._paths

    def resolve(self, name: str, base: str) -> str | None:
        """The path a written name means: exact, relative to ``base`` (the record's folder), a folder (with a
        trailing slash), or the one file whose path ends with the name; None when ambiguous or absent."""
        name = name.strip().strip("<>\"'").split("#", 1)[0]
        if not name or "://" in name or name.startswith(("mailto:", "#")):
            return None
        candidates = [name[1:]] if name.startswith("/") else [name, posixpath.join(base, name)]
        for candidate in candidates:
            normal = posixpath.normpath(candidate)
            if normal.startswith("../") or normal in (".", ".."):
                continue
            if normal in self._paths:
                return normal
            if normal.rstrip("/") in self._folders:
                return normal.rstrip("/") + "/"
        if name.startswith("/"):
            return self._absolute(name)
        tail = name.lstrip("./")
        if not tail:
            return None
        matches = {p for p in self._by_name.get(tail.rsplit("/", 1)[-1], ()) if p == tail or p.endswith("/" + tail)}
        return next(iter(matches)) if len(matches) == 1 else None


    def _absolute(self, name: str) -> str | None:
        """An absolute path written on someone's machine (/home/dev/project/src/app.py): the longest tail of it
        that is a path of the tree (src/app.py)."""
        parts = posixpath.normpath(name).strip("/").split("/")
        for start in range(1, len(parts)):
            if (tail := "/".join(parts[start:])) in self._paths:
                return tail
        return None


def _folders(path: str) -> Iterable[str]:
    parts = path.split("/")[:-1]
    return ("/".join(parts[: i + 1]) for i in range(len(parts)))


def named_files(record: Record, tree: PathIndex) -> set[str]:
    """The files and folders a record names in its text (in backticks, as link targets, or as bare paths and
    file names), resolved against the tree; its own file and other decision records are left out."""
    base = posixpath.dirname(record.path)
    written: set[str] = set()
    written.update(m.group(1).strip() for m in BACKTICK.finditer(record.text))
    written.update(m.group("target") for m in MARKDOWN_LINK.finditer(record.text))
    for match in PATH_LIKE.finditer(record.text):
        token = match.group(0).rstrip(".,:;")
        if "/" in token or EXTENSION.search(token):
            written.add(token)
    found = set()
    for name in written:
        path = tree.resolve(name, base)
        if path and path != record.path and not is_decision_candidate(path):
            found.add(path)
    return found
