"""Cheap, reliable verb relations between mentions of one sentence, as author assertions.

English: ``X uses Y``, ``X maintains Y``, ``X owns Y``, ``X works on Y``, ``X depends on Y``, ``X replaced Y``,
``X decided to ...``. Korean: ``X은/는 Y을/를 담당한다/사용한다/관리한다``. Subject and object must both be entity
mentions placed right against the verb (English) or marked by their particles (Korean), so pronouns such as
"We" never become subjects.
"""

from __future__ import annotations

import re

from engramrag.extract.builder import ExtractionBuilder, MentionIndex
from engramrag.extract.kinds import looks_like_person_name
from engramrag.extract.korean import OBJECT_PARTICLES, SUBJECT_PARTICLES, particle_after
from engramrag.extract.textutil import sentences, span_at, widen_to_links
from engramrag.vault.document import Document, Span

ENGLISH_VERBS = {
    "uses": "uses", "use": "uses", "used": "uses", "using": "uses",
    "maintains": "maintains", "maintained": "maintains", "maintain": "maintains",
    "owns": "owns", "owned": "owns", "own": "owns",
    "works on": "works_on", "worked on": "works_on", "work on": "works_on", "working on": "works_on",
    "depends on": "depends_on", "depended on": "depends_on", "depend on": "depends_on",
    "replaced": "replaces", "replaces": "replaces", "replace": "replaces",
    "leads": "leads", "manages": "manages", "managed": "manages",
    "decided": "decided", "decides": "decided",
}  # fmt: skip
ENGLISH_VERB = re.compile(
    r"(?<![A-Za-z])(" + "|".join(sorted(ENGLISH_VERBS, key=len, reverse=True)).replace(" ", r"\s+") + r")(?![A-Za-z])"
)
SUBJECT_GAP = re.compile(
    r"^(?:\s*(?:also|now|still|already|currently|mainly|primarily|will|has|have|had|is|are|was|were|just|"
    r"actually|then|which|who|that))*\s*$"
)
OBJECT_GAP = re.compile(r"^\s*(?:(?:the|a|an|our|its|their|his|her)\s+)?$")
KOREAN_VERBS = {
    "담당": "responsible_for", "맡": "responsible_for", "사용": "uses", "관리": "manages",
    "유지보수": "maintains", "유지": "maintains", "소유": "owns", "개발": "develops", "운영": "operates",
    "의존": "depends_on", "대체": "replaces", "도입": "adopts", "리드": "leads", "이끌": "leads", "이끈": "leads",
    "결정": "decided",
}  # fmt: skip
KOREAN_VERB = re.compile(
    r"(?<![가-힣])(유지보수|담당|사용|관리|유지|소유|개발|운영|의존|대체|도입|리드|결정)(?:하|했|한|합|해|할|하였)[가-힣]*"
    r"|(?<![가-힣])(맡|이끌|이끈)(?:는|고|았|아|을|은|다)?[가-힣]*"
)
PERSON_PREDICATES = frozenset({"responsible_for", "owns", "maintains", "works_on", "leads", "manages"})


def extract_relations(document: Document, builder: ExtractionBuilder, prose: str) -> None:
    mentions = MentionIndex(builder.mentions())
    for start, end in sentences(prose, document.body_start):
        inside = mentions.within(start, end)
        if not inside:
            continue
        _english(document, builder, prose, inside, start, end)
        _korean(document, builder, prose, inside, start, end)


def _english(
    document: Document, builder: ExtractionBuilder, prose: str, inside: list[tuple[Span, str]], start: int, end: int
) -> None:
    for verb in ENGLISH_VERB.finditer(prose, start, end):
        subjects = [
            (s, k) for s, k in inside if s.end <= verb.start() and SUBJECT_GAP.match(prose[s.end : verb.start()])
        ]
        if not subjects:
            continue
        subject_span, subject = max(subjects, key=lambda item: (item[0].end, item[0].end - item[0].start))
        predicate = ENGLISH_VERBS[re.sub(r"\s+", " ", verb.group(1).lower())]
        if predicate == "decided":
            clause = prose[verb.end() : end].strip().rstrip(".!?。").strip()
            if clause:
                clause_end = verb.end() + len(prose[verb.end() : end].rstrip())
                span = span_at(document, *widen_to_links(document, subject_span.start, clause_end))
                builder.statement(subject, "decided", verb.group(1), clause, object_is_entity=False, span=span)
            continue
        objects = [(s, k) for s, k in inside if s.start >= verb.end() and OBJECT_GAP.match(prose[verb.end() : s.start])]
        if not objects:
            continue
        object_span, obj = min(objects, key=lambda item: (item[0].start, -item[0].end))
        _relate(document, builder, subject, predicate, verb.group(1), obj, subject_span.start, object_span.end)


def _korean(
    document: Document, builder: ExtractionBuilder, prose: str, inside: list[tuple[Span, str]], start: int, end: int
) -> None:
    for verb in KOREAN_VERB.finditer(prose, start, end):
        stem = verb.group(1) or verb.group(2)
        predicate = KOREAN_VERBS[stem]
        object_particles = ("에", "에게") if predicate == "depends_on" else OBJECT_PARTICLES
        objects = [
            (s, k) for s, k in inside if s.end <= verb.start() and particle_after(prose, s.end) in object_particles
        ]
        if not objects and predicate != "decided":
            continue
        limit = objects[-1][0].start if objects else verb.start()
        subjects = [(s, k) for s, k in inside if s.end <= limit and particle_after(prose, s.end) in SUBJECT_PARTICLES]
        if not subjects:
            continue
        subject_span, subject = subjects[-1]
        if predicate == "decided":
            clause_start = subject_span.end + len(particle_after(prose, subject_span.end) or "")
            clause = prose[clause_start : verb.start()].strip()
            if clause:
                span = span_at(document, *widen_to_links(document, subject_span.start, verb.end()))
                builder.statement(subject, "decided", verb.group(), clause, object_is_entity=False, span=span)
            continue
        obj = objects[-1][1]
        if obj != subject:
            _relate(document, builder, subject, predicate, verb.group(), obj, subject_span.start, verb.end())


def _relate(
    document: Document,
    builder: ExtractionBuilder,
    subject: str,
    predicate: str,
    label: str,
    obj: str,
    start: int,
    end: int,
) -> None:
    if subject == obj:
        return
    span = span_at(document, *widen_to_links(document, start, end))  # a mention in a link: take the whole link
    builder.statement(subject, predicate, label, obj, object_is_entity=True, span=span)
    if (
        predicate in PERSON_PREDICATES
        and builder.kind_of(subject) == "Concept"
        and looks_like_person_name(builder.label_of(subject))
    ):
        builder.set_kind(subject, "Person")
