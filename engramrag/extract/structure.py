"""Headings (sections and subsections) and links (wiki, Markdown to notes, external URLs)."""

from __future__ import annotations

import re
from urllib.parse import unquote

from engramrag.extract.builder import DOCUMENT_KEY, ExtractionBuilder
from engramrag.extract.kinds import guess_kind
from engramrag.extract.textutil import URL, link_text_range, normalise_label, span_at
from engramrag.vault.document import Document, Heading, Link, Span

NOTE_SUFFIX = re.compile(r"\.(?:md|markdown)$", re.IGNORECASE)
OTHER_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,5}$")
NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVX]+\.)\s+")
WIKI_IN_HEADING = re.compile(r"\[\[([^\[\]|#]+)(?:#[^\[\]|]*)?(?:\|([^\[\]]+))?\]\]")
MARKDOWN_IN_HEADING = re.compile(r"\[([^\[\]]+)\]\([^()]*\)")
MARKUP = re.compile(r"\*\*|__|`|~~|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)|(?:^|\s)#[\w/-]+")
# Section names that are structure, not things: they would otherwise become hubs shared by every note.
GENERIC_LABELS = frozenset(
    (
        "context", "decision", "decisions", "decision outcome", "consequences", "status", "overview", "summary",
        "notes", "note", "references", "links", "background", "introduction", "details", "discussion", "options",
        "considered options", "decision drivers", "pros and cons of the options", "positive consequences",
        "negative consequences", "next steps", "action items", "todo", "tasks", "open questions", "questions",
        "agenda", "attendees", "goals", "non-goals", "motivation", "problem", "solution", "alternatives", "risks",
        "timeline", "changelog", "history", "appendix", "see also", "related", "more information",
        "context and problem statement", "problem statement", "pros and cons", "links and references",
        "개요", "배경", "결정", "결정 사항", "결과", "상태", "참고", "참고 자료", "요약", "메모", "논의", "할 일",
        "다음 단계", "액션 아이템", "안건", "참석자", "목표", "문제", "해결책", "대안", "위험", "일정", "관련 문서",
        "회의록", "타임라인", "원인", "조치", "영향", "후속 조치", "잘 된 점", "잘한 점", "아쉬운 점", "개선할 점",
        "개선할 점과 조치", "배운 점", "결론", "timeline", "root cause", "impact", "lessons learned",
        "what went well", "action items", "follow-ups",
    )
)  # fmt: skip


def clean_heading(text: str) -> str:
    """The heading as a label: link syntax reduced to its visible text, emphasis and numbering removed."""
    text = WIKI_IN_HEADING.sub(lambda m: (m.group(2) or m.group(1).rsplit("/", 1)[-1]).strip(), text)
    text = MARKDOWN_IN_HEADING.sub(lambda m: m.group(1), text)
    text = MARKUP.sub(" ", text)
    text = NUMBERING.sub("", text.strip())
    text = re.sub(r"\s*\([^()]*\)\s*$", "", text)  # "인제스천 (박민지)": the owner in brackets is not the topic
    return re.sub(r"\s+", " ", text).strip().rstrip(":：").strip()


def is_generic_heading(label: str) -> bool:
    return normalise_label(label) in GENERIC_LABELS


def extract_headings(document: Document, builder: ExtractionBuilder, decision_keys: dict[int, str]) -> None:
    """``has_section`` from the document to each top-level heading, ``has_subsection`` from a heading to the
    headings nested under it. A heading equal to the title is the document itself."""
    title = normalise_label(document.title)
    ancestors: list[tuple[int, str]] = []
    for heading in document.headings:
        while ancestors and ancestors[-1][0] >= heading.level:
            ancestors.pop()
        key = _heading_entity(document, builder, heading, title, decision_keys)
        if key is None:
            continue
        if key != DOCUMENT_KEY:
            parent = ancestors[-1][1] if ancestors else DOCUMENT_KEY
            if parent == DOCUMENT_KEY:
                builder.statement(parent, "has_section", "section", key, object_is_entity=True, span=heading.span)
            else:
                builder.statement(parent, "has_subsection", "subsection", key, object_is_entity=True, span=heading.span)
        ancestors.append((heading.level, key))


