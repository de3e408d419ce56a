"""Checkbox items (``- [ ] Daniel: move the cron jobs``) as Task entities.

A leading ``Name:`` names the assignee, so such a line is an assignment, not a key–value field: the key–value
rule leaves checkbox lines to this one.
"""

from __future__ import annotations

import re

from engramrag.extract.builder import DOCUMENT_KEY, ExtractionBuilder
from engramrag.extract.keyvalue import SENTENCE_WORDS
from engramrag.extract.textutil import span_at
from engramrag.vault.document import Document

CHECKBOX = re.compile(r"^[ \t]*(?:>[ \t]*)?[-*+][ \t]+\[(?P<mark>[ xX])\][ \t]+(?P<item>\S.*?)[ \t]*$", re.MULTILINE)
ASSIGNEE = re.compile(r"(?:\*\*|__)?(?P<name>[^\W\d_][\w .'-]{0,30}?)(?:\*\*|__)?[ \t]*[:：][ \t]+")
TRAILING_DATE = re.compile(r"[ \t]+[—–-]+[ \t]+(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2})[ \t]*$")


def checkbox_lines(masked: str, start: int) -> list[tuple[int, int]]:
    """The ranges of checkbox lines, for the key–value rule to skip."""
    return [match.span() for match in CHECKBOX.finditer(masked, start)]


def extract_tasks(document: Document, builder: ExtractionBuilder, masked: str) -> None:
    for match in CHECKBOX.finditer(masked, document.body_start):
        item_start, item_end = match.span("item")
        assignee = ASSIGNEE.match(masked, item_start, item_end)
        if assignee and not _is_name(assignee.group("name")):
            assignee = None
        label_start = assignee.end() if assignee else item_start
        trailing = TRAILING_DATE.search(masked, label_start, item_end)
        label_end = trailing.start() if trailing else item_end
        if label_end <= label_start:
            continue
        label_span = span_at(document, label_start, label_end)
        task = builder.entity(document.text[label_start:label_end], "Task", label_span, explicit=True)
        line_span = span_at(document, match.start("mark") - 1, item_end)
        builder.statement(DOCUMENT_KEY, "has_task", "task", task, object_is_entity=True, span=line_span)
        status = "done" if match.group("mark") in "xX" else "open"
        mark_span = span_at(document, match.start("mark") - 1, match.end("mark") + 1)
        builder.statement(task, "has_status", "checkbox", status, object_is_entity=False, span=mark_span)
        if assignee:
            name_start, name_end = assignee.span("name")
            name = document.text[name_start:name_end].strip()
            person = builder.entity(
                name, "Person", span_at(document, name_start, name_start + len(name)), explicit=True
            )
            builder.statement(task, "assigned_to", name, person, object_is_entity=True, span=line_span)


def _is_name(name: str) -> bool:
    words = name.split()
    return 1 <= len(words) <= 3 and not any(word.casefold() in SENTENCE_WORDS for word in words)
