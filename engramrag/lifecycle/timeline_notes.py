"""What the timeline reads of each note alone, kept from one build to the next so that a build derives it again only
for the notes that changed.

From each note alone the timeline (``lifecycle.timeline``) derives: the aliases its front matter declares, the notes
it says it replaces or is replaced by (as written, unresolved), the targets of its wiki links, and the statements
that may give a property its value (``revise.versions.StatedValue``). These are functions of the note's text, front
matter and extraction, of the version settings and of the code. They are kept in ``<home>/timeline/notes.arrow``,
one row per note with a digest of the catalog columns they came from (:data:`NOTE_DIGEST`); a note whose digest
differs, or that has no row, is derived again. Whatever depends on the other notes (names, series titles,
references, chains) is computed at every run from these rows. A file written with other settings or by other code,
or one that cannot be read, is ignored and every note is derived again, so the file can only save work, never
change a result.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from engramrag.arrow_files import UNREADABLE, read_table, write_table
from engramrag.catalog.digests import note_digest, rows_digest
from engramrag.revise.declarations import DeclaredReference
from engramrag.revise.versions import StatedValue
from engramrag.run_memo import FilesKept

FILE = "notes.arrow"
LINKS_FILE = "links.arrow"
# What the resolution of a wiki link depends on: the live notes' paths and titles.
TITLES_DIGEST = rows_digest("documents WHERE NOT gone", "path", "title")
# What a note's facts are derived from, as the catalog states it: its text, its front matter and its extraction
# (a re-extraction of the same text, a --full build, rewrites its statements).
NOTE_DIGEST = note_digest("doc_id", "body_hash", "front_matter::VARCHAR")


@dataclass(frozen=True)
class NoteFacts:
    """What the timeline reads of one note alone."""

    aliases: tuple[str, ...]
    declared: tuple[DeclaredReference, ...]
    link_targets: tuple[str, ...]
    values: tuple[StatedValue, ...]

    def to_json(self) -> str:
        return json.dumps(
            [self.aliases, self.declared, self.link_targets, [_value_fields(v) for v in self.values]],
            ensure_ascii=False, separators=(",", ":"),
        )  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> NoteFacts:
        aliases, declared, targets, values = json.loads(text)
        return cls(
            tuple(aliases), tuple(DeclaredReference(*d) for d in declared), tuple(targets),
            tuple(StatedValue(*v) for v in values),
        )  # fmt: skip


@dataclass(frozen=True)
class KeptNotes:
    """The rows of the file: per doc id, the digest the facts were derived at and the facts as JSON."""

    context: str
    digests: dict[str, str]
    facts: dict[str, str]
    # The same rows as the file holds them (sorted by doc id), when known: the next rows are made from them by
    # replacing the changed notes' rows (making every row from the dicts took 1.5 s of each edit at 100,000 notes).
    rows: pa.Table | None = field(default=None, compare=False, repr=False)

    @classmethod
    def load(cls, folder: Path, context: str) -> KeptNotes:
        """The kept rows when the file was written in ``context`` (settings and code), else none. The rows this
        process last read or wrote are not read again while the file is the one they match (its inode, size and
        time: every write replaces the file): 1-2 s of each edit at 100,000 notes in a resident builder."""
        path = folder / FILE
        remembered = _resident.get(str(folder), (path,))
        if remembered is not None and remembered.context == context:
            return remembered
        table = _read_table(path, context)
        try:
            rows = table.select(ROW_COLUMNS) if table is not None else None
            columns = [rows.column(name).to_pylist() for name in ROW_COLUMNS] if rows is not None else None
        except UNREADABLE:
            rows, columns = None, None
        if columns is None:
            return cls(context, {}, {})
        ids, digests, facts = columns
        kept = cls(context, dict(zip(ids, digests, strict=True)), dict(zip(ids, facts, strict=True)), rows)
        _resident.put(str(folder), (path,), kept)
        return kept

    def changed(self, digests: Mapping[str, str]) -> list[str]:
        """The doc ids of ``digests`` (doc id -> digest now) whose kept facts are missing or were derived from
        another version of the note."""
        return [doc_id for doc_id, digest in digests.items() if self.digests.get(doc_id) != digest]

    def updated(self, digests: Mapping[str, str], derived: Mapping[str, NoteFacts]) -> KeptNotes:
        """The rows of the notes of ``digests`` (the live notes): ``derived`` for those derived now, the kept rows
        for the others."""
        facts = {doc_id: derived[doc_id].to_json() if doc_id in derived else self.facts[doc_id]
                 for doc_id in digests}  # fmt: skip
        # The next run of a resident process parses these texts to these very facts: it need not (a run that
        # derived every note, after a change of code or settings, left the next one 7 s of parsing at 100,000).
        _parsed.facts.update((facts[doc_id], found) for doc_id, found in derived.items() if doc_id in facts)
        digests = dict(digests)
        if self.rows is None:
            return KeptNotes(self.context, digests, facts, _rows(self.context, sorted(facts), digests, facts))
        same = {doc_id for doc_id, digest in self.digests.items()
                if doc_id not in derived and digests.get(doc_id) == digest}  # fmt: skip
        fresh = _rows(self.context, sorted(set(facts) - same), digests, facts)
        return KeptNotes(self.context, digests, facts, _patched(self.rows, same, fresh))

    def parsed(self, doc_ids: Iterable[str]) -> dict[str, NoteFacts]:
        """The facts of ``doc_ids``; those a resident process parsed in its last run from the same text are not
        parsed again (the text is all a :class:`NoteFacts` holds, and it is immutable)."""
        before, now = _parsed.facts, {}
        found = {}
        for doc_id in doc_ids:
            text = self.facts[doc_id]
            facts = before.get(text)
            found[doc_id] = now[text] = facts if facts is not None else NoteFacts.from_json(text)
        _parsed.facts = now  # only the live notes' facts stay in memory
        return found

    def save(self, folder: Path) -> None:
        """Write the rows, replacing the file in one step (a run killed while writing leaves the previous file)."""
        folder.mkdir(parents=True, exist_ok=True)
        rows = self.rows if self.rows is not None else _rows(self.context, sorted(self.facts), self.digests, self.facts)
        write_table(rows, folder / FILE)
        _resident.put(str(folder), (folder / FILE,), self)


ROW_COLUMNS = ["doc_id", "digest", "facts"]
# A patched table is combined into one chunk when it has more chunks than this (every few hundred edits).
MAX_CHUNKS = 256


def _patched(rows: pa.Table, same: set[str], fresh: pa.Table) -> pa.Table:
    """``rows`` (sorted by doc id) without the rows of notes not in ``same``, with ``fresh`` (sorted, none of
    ``same``) in their places: slices of the two tables, nothing copied (filtering and sorting the 150 MB of facts
    took 2 s of each edit at 100,000 notes)."""
    ids = rows.column("doc_id").to_pylist()
    fresh_ids = fresh.column("doc_id").to_pylist()
    events = sorted([(row, 0) for row, doc_id in enumerate(ids) if doc_id not in same]
                    + [(bisect_left(ids, doc_id), 1, number) for number, doc_id in enumerate(fresh_ids)])  # fmt: skip
    pieces, cursor = [], 0
    for event in events:
        row = event[0]
        if row > cursor:
            pieces.append(rows.slice(cursor, row - cursor))
            cursor = row
        if event[1] == 0:
            cursor = row + 1  # this note's row goes
        else:
            pieces.append(fresh.slice(event[2], 1))
    pieces.append(rows.slice(cursor))
    patched = pa.concat_tables([piece.cast(rows.schema) for piece in pieces if piece.num_rows] or [rows.slice(0, 0)])
    return patched.combine_chunks() if patched.column("doc_id").num_chunks > MAX_CHUNKS else patched


def _rows(context: str, ids: list[str], digests: Mapping[str, str], facts: Mapping[str, str]) -> pa.Table:
    """The file's rows of ``ids`` (sorted)."""
    return pa.table(
        {
            "doc_id": pa.array(ids, pa.string()),
            "digest": pa.array([digests[i] for i in ids], pa.string()),
            "facts": pa.array([facts[i] for i in ids], pa.large_string()),
        },
        metadata={"context": context},
    )


