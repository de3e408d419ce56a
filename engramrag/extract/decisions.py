"""Decision records: the ``## `` sections of a DECISIONS.md log, and ADR files (Nygard/adr-tools and MADR).

Each record becomes a Decision entity with ``has_status``, ``decided_on``, ``supersedes`` and
``superseded_by`` statements (exact spans), a ``records_decision`` statement from the document, and a
``DecisionRecord``. Supersession references are kept as written; matching them to other records is left to
resolution, which sees every document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engramrag.extract.base import DecisionRecord
from engramrag.extract.builder import DOCUMENT_KEY, ExtractionBuilder, entity_key
from engramrag.extract.decision_fields import FIELD_LINE, Fields, Found, parse_status, references, scan_fields
from engramrag.extract.frontmatter import locate_value
from engramrag.extract.kinds import kind_from_type
from engramrag.extract.structure import clean_heading, heading_label_span
from engramrag.extract.textutil import ISO_DATE, iso_date, normalise_label, span_at, valid_date
from engramrag.vault.dates import find_date
from engramrag.vault.document import Document, Heading, Span

LOG_NAME = re.compile(r"^decisions\.(?:md|markdown)$", re.IGNORECASE)
ADR_FOLDERS = frozenset({"adr", "adrs", "decisions", "decision-records", "architecture-decisions"})
ADR_NAME = re.compile(
    r"^(?:\d{3,5}-.+|adr[-_ ]?\d+.*|\d{4}-\d{2}-\d{2}-.+|\d{8}[-_].+)\.(?:md|markdown)$", re.IGNORECASE
)
# Files that sit beside the records in an ADR folder without being one: its index, summary, template, and the
# instructions for agents working there.
NOT_ADR_NAME = re.compile(
    r"^(?:readme|index|template|_?toc|summary|overview|agents|claude|gemini|copilot-instructions|contributing"
    r"|changelog|glossary)\b|template",
    re.IGNORECASE,
)
FILENAME_DATE = re.compile(r"^(?:\d{4}-\d{2}-\d{2}|\d{8})(?=[-_])")  # 2024-04-27-x.md, 20240427-x.md
ADR_PREFIX = re.compile(r"^(?:ADR[-_ ]?\d+|\d+)[.:)]?\s*(?:[-–—:]\s*)?", re.IGNORECASE)
HEADING_DATE = re.compile(
    r"^\s*[\[(]?(?P<lead>\d{4}-\d{2}-\d{2})[\])]?\s*[-–—:|·.]?\s*|\s*[-–—:|·]?\s*[\[(]?(?P<tail>\d{4}-\d{2}-\d{2})[\])]?\s*$"
)
STATUS_HEADINGS = frozenset({"status", "상태"})
DECISION_HEADINGS = frozenset({"decision", "decision outcome", "결정"})


@dataclass
class DecisionScan:
    """What the other rules need to know: which headings are decisions, which lines were read as decision
    fields, and which ranges of the text describe which decision (their key–value lines are about it)."""

    heading_keys: dict[int, str] = field(default_factory=dict)
    consumed: list[tuple[int, int]] = field(default_factory=list)
    regions: list[tuple[int, int, str]] = field(default_factory=list)


def is_decision_log(path: str) -> bool:
    return bool(LOG_NAME.match(path.rsplit("/", 1)[-1]))


def is_adr(document: Document) -> bool:
    """Front matter type adr/decision, a numbered or dated file in an ADR folder, or an ADR-like file name or a
    file in an ADR folder with an ADR signal (a Status or Decision heading, a status field); never an index,
    README, summary, template or agent-instructions file."""
    folders = [part.casefold() for part in document.path.split("/")[:-1]]
    name = document.path.rsplit("/", 1)[-1]
    if is_decision_log(document.path) or NOT_ADR_NAME.match(name):
        return False
    if kind_from_type(document.front_matter.get("type") or document.front_matter.get("kind")) == "Decision":
        return True
    in_adr_folder = any(folder in ADR_FOLDERS for folder in folders) or "docs/adr" in document.path.casefold()
    if ADR_NAME.match(name) and in_adr_folder:
        return True
    if not ADR_NAME.match(name) and not in_adr_folder:
        return False
    # An ADR-like name outside an ADR folder, or an unnumbered file inside one (a summary, a glossary): a record
    # only when it reads like one.
    headings = {normalise_label(clean_heading(h.text)) for h in document.headings}
    has_field = any(
        m.group("key").casefold() in ("status", "상태") for m in FIELD_LINE.finditer(document.text, document.body_start)
    )
    return bool(headings & (STATUS_HEADINGS | DECISION_HEADINGS)) or has_field


def extract_decisions(document: Document, builder: ExtractionBuilder, masked: str) -> DecisionScan:
    scan = DecisionScan()
    if is_decision_log(document.path):
        for heading, start, end in log_sections(document, masked):
            title, title_span, date = _section_title(document, heading)
            if not title.strip():
                continue
            fields = scan_fields(masked, start, end)
            if fields.date is None and date is not None:
                fields.date = date
            key = _record(document, builder, title, title_span, fields, start, end, title_span or heading.span)
            scan.heading_keys[heading.span.start] = key
            scan.consumed.extend(fields.consumed)
            scan.regions.append((start, end, key))
    elif is_adr(document):
        start, end = document.body_start, len(document.text)
        title, title_span = _adr_title(document)
        fields = scan_fields(masked, start, end)
        status_line = _status_section(document, masked, fields)
        _front_matter_fields(document, fields)
        if status_line is not None:
            fields.date_status_line(masked, *status_line)
        if fields.date is None:
            fields.date = _file_name_date(document.path)
        key = _record(document, builder, title, title_span, fields, start, end, title_span)
        scan.consumed.extend(fields.consumed)
        scan.regions.append((start, end, key))
    return scan


def log_sections(document: Document, masked: str) -> list[tuple[Heading, int, int]]:
    """The record sections of a DECISIONS.md log: each heading of the log's record level (``##``, or ``###`` when
    the log has no ``##``) with the character range from its line to the next heading of that level or above.
    Public because the git decision graph reads a log's versions section by section with the same cut."""
    headings = document.headings
    level = 2 if any(h.level == 2 for h in headings) else 3
    sections = []
    for index, heading in enumerate(headings):
        if heading.level != level:
            continue
        start = masked.rfind("\n", 0, heading.span.start) + 1
        following = [h for h in headings[index + 1 :] if h.level <= level]
        end = masked.rfind("\n", 0, following[0].span.start) + 1 if following else len(masked)
        sections.append((heading, start, end))
    return sections


