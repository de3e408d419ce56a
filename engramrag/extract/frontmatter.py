"""The document entity and what the front matter says about it.

Front matter values are located in the YAML text so their statements carry exact spans; a value that cannot be
found as written (a YAML timestamp re-rendered, a folded string) gets no span rather than a guessed one.
"""

from __future__ import annotations

import re
from typing import Any

from engramrag.extract.builder import DOCUMENT_KEY, ExtractionBuilder
from engramrag.extract.kinds import is_date_key, key_kind, kind_from_type
from engramrag.extract.textutil import iso_date, snake_case, span_at
from engramrag.vault.converters import BOOKKEEPING_KEYS
from engramrag.vault.document import Document, Span

HANDLED_KEYS = frozenset(
    ("title", "aliases", "alias", "tags", "tag", "type", "kind", "author", "authors", "작성자", "date", "status")
)
AGENT_AUTHOR = re.compile(r"^(agent|bot|ai)[:/]", re.IGNORECASE)
WIKI_VALUE = re.compile(r"^\[\[([^\[\]|#]+)(?:#[^\[\]|]*)?(?:\|([^\[\]]+))?\]\]$")


def extract_front_matter(document: Document, builder: ExtractionBuilder) -> str:
    """Add the document entity (key ``doc``) and the front matter statements; return the document key."""
    front_matter = document.front_matter
    kind = kind_from_type(front_matter.get("type") or front_matter.get("kind")) or "Document"
    aliases = _strings(front_matter.get("aliases", front_matter.get("alias")))
    alias_key = "aliases" if "aliases" in front_matter else "alias"
    title_span = locate_value(document, "title", document.title) if "title" in front_matter else None
    label = document.title.strip() or document.path.rsplit("/", 1)[-1]
    doc = builder.entity(label, kind, title_span, explicit=True, key=DOCUMENT_KEY, aliases=aliases)
    for alias in aliases:
        builder.statement(
            doc, "has_alias", alias_key, alias, object_is_entity=False, span=locate_value(document, alias_key, alias)
        )
    for tag in document.tags:
        span = tag.span or locate_value(document, "tags", tag.name) or locate_value(document, "tag", tag.name)
        builder.statement(doc, "has_tag", "tag", tag.name, object_is_entity=False, span=span)
    for key in ("author", "authors", "작성자"):
        for name in _strings(front_matter.get(key)):
            author_kind = "Artifact" if AGENT_AUTHOR.match(name) else "Person"
            _entity_value(document, builder, key, name, author_kind, "authored_by")
    for key in ("date", "status"):
        for value in _strings(front_matter.get(key)):
            predicate = "dated" if key == "date" else "has_status"
            _literal_value(document, builder, key, value, predicate)
    for key, value in front_matter.items():
        if key in HANDLED_KEYS or key in BOOKKEEPING_KEYS or isinstance(value, dict):
            continue
        predicate, object_kind = snake_case(key), key_kind(key)
        for item in _strings(value):
            link = WIKI_VALUE.match(item)
            if object_kind or link:
                _entity_value(document, builder, key, item, object_kind or "Document", predicate)
            else:
                _literal_value(document, builder, key, item, predicate)
    return doc


def locate_value(document: Document, key: str, value: str) -> Span | None:
    """The span of ``value`` as written under ``key:`` in the front matter, or None."""
    head = document.text[: document.body_start]
    key_line = re.search(rf"^[ \t]*['\"]?{re.escape(key)}['\"]?[ \t]*:", head, re.MULTILINE)
    if not key_line or not value:
        return None
    next_key = re.compile(r"^(?:[^\s#-][^:\n]*:|---|\.\.\.)", re.MULTILINE).search(head, key_line.end())
    block_end = next_key.start() if next_key else len(head)
    for candidate in (value, value.lower()):
        found = re.compile(rf"(?<!\w){re.escape(candidate)}(?!\w)").search(head, key_line.end(), block_end)
        if found:
            return span_at(document, found.start(), found.end())
    return None


def _entity_value(
    document: Document, builder: ExtractionBuilder, key: str, value: str, kind: str, predicate: str
) -> None:
    link = WIKI_VALUE.match(value)
    label = link.group(1).strip().rsplit("/", 1)[-1] if link else value
    aliases = (link.group(2).strip(),) if link and link.group(2) else ()
    span = locate_value(document, key, label) or locate_value(document, key, value)
    target = builder.entity(label, kind, span, explicit=kind != "Document", aliases=aliases)
    builder.statement(DOCUMENT_KEY, predicate, key, target, object_is_entity=True, span=span)


def _literal_value(document: Document, builder: ExtractionBuilder, key: str, value: str, predicate: str) -> None:
    date = iso_date(value) if (is_date_key(key) or key == "date") and len(value.strip()) >= 10 else None
    builder.statement(
        DOCUMENT_KEY,
        predicate,
        key,
        date or value,
        object_is_entity=False,
        span=locate_value(document, key, value),
        datatype="date" if date else None,
    )


def _strings(value: Any) -> list[str]:
    """Scalars and lists of scalars as non-empty strings (booleans as ``true``/``false``)."""
    items = value if isinstance(value, list) else [value]
    result = []
    for item in items:
        if item is None or isinstance(item, dict | list):
            continue
        text = ("true" if item else "false") if isinstance(item, bool) else str(item).strip()
        if text:
            result.append(text)
    return result