# Per timeline folder (a home's), the rows this process last read from the file or wrote to it.
_resident: FilesKept[KeptNotes] = FilesKept()
_resident_links: FilesKept[KeptLinks] = FilesKept()


@dataclass
class _Parsed:
    """The facts the last ``KeptNotes.parsed`` of this process gave, by their JSON text: parsing every note's facts
    took 4.7 s of each timeline run at 100,000 notes, and a resident builder (``engram watch``) reads the same texts
    again at its next build."""

    facts: dict[str, NoteFacts] = field(default_factory=dict)


_parsed = _Parsed()


@dataclass(frozen=True)
class KeptLinks:
    """The wiki links the last run resolved, (target, the linking note's folder) -> the paths they name, kept in
    ``<home>/timeline/links.arrow``. A resolution depends only on the live notes' paths and titles, so the file is
    read only when they are the ones it was written for (``context`` includes their digest, :data:`TITLES_DIGEST`):
    an edit that changes no title or path resolves only the links no earlier run resolved."""

    context: str
    resolved: dict[tuple[str, str], set[str]]
    count: int  # resolutions read from the file

    @classmethod
    def load(cls, folder: Path, context: str) -> KeptLinks:
        """The resolutions of the file when written in ``context``; those this process wrote last are not read back
        while the file is the one it wrote (20 ms of each timeline run at 10,000 notes)."""
        remembered = _resident_links.get(str(folder), (folder / LINKS_FILE,))
        if remembered is not None and remembered.context == context:
            return cls(context, dict(remembered.resolved), len(remembered.resolved))  # a caller adds to its own
        columns = _read(folder / LINKS_FILE, context, ("target", "folder", "paths"))
        if columns is None:
            return cls(context, {}, 0)
        targets, folders, paths = columns
        resolved = {(t, f): set(p) for t, f, p in zip(targets, folders, paths, strict=True)}
        return cls(context, resolved, len(resolved))

    def save_if_grown(self, folder: Path) -> None:
        """Write the resolutions when this run added some (one step: a killed run leaves the previous file)."""
        if len(self.resolved) == self.count:
            return
        folder.mkdir(parents=True, exist_ok=True)
        keys = sorted(self.resolved)
        table = pa.table(
            {
                "target": pa.array([t for t, _ in keys], pa.string()),
                "folder": pa.array([f for _, f in keys], pa.string()),
                "paths": pa.array([sorted(self.resolved[k]) for k in keys], pa.list_(pa.string())),
            },
            metadata={"context": self.context},
        )
        write_table(table, folder / LINKS_FILE)
        # Kept as written: a later run of this process may add to the same resolutions, then writes them again.
        _resident_links.put(str(folder), (folder / LINKS_FILE,), self)


def _read(source: Path, context: str, names: tuple[str, ...]) -> list[list] | None:
    """The named columns of the file as lists, or None when it is missing, broken or written in another
    ``context``."""
    table = _read_table(source, context)
    try:
        return None if table is None else [table.column(name).to_pylist() for name in names]
    except UNREADABLE:
        return None


def _read_table(source: Path, context: str) -> pa.Table | None:
    """The file's table, or None when it is missing, broken or written in another ``context``."""
    try:
        table = read_table(source)
        return table if (table.schema.metadata or {}).get(b"context", b"").decode() == context else None
    except (*UNREADABLE, UnicodeDecodeError):
        return None


def _value_fields(value: StatedValue) -> list:
    return [value.key, value.own, value.prop, value.prefix, value.value, value.line_start, value.line_end,
            value.quote, value.stated]  # fmt: skip
