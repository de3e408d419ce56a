"""Key–value lines in the body: ``Owner: Minji Park``, ``- **Status**: done``, ``담당자: 박민지``.

The predicate is the key in snake_case (Hangul kept), the label is the key as written. The value becomes an
entity when the key names a kind (Owner → Person) or the value looks like a name or is a link; otherwise a
literal, typed as a date when it is an ISO date.
"""

from __future__ import annotations

import re

from engramrag.extract.builder import DOCUMENT_KEY, ExtractionBuilder
from engramrag.extract.kinds import (
    FRONT_MATTER_KINDS,
    guess_kind,
    is_date_key,
    is_status_key,
    key_kind,
    looks_like_person_name,
)
from engramrag.extract.korean import looks_like_korean_name
from engramrag.extract.properties import SINGLE_VALUED, property_of
from engramrag.extract.structure import link_entity
from engramrag.extract.textutil import continuation_end, iso_date, links_within, snake_case, span_at
from engramrag.vault.document import Document, Link

_PREFIX = r"^[ \t]*(?:>[ \t]*)?(?:[-*+][ \t]+|\d+[.)][ \t]+)?(?:\[[ xX]\][ \t]+)?"
_KEY = r"[A-Za-z가-힣][A-Za-z0-9가-힣 /&'-]{0,39}?"
KEY_VALUE_FORMS = (
    re.compile(_PREFIX + r"(\*\*|__)(?P<key>" + _KEY + r")\1[ \t]*[:：][ \t]*(?P<value>.*?)[ \t]*$", re.MULTILINE),
    re.compile(_PREFIX + r"(\*\*|__)(?P<key>" + _KEY + r")[ \t]*[:：]\1[ \t]*(?P<value>.*?)[ \t]*$", re.MULTILINE),
    re.compile(
        _PREFIX + r"(?P<key>[A-Z가-힣][A-Za-z0-9가-힣 /&'-]{0,39}?)[ \t]*[:：][ \t]+(?P<value>.*?)[ \t]*$",
        re.MULTILINE,
    ),
)  # fmt: skip
# Words that make a plain "Key: value" line a sentence with a colon rather than a field.
SENTENCE_WORDS = frozenset(
    (
        "is", "are", "was", "were", "be", "been", "will", "would", "have", "has", "had", "we", "i", "it", "they",
        "you", "this", "that", "the", "a", "an", "to", "of", "in", "on", "for", "and", "or", "if", "when", "but",
        "so",
    )
)  # fmt: skip
NAME_VALUE = re.compile(
    r"^(?:[A-Z][A-Za-z0-9.&'-]*|[a-z]+[A-Z][\w-]*)(?: (?:[A-Z][A-Za-z0-9.&'-]*|of|and|de|van|von)){0,4}$"
)
NAME_SEPARATORS = re.compile(r"\s*(?:[,;/·、&]|\band\b|및)\s*")
VALUE_MARKUP = "*_ \t"


def extract_key_values(
    document: Document,
    builder: ExtractionBuilder,
    masked: str,
    skip: list[tuple[int, int]],
    subjects: list[tuple[int, int, str]],
) -> None:
    """One statement per key–value line of the body. Lines inside ``skip`` ranges (decision fields) are left
    to their own parser; a line inside a ``subjects`` range (a decision record) is about that entity, any other
    line is about the document."""
    seen_lines: set[int] = set()
    fields: list[tuple[re.Match[str], int, int]] = []
    for form in KEY_VALUE_FORMS:
        for match in form.finditer(masked, document.body_start):
            line_start = masked.rfind("\n", 0, match.start()) + 1
            if line_start in seen_lines or any(s <= match.start() < e for s, e in skip):
                continue
            if form is KEY_VALUE_FORMS[2] and not _plain_key_ok(match.group("key")):
                continue
            if looks_like_person_name(match.group("key").strip()) and not _names_a_thing(match.group("key")):
                continue  # "정현우: ADR 초안" is an action item naming a person, not a field
            value_start, value_end = _strip(masked, match.start("value"), match.end("value"))
            if value_end <= value_start or masked.startswith("//", value_start):
                continue
            seen_lines.add(line_start)
            fields.append((match, value_start, value_end))
    # Fields whose key names a kind go first, so "Attendees: Minji, Daniel" is known before "Minji: we should…"
    fields.sort(key=lambda field: (key_kind(field[0].group("key").strip()) is None, field[0].start()))
    for match, value_start, value_end in fields:
        key = match.group("key").strip()
        known = builder.key_for(key)
        if known is not None and builder.kind_of(known) == "Person":
            continue  # a person speaking or assigned ("Minji: the partition model is what we need")
        subject = next((key for s, e, key in subjects if s <= match.start() < e), DOCUMENT_KEY)
        _statement(document, builder, subject, match, value_start, value_end)