def _heading_entity(
    document: Document, builder: ExtractionBuilder, heading: Heading, title: str, decision_keys: dict[int, str]
) -> str | None:
    if heading.span.start in decision_keys:
        return decision_keys[heading.span.start]
    label = clean_heading(heading.text)
    if normalise_label(heading.text) == title or normalise_label(label) == title:
        title_span = heading_label_span(document, heading, document.title)
        if title_span is not None:
            builder.add_span(DOCUMENT_KEY, title_span)
        return DOCUMENT_KEY
    if not normalise_label(label) or is_generic_heading(label):
        return None
    return builder.entity(label, guess_kind(label), heading_label_span(document, heading, label))


def heading_label_span(document: Document, heading: Heading, label: str) -> Span | None:
    """The span of ``label`` inside the heading, or None when markup makes it not a substring (the heading's own
    span still locates the statement)."""
    at = heading.text.find(label)
    if at < 0:
        return None
    return span_at(document, heading.span.start + at, heading.span.start + at + len(label))


def note_name(target: str) -> str:
    """``people/Minji%20Park.md#Role`` → ``Minji Park``."""
    path = unquote(target.split("#", 1)[0].split("?", 1)[0]).rstrip("/")
    return NOTE_SUFFIX.sub("", path.rsplit("/", 1)[-1]).strip()


def link_entity(
    document: Document, builder: ExtractionBuilder, link: Link, kind: str | None = None, explicit: bool = False
) -> str | None:
    """The entity a link points at (created or merged), or None for links that are not to notes or the web."""
    visible_start, visible_end = link_text_range(document.text, link)
    shown = document.text[visible_start:visible_end]
    visible = span_at(document, visible_start, visible_end) if normalise_label(shown) else None
    if link.style == "markdown" and URL.fullmatch(link.target):
        aliases = (link.alias,) if link.alias and link.alias != link.target else ()
        return builder.entity(link.target, kind or "Artifact", visible, explicit=explicit, aliases=aliases)
    target_path = link.target.split("#", 1)[0]
    is_note = bool(NOTE_SUFFIX.search(target_path)) or (link.style == "wiki" and not OTHER_SUFFIX.search(target_path))
    if link.style == "markdown" and (not is_note or "://" in link.target or link.target.startswith("mailto:")):
        return None
    name = note_name(link.target)
    if not normalise_label(name):
        return None
    default = "Document" if is_note else "Artifact"
    differ = [alias for alias in (link.alias, shown) if alias and normalise_label(alias) != normalise_label(name)]
    aliases = tuple(dict.fromkeys(differ))
    return builder.entity(name, kind or default, visible, explicit=explicit, aliases=aliases)


def extract_links(document: Document, builder: ExtractionBuilder, masked: str) -> None:
    """``links_to`` from the document to every linked note and web address, with the link's span."""
    for link in document.links:
        key = link_entity(document, builder, link)
        if key is not None and key != DOCUMENT_KEY:
            builder.statement(DOCUMENT_KEY, "links_to", "link", key, object_is_entity=True, span=link.span)
    covered = [(link.span.start, link.span.end) for link in document.links]
    for match in URL.finditer(masked, document.body_start):
        start, end = match.start(), match.end()
        while end > start and masked[end - 1] in ".,;:!?)'\"":
            end -= 1
        if any(s <= start < e for s, e in covered):
            continue
        span = span_at(document, start, end)
        key = builder.entity(document.text[start:end], "Artifact", span)
        builder.statement(DOCUMENT_KEY, "links_to", "link", key, object_is_entity=True, span=span)
