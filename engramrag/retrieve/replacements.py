"""Which notes a search places below the notes that replaced them, and how each is labelled.

Read from the index tables ``superseded_decisions`` (decisions replaced, per document) and
``document_supersessions`` (whole notes declared replaced, and notes whose value of a single-valued property a
later note changed; ``lifecycle.timeline``). A replaced note is never dropped: it still answers for its period.

- A note whose every decision was replaced, or that an author declared replaced (or a person accepted it), goes
  below its successor in every search, unless the question asks about a date before the successor existed.
- A note holding an older value of a property goes below the notes of the later value only when the question
  asks about the current state ("now", "still", "현재", "아직") or about a date after the change, and names the
  property or one of the values ("owner", "담당자", "Stripe"): a note is not demoted for a fact the question is
  not about, which is how Graphiti's collateral invalidation is avoided.
- With the temporal reading off, only person-accepted decision supersessions move notes (the ranking before
  time was read); the labels are given either way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import duckdb

from engramrag.retrieve.note_bm25 import note_terms
from engramrag.retrieve.temporal import TemporalReading

LABELS_PER_DOCUMENT = 4


@dataclass(frozen=True)
class Replacement:
    by_doc: str  # the successor's doc id
    by_path: str
    by_date: str | None
    since: str | None  # the date from which the successor holds
    reason: str  # "declared" | "accepted" | "verified" | "later_value"
    form: str  # "decision" | "front_matter" | "in_text" | "property"
    detail: str  # what was replaced, for the label
    words: frozenset[str]  # a later_value applies only to a question with one of these terms
    earlier_current: bool  # the earlier note holds the current value again (an intermediate version replaced it)
    moves: bool  # whether it moves the note (a decision replacement: only when all the note's decisions are)
    label: dict[str, Any]


class Replacements:
    """The replacements of one opened index."""

    def __init__(self, db: duckdb.DuckDBPyConnection, path_of: dict[str, str]) -> None:
        self.by_doc: dict[str, list[Replacement]] = defaultdict(list)
        self._decisions(db, path_of)
        self._documents(db)

    def __bool__(self) -> bool:
        return bool(self.by_doc)

    def successors(
        self, reading: TemporalReading, query_terms: set[str], temporal: bool, ranked: Iterable[str]
    ) -> dict[str, set[str]]:
        """Per replaced note among ``ranked``, the notes it goes below for this question."""
        found: dict[str, set[str]] = defaultdict(set)
        for doc in ranked:
            for item in self.by_doc.get(doc, ()):
                if item.moves and self._applies(item, reading, query_terms, temporal):
                    found[doc].add(item.by_doc)
        return dict(found)

    def labels(self, doc: str, reading: TemporalReading) -> list[dict[str, Any]]:
        """The ``superseded_by`` entries of a result: every replacement that holds at the question's date."""
        labels, seen = [], set()
        for item in sorted(self.by_doc.get(doc, []), key=lambda i: i.since or "", reverse=True):
            if item.form == "property" and item.earlier_current and reading.intent != "as_of":
                continue
            if reading.intent == "as_of" and reading.as_of and (item.since or "") > reading.as_of:
                continue
            if (item.by_doc, item.detail) not in seen:
                seen.add((item.by_doc, item.detail))
                labels.append(item.label)
        return labels[:LABELS_PER_DOCUMENT]

    @staticmethod
    def _applies(item: Replacement, reading: TemporalReading, query_terms: set[str], temporal: bool) -> bool:
        if not temporal:
            return item.form == "decision" and item.reason == "accepted"
        if reading.intent == "as_of" and reading.as_of and (item.since or item.by_date or "") > reading.as_of:
            return False  # the successor did not exist yet on the date asked about
        if item.reason != "later_value":
            return True
        if reading.intent == "none" or not (item.words & query_terms):
            return False
        return not (reading.intent == "current" and item.earlier_current)

    def _decisions(self, db: duckdb.DuckDBPyConnection, path_of: dict[str, str]) -> None:
        rows = db.execute(
            "SELECT doc_id, title, decided_on, by_doc_id, by_title, by_decided_on, decisions_in_doc, reason, "
            "decided_by FROM superseded_decisions"
        ).fetchall()
        titles: dict[str, set[str]] = defaultdict(set)
        counts: dict[str, int] = {}
        for doc, title, _, _, _, _, decisions_in_doc, _, _ in rows:
            titles[doc].add(title)
            counts[doc] = int(decisions_in_doc)
        for doc, title, decided_on, by_doc, by_title, by_decided_on, _, reason, decided_by in rows:
            by_path = path_of.get(by_doc, by_doc)
            detail = f"“{title}” was replaced by “{by_title}”"
            label = {
                "by_doc": by_path, "by_date": by_decided_on, "reason": reason, "decided_by": decided_by,
                "detail": detail, "decision": title, "decided_on": decided_on, "by_decision": by_title,
                "by_decided_on": by_decided_on,
            }  # fmt: skip
            self.by_doc[doc].append(
                Replacement(by_doc, by_path, by_decided_on, by_decided_on, reason, "decision", detail, frozenset(),
                            False, len(titles[doc]) >= counts[doc], label)
            )

    def _documents(self, db: duckdb.DuckDBPyConnection) -> None:
        rows = db.execute(
            "SELECT doc_id, by_doc_id, by_path, by_date, since, reason, form, decided_by, subject, property, "
            "earlier_value, later_value, later_quote, earlier_current, property_words FROM document_supersessions"
        ).fetchall()
        for (doc, by_doc, by_path, by_date, since, reason, form, decided_by, subject, prop, earlier_value,
             later_value, later_quote, earlier_current, words) in rows:  # fmt: skip
            if form == "property":
                detail = f"{subject} {prop}: {earlier_value} → {later_value}"
                terms = frozenset(note_terms(" ".join(str(w) for w in (words, earlier_value, later_value) if w)))
            else:
                detail = str(later_quote or "declared replaced")
                terms = frozenset()
            label = {
                "by_doc": by_path, "by_date": by_date, "since": since, "reason": reason, "decided_by": decided_by,
                "detail": detail, "quote": later_quote,
            }  # fmt: skip
            if form == "property":
                label.update(subject=subject, property=prop, value=earlier_value, by_value=later_value)
            self.by_doc[doc].append(
                Replacement(by_doc, by_path, by_date, since, reason, form, detail, terms, bool(earlier_current),
                            True, label)
            )