def _section_title(document: Document, heading: Heading) -> tuple[str, Span | None, Found | None]:
    """The heading without its date, the title's span, and the date found in the heading."""
    text, date = heading.text, None
    title_start, title_end = 0, len(text)
    for match in HEADING_DATE.finditer(text):
        group = "lead" if match.group("lead") else "tail"
        iso = ISO_DATE.fullmatch(match.group(group))
        if iso and valid_date(iso) and date is None:
            offset = heading.span.start + match.start(group)
            date = Found(match.group(group), offset, offset + 10, "date")
        if match.start() == 0:
            title_start = match.end()
        else:
            title_end = min(title_end, match.start())
    title = clean_heading(text[title_start:title_end]) or clean_heading(text) or text
    return title, heading_label_span(document, heading, title), date


def _adr_title(document: Document) -> tuple[str, Span | None]:
    h1 = next((h for h in document.headings if h.level == 1), None)
    raw = document.front_matter.get("title") if isinstance(document.front_matter.get("title"), str) else None
    raw = raw or (h1.text if h1 else document.title)
    title = ADR_PREFIX.sub("", clean_heading(raw)).strip() or clean_heading(raw) or document.title.strip()
    title = title or document.path.rsplit("/", 1)[-1]
    if h1 is not None and h1.text.find(title) >= 0:
        return title, heading_label_span(document, h1, title)
    return title, locate_value(document, "title", title)


def _status_section(document: Document, masked: str, fields: Fields) -> tuple[int, int, str] | None:
    """Nygard's ``## Status`` section: the first non-empty line is the status, any line may supersede. Returns
    that line's range and the heading (it may also date the record)."""
    for index, heading in enumerate(document.headings):
        if normalise_label(clean_heading(heading.text)) not in STATUS_HEADINGS:
            continue
        start = masked.find("\n", heading.span.end) + 1 or len(masked)
        following = [h for h in document.headings[index + 1 :] if h.level <= heading.level]
        end = masked.rfind("\n", 0, following[0].span.start) + 1 if following else len(masked)
        line = re.search(r"\S[^\n]*", masked[start:end])
        if line and fields.status is None:
            fields.status = parse_status(masked, start + line.start(), start + line.end(), heading.text.strip())
        fields.merge_references(masked, start, end)
        return (start + line.start(), start + line.end(), heading.text.strip()) if line else None
    return None


