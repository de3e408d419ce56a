"""Accumulates the entities and statements of one document, merging mentions of the same label.

Entity keys are content hashes of the normalised label, so the same label always gets the same key within a
document. When two rules disagree on an entity's kind, the stronger evidence wins (explicit > heuristic >
the Concept default) and ties keep the first kind seen, which makes the result independent of set ordering.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, field

from engramrag.extract.base import DecisionRecord, Entity, Extraction, GraphRole, Statement
from engramrag.extract.korean import attaches_to_noun
from engramrag.extract.textutil import normalise_label, span_at
from engramrag.vault.document import Document, Span
from engramrag.vault.ids import short_hash

DOCUMENT_KEY = "doc"
EXPLICIT, HEURISTIC, DEFAULT = 3, 2, 1
_LATIN_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")
_HANGUL = re.compile(r"[가-힣]")


@dataclass
class _Draft:
    key: str
    label: str
    kind: str
    strength: int
    spans: list[Span] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    seen: set[tuple[int, int]] = field(default_factory=set)


def identity(label: str) -> str:
    """The normalised label; a label of punctuation only is kept as itself rather than becoming empty."""
    return normalise_label(label) or label.strip().casefold()


def entity_key(label: str, namespace: str = "entity") -> str:
    return short_hash(namespace, identity(label))


class ExtractionBuilder:
    def __init__(self, document: Document) -> None:
        self.document = document
        self._drafts: dict[str, _Draft] = {}
        self._index: dict[str, str] = {}
        self._statements: dict[tuple, Statement] = {}
        self.decisions: list[DecisionRecord] = []

    # entities -------------------------------------------------------------------------------------------

    def key_for(self, label: str) -> str | None:
        return self._index.get(identity(label))

    def kind_of(self, key: str) -> str:
        return self._drafts[key].kind

    def label_of(self, key: str) -> str:
        return self._drafts[key].label

    def entity(
        self,
        label: str,
        kind: str,
        span: Span | None = None,
        *,
        explicit: bool = False,
        key: str | None = None,
        aliases: tuple[str, ...] | list[str] = (),
    ) -> str:
        """Add (or merge into) the entity named ``label`` and return its key."""
        label = label.strip()
        norm = identity(label)
        if not norm:
            raise ValueError("an entity needs a non-blank label")
        if key is None:
            key = self._index.get(norm) or entity_key(label)
        strength = EXPLICIT if explicit else (DEFAULT if kind == "Concept" else HEURISTIC)
        draft = self._drafts.get(key)
        if draft is None:
            draft = self._drafts[key] = _Draft(key, label, kind, strength)
            self._index.setdefault(norm, key)
        elif strength > draft.strength:
            draft.kind, draft.strength = kind, strength
        if span is not None:
            self.add_span(key, span)
        for alias in aliases:
            self.add_alias(key, alias)
        return key

    def set_kind(self, key: str, kind: str, *, explicit: bool = True) -> None:
        draft = self._drafts[key]
        strength = EXPLICIT if explicit else HEURISTIC
        if strength > draft.strength:
            draft.kind, draft.strength = kind, strength

    def add_span(self, key: str, span: Span) -> None:
        draft = self._drafts[key]
        if (span.start, span.end) not in draft.seen:
            draft.seen.add((span.start, span.end))
            draft.spans.append(span)

    def add_alias(self, key: str, alias: str) -> None:
        alias = alias.strip()
        draft = self._drafts[key]
        norm = normalise_label(alias)
        if not norm or norm == normalise_label(draft.label):
            return
        if alias not in draft.aliases:
            draft.aliases.append(alias)
        self._index.setdefault(norm, key)

    def mentions(self) -> list[tuple[Span, str]]:
        """Every body mention as (span, key), ordered by position, longest first at the same start."""
        found = [
            (span, draft.key)
            for draft in self._drafts.values()
            for span in draft.spans
            if span.start >= self.document.body_start
        ]
        return sorted(found, key=lambda item: (item[0].start, -item[0].end, item[1]))

    def sweep(self, prose: str) -> None:
        """Add the spans of further occurrences of every label and alias in the prose view, so an entity
        carries all its mentions. Occurrences inside a longer existing mention are skipped."""
        taken = sorted((span.start, span.end) for span, _ in self.mentions())
        longest = max((end - start for start, end in taken), default=0)
        names = sorted(
            ((name, draft.key) for draft in self._drafts.values() for name in (draft.label, *draft.aliases)),
            key=lambda item: (-len(item[0]), item[0], item[1]),
        )
        longest = max([longest, *(len(name) for name, _ in names)])
        body_start = self.document.body_start
        for name, key in names:
            if len(name) < 2 or "\n" in name:
                continue
            position = prose.find(name, body_start)
            while position >= 0:
                end = position + len(name)
                if (
                    self.document.text[position:end] == name
                    and _bounded(prose, position, end)
                    and not _inside_other(taken, longest, position, end)
                ):
                    self.add_span(key, span_at(self.document, position, end))
                    insort(taken, (position, end))
                position = prose.find(name, end)

    # statements -----------------------------------------------------------------------------------------

    def statement(
        self,
        subject: str,
        predicate: str,
        label: str,
        obj: str,
        *,
        object_is_entity: bool,
        span: Span | None,
        role: GraphRole = "assertion",
        datatype: str | None = None,
    ) -> None:
        where = (span.start, span.end) if span is not None else None
        identity = (subject, predicate, obj, object_is_entity, where, role)
        self._statements.setdefault(
            identity, Statement(subject, predicate, label, obj, object_is_entity, span, role, datatype)
        )

    # result ---------------------------------------------------------------------------------------------

    def build(self, extractor: str, version: str) -> Extraction:
        entities = [
            Entity(
                key=draft.key,
                label=draft.label,
                kind=draft.kind,
                spans=tuple(sorted(draft.spans, key=lambda s: (s.start, s.end))),
                aliases=tuple(draft.aliases),
            )
            for draft in self._drafts.values()
        ]
        entities.sort(key=lambda e: (e.key != DOCUMENT_KEY, e.spans[0].start if e.spans else 1 << 62, e.key))
        statements = sorted(self._statements.values(), key=_statement_order)
        decisions = sorted(self.decisions, key=lambda d: (d.span is None, d.span.start if d.span else 0, d.entity_key))
        return Extraction(
            extractor=extractor, version=version, entities=entities, statements=statements, decisions=decisions
        )


class MentionIndex:
    """Body mentions ordered by position, for fast lookup of the mentions inside a sentence."""

    def __init__(self, mentions: list[tuple[Span, str]]) -> None:
        self._mentions = mentions
        self._starts = [span.start for span, _ in mentions]

    def within(self, start: int, end: int) -> list[tuple[Span, str]]:
        found = []
        for index in range(bisect_left(self._starts, start), len(self._mentions)):
            span, key = self._mentions[index]
            if span.start >= end:
                break
            if span.end <= end:
                found.append((span, key))
        return found


def _statement_order(statement: Statement) -> tuple:
    span = statement.span
    where = (span.start, span.end) if span is not None else (-1, -1)
    return (*where, statement.role, statement.predicate, statement.subject, statement.obj)


def _inside_other(taken: list[tuple[int, int]], longest: int, start: int, end: int) -> bool:
    """Whether ``[start, end)`` lies within (or is) an already recorded mention."""
    first = bisect_left(taken, (start - longest, -1))
    last = bisect_right(taken, (start, 1 << 62))
    return any(e >= end for _, e in taken[first:last])


def _bounded(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` stands as a word: no Latin letter glued on either side, and Hangul after
    a Hangul label only when it is a particle or copula (``박민지는``, not ``데이터베이스``)."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    if _LATIN_WORD_CHAR.match(before) or _LATIN_WORD_CHAR.match(after):
        return False
    if _HANGUL.match(text[start]) and _HANGUL.match(before):
        return False
    return not (_HANGUL.match(text[end - 1]) and _HANGUL.match(after) and not attaches_to_noun(text, end))