def _names_a_thing(key: str) -> bool:
    """"Project Delta", "Search Service": a title-case key whose first or last word names a kind of thing."""
    words = key.strip().casefold().split()
    return bool(words) and (words[0] in FRONT_MATTER_KINDS or words[-1] in FRONT_MATTER_KINDS)


def _plain_key_ok(key: str) -> bool:
    """A plain "Key: value" key has at most three words, or five when it ends with a single-valued property
    ("Ledger service on-call lead", "기능 플래그 서비스 담당자"), and no word that makes it a sentence."""
    words = key.split()
    longest = 5 if property_of(key, SINGLE_VALUED) else 3
    return 1 <= len(words) <= longest and len(key) >= 2 and not any(w.casefold() in SENTENCE_WORDS for w in words)


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in VALUE_MARKUP:
        start += 1
    while end > start and text[end - 1] in VALUE_MARKUP:
        end -= 1
    return start, end


def _statement(
    document: Document,
    builder: ExtractionBuilder,
    subject: str,
    match: re.Match[str],
    value_start: int,
    value_end: int,
) -> None:
    key = match.group("key").strip()
    predicate = snake_case(key)
    field_start = match.start("key") if match.re is KEY_VALUE_FORMS[2] else match.start(1)
    line_span = span_at(document, field_start, value_end)
    value = document.text[value_start:value_end]
    kind = key_kind(key)

    def relate(target: str) -> None:
        builder.statement(subject, predicate, key, target, object_is_entity=True, span=line_span)

    links = links_within(document, value_start, value_end)
    if links and _only_links(document.text, value_start, value_end, links):
        for link in links:
            target = link_entity(document, builder, link, kind, explicit=kind is not None)
            if target is not None:
                relate(target)
        return
    names = _names(value, value_start) if kind is not None and not is_status_key(key) else []
    if names and all(_short_name(document.text[start:end]) for start, end in names):
        for start, end in names:
            name = document.text[start:end]
            relate(builder.entity(name, kind or "Concept", span_at(document, start, end), explicit=True))
        return
    date = iso_date(value) if len(value.strip()) == 10 else None
    if date:
        builder.statement(subject, predicate, key, date, object_is_entity=False, span=line_span, datatype="date")
        return
    if not is_date_key(key) and not is_status_key(key) and _looks_like_name(value):
        relate(builder.entity(value, guess_kind(value), span_at(document, value_start, value_end)))
        return
    value_end = continuation_end(document.text, value_end, KEY_VALUE_FORMS)
    literal = re.sub(r"\s+", " ", document.text[value_start:value_end])
    builder.statement(
        subject, predicate, key, literal, object_is_entity=False, span=span_at(document, field_start, value_end)
    )


def _short_name(name: str) -> bool:
    return len(name.split()) <= 4 and not re.search(r"[.!?:;]$|[。]", name)


def _only_links(text: str, start: int, end: int, links: list[Link]) -> bool:
    """Whether the value is just links (with separators and bracketed remarks), not a sentence with links."""
    chars = list(text[start:end])
    for link in links:
        for index in range(link.span.start - start, min(link.span.end, end) - start):
            chars[index] = " "
    rest = re.sub(r"\([^()]*\)", " ", "".join(chars))
    return not NAME_SEPARATORS.sub(" ", rest).strip()


def _looks_like_name(value: str) -> bool:
    """Two or more capitalised words, a CamelCase/acronym/versioned single word, or a Korean name."""
    if looks_like_korean_name(value):
        return True
    if not NAME_VALUE.match(value):
        return False
    return len(value.split()) >= 2 or guess_kind(value) != "Concept"


def _names(value: str, offset: int) -> list[tuple[int, int]]:
    """The comma/and-separated names of a value, as absolute ranges, without ``@`` and honorifics."""
    ranges = []
    position = 0
    for separator in [*NAME_SEPARATORS.finditer(value), None]:
        end = separator.start() if separator else len(value)
        start = position
        while start < end and value[start] in "@ \t":
            start += 1
        piece = re.sub(r"\s*\(.*$", "", value[start:end]).rstrip()
        for honorific in ("님", "씨"):
            if piece.endswith(honorific) and len(piece) > 2:
                piece = piece[: -len(honorific)]
        if piece.strip(".()[]"):
            ranges.append((offset + start, offset + start + len(piece)))
        position = separator.end() if separator else len(value)
    return ranges