def _file_name_date(path: str) -> Found | None:
    """The date a record's file name starts with (2024-04-27-x.md, 20240427-x.md): the last resort."""
    name = FILENAME_DATE.match(path.rsplit("/", 1)[-1])
    named = find_date(name.group(0)) if name else None
    return Found(named, -1, -1, "file name") if named else None


def _front_matter_fields(document: Document, fields: Fields) -> None:
    front_matter = document.front_matter
    if fields.status is None and isinstance(front_matter.get("status"), str):
        value = front_matter["status"]
        span = locate_value(document, "status", value)
        found = parse_status(value, 0, len(value), "status")
        if found is not None:
            start, end = (span.start, span.end) if span else (-1, -1)
            fields.status = Found(found.value, start, end, "status")
        # MADR: "status: superseded by [ADR-0004](0004-use-x.md)" names the successor in the status itself
        for kind, reference in references(value, 0, len(value)):
            target = fields.supersedes if kind == "supersedes" else fields.superseded_by
            start, end = (span.start, span.end) if span else (-1, -1)
            target.append(Found(reference.value, start, end, "status"))
    if fields.date is None and front_matter.get("date") is not None:
        value = str(front_matter["date"])
        date = iso_date(value)
        span = locate_value(document, "date", value)
        if date:
            fields.date = Found(date, span.start if span else -1, span.start + 10 if span else -1, "date")
    for key, target in (("supersedes", fields.supersedes), ("superseded_by", fields.superseded_by)):
        values = front_matter.get(key, front_matter.get(key.replace("_", "-")))
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str | int) and str(value).strip():
                span = locate_value(document, key, str(value))
                start, end = (span.start, span.end) if span else (-1, -1)
                target.append(Found(str(value).strip(), start, end, key))


def _record(
    document: Document,
    builder: ExtractionBuilder,
    title: str,
    title_span: Span | None,
    fields: Fields,
    start: int,
    end: int,
    where: Span | None,
) -> str:
    """The Decision entity (mentioned at ``title_span``), its statements and its DecisionRecord; ``where`` is
    the span of the ``records_decision`` statement."""
    key = builder.entity(title, "Decision", title_span, explicit=True, key=_decision_key(builder, title, fields))
    builder.statement(DOCUMENT_KEY, "records_decision", "decision", key, object_is_entity=True, span=where)
    if fields.status is not None:
        builder.statement(
            key, "has_status", fields.status.label, fields.status.value, object_is_entity=False,
            span=_span(document, fields.status),
        )  # fmt: skip
    if fields.date is not None:
        builder.statement(
            key, "decided_on", fields.date.label, fields.date.value, object_is_entity=False,
            span=_span(document, fields.date), datatype="date",
        )  # fmt: skip
    for predicate, written in (("supersedes", fields.supersedes), ("superseded_by", fields.superseded_by)):
        for reference in written:
            builder.statement(
                key, f"partially_{predicate}" if reference.partial else predicate, reference.label,
                reference.value, object_is_entity=False, span=_span(document, reference),
            )  # fmt: skip
    while end > start and document.text[end - 1].isspace():
        end -= 1
    builder.decisions.append(_decision_record(key, title, fields, span_at(document, start, end)))
    return key


def _decision_key(builder: ExtractionBuilder, title: str, fields: Fields) -> str:
    """Distinct per record: the same title decided again on another date (or twice on one day, a conflict
    that must stay visible) is another decision, not a merge."""
    date = fields.date.value if fields.date else ""
    taken = {record.entity_key for record in builder.decisions}
    key, repeat = entity_key(f"{title}\x1f{date}", "decision"), 1
    while key in taken:
        repeat += 1
        key = entity_key(f"{title}\x1f{date}\x1f{repeat}", "decision")
    return key


def _decision_record(key: str, title: str, fields: Fields, span: Span) -> DecisionRecord:
    return DecisionRecord(
        entity_key=key,
        title=title,
        date=fields.date.value if fields.date else None,
        status=fields.status.value if fields.status else None,
        span=span,
        # A partial successor replaces a part only: the vault's supersession reads whole replacements.
        supersedes=tuple(dict.fromkeys(f.value for f in fields.supersedes if not f.partial)),
        superseded_by=tuple(dict.fromkeys(f.value for f in fields.superseded_by if not f.partial)),
    )


def _span(document: Document, found: Found) -> Span | None:
    return span_at(document, found.start, found.end) if found.start >= 0 else None
