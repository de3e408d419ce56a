"""The replay backend: precomputed LLM extractions read back from a file, so the graph an LLM extraction makes
can be built and measured offline, through the same statement and provenance path as every other backend.

The file is HippoRAG's OpenIE output: ``{"docs": [{"title", "text", "passage", "extracted_entities": [str],
"extracted_triples": [[subject, relation, object]]}]}``, one entry per passage. A document is matched to its
entry by its text (title and body, Markdown heading markers removed, whitespace collapsed), not by its path.

The LLM output carries neither kinds nor positions. Kinds are therefore guessed only where the label's shape
leaves no doubt (dates, numbers, amounts → Quantity) and are Concept otherwise; every span is looked up in the
document text, and an entity or triple that cannot be found there gets no span rather than an invented one.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from engramrag.extract.base import Extraction
from engramrag.extract.builder import DOCUMENT_KEY, ExtractionBuilder
from engramrag.extract.frontmatter import locate_value
from engramrag.extract.kinds import kind_from_type
from engramrag.extract.quantities import is_quantity
from engramrag.extract.structure import heading_label_span
from engramrag.extract.textutil import normalise_label, sentences, snake_case, span_at, strip_range
from engramrag.vault.document import Document, Span

HEADING_MARKER = re.compile(r"^[ \t]*#{1,6}(?=[ \t]|$)", re.MULTILINE)
FIRST_HEADING = re.compile(r"\A\s*#{1,6}[ \t][^\n]*(?:\n|\Z)")
HIPPORAG_NAME = re.compile(r"_ner_(?P<model>.+?)(?:_\d+)?$")

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR = r"\d{1,4}(?:\s*(?:BC|BCE|AD|CE))?"
_NUMBER = r"[-+~]?\d[\d,]*(?:\.\d+)?"
_SCALE = r"(?:\s*(?:hundred|thousand|million|billion|trillion|[kmb]n?))?"
_CURRENCY_WORDS = r"(?:dollars?|euros?|pounds?|yen|won|yuan|rupees?|francs?|USD|EUR|GBP|JPY|KRW)"
QUANTITY_LABEL = re.compile(
    rf"(?:(?:{_DAY}\s+)?{_MONTH}(?:\s+{_DAY})?,?\s+{_YEAR}"  # January 1960, 3 March 1901, Mar. 3, 1901
    rf"|{_MONTH}\s+{_DAY}|{_DAY}\s+(?:of\s+)?{_MONTH}"  # March 3, 3rd of March
    rf"|\d{{3,4}}s|'\d0s|\d{{3,4}}\s*[-–—]\s*\d{{2,4}}|{_YEAR}"  # 1960s, '60s, 1960–63, 1963, 300 BC
    rf"|[$€£¥₩]\s?{_NUMBER}{_SCALE}|{_NUMBER}{_SCALE}(?:\s*(?:%|percent|per cent|{_CURRENCY_WORDS}))?)",
    re.IGNORECASE,
)
# Letters that take particles or form compounds without a space: a label ending next to one still stands alone.
_UNSPACED_SCRIPT = re.compile(r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u9fff\uac00-\ud7a3]")


class NoReplayExtraction(LookupError):
    """The replay file has no entry for this document. The lifecycle records the document as failed (and tries
    it again on the next run), like any other extractor error."""


@dataclass(frozen=True)
class ReplayEntry:
    """One passage's precomputed extraction, with the malformed triples already dropped (and counted)."""

    title: str
    entities: tuple[str, ...]
    triples: tuple[tuple[str, str, str], ...]
    malformed_triples: int = 0


class ReplayExtractor:
    """Reads an OpenIE JSON file once and answers each document with its entry, as an Extraction."""

    name = "replay"
    version = "1.0.0"

    def __init__(self, path: str | Path, model: str | None = None) -> None:
        self.path = Path(path)
        self.model = model or model_from_filename(self.path)
        self.entries: list[ReplayEntry] = []
        self.malformed_triples = 0
        self.malformed_entities = 0
        self._by_passage: dict[str, ReplayEntry] = {}
        self._by_text: dict[str, list[ReplayEntry]] = {}
        self._load(json.loads(self.path.read_text(encoding="utf-8")))

    def _load(self, data: Any) -> None:
        docs = data.get("docs") if isinstance(data, dict) else data
        if not isinstance(docs, list):
            raise ValueError(f"{self.path}: expected {{'docs': [...]}} of OpenIE entries, found no 'docs' list")
        for raw in docs:
            if not isinstance(raw, dict):
                continue
            title, text = _string(raw.get("title")), _string(raw.get("text"))
            passage = _string(raw.get("passage"))
            entry = self._entry(raw, title)
            keys = {passage_key(passage)} if passage else set()
            if title or text:
                keys.add(passage_key(f"{title}\n{text}"))
            for key in keys - {""}:
                self._by_passage.setdefault(key, entry)  # a repeated passage keeps its first extraction
            if text:
                self._by_text.setdefault(passage_key(text), []).append(entry)
            self.entries.append(entry)

    def _entry(self, raw: dict[str, Any], title: str) -> ReplayEntry:
        entities = []
        for label in raw.get("extracted_entities") or []:
            if isinstance(label, str) and label.strip():
                entities.append(label.strip())
            else:
                self.malformed_entities += 1
        triples, malformed = [], 0
        for triple in raw.get("extracted_triples") or []:
            if isinstance(triple, list | tuple) and len(triple) == 3 and all(_string(part) for part in triple):
                subject, relation, obj = (part.strip() for part in triple)
                triples.append((subject, relation, obj))
            else:
                malformed += 1
        self.malformed_triples += malformed
        return ReplayEntry(title, tuple(entities), tuple(triples), malformed)

    def lookup(self, document: Document) -> ReplayEntry | None:
        """The entry whose title and text are the document's; failing that, the one entry whose text alone is
        the document's body (with or without its first heading)."""
        body = document.body
        for key in (passage_key(body), passage_key(f"{document.title}\n{body}")):
            if key in self._by_passage:
                return self._by_passage[key]
        for key in (passage_key(body), passage_key(FIRST_HEADING.sub("", body, count=1))):
            found = self._by_text.get(key, [])
            if len(found) == 1:
                return found[0]
        return None

    def extract(self, document: Document) -> Extraction:
        entry = self.lookup(document)
        if entry is None:
            raise NoReplayExtraction(
                f"{document.path}: the replay file {self.path} has no precomputed extraction for this document "
                "(matched on title + text and on the text alone); replay only covers the passages the file was "
                "made from, so extract this document with another backend or regenerate the file"
            )
        builder = ExtractionBuilder(document)
        add_document_entity(document, builder)
        finder = _Finder(document)
        for label in entry.entities:
            _add_entity(builder, finder, label)
        for subject_label, relation, object_label in entry.triples:
            subject = _add_entity(builder, finder, subject_label)
            obj = _add_entity(builder, finder, object_label)
            span = finder.sentence_with(subject_label, object_label) or finder.first(subject_label)
            builder.statement(subject, relation_id(relation), relation, obj, object_is_entity=True, span=span)
        extraction = builder.build(self.name, self.version)
        extraction.model = self.model
        return extraction


def passage_key(text: str) -> str:
    """What a passage is matched on: heading markers removed, whitespace collapsed, case kept."""
    return " ".join(HEADING_MARKER.sub(" ", text).split())


def model_from_filename(path: str | Path) -> str:
    """``openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json`` → ``gpt-3.5-turbo-1106``; any other
    name gives its stem without an ``openie_`` prefix (``openie_gpt35.json`` → ``gpt35``)."""
    stem = Path(path).stem
    match = HIPPORAG_NAME.search(stem)
    if match:
        return match.group("model")
    return stem.removeprefix("openie_") or stem


def relation_id(relation: str) -> str:
    """The predicate of a relation as worded: ``published by`` → ``published_by``, ``is fiancée of`` →
    ``is_fiancee_of``. Accents are folded to ASCII; Hangul is kept, as the rules extractor keeps it."""
    decomposed = unicodedata.normalize("NFKD", relation)
    folded = unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))
    slug = snake_case(folded)
    return "related_to" if slug == "value" and "value" not in folded.casefold() else slug


def guess_kind(label: str) -> str:
    """Quantity for labels that are only a date, a year, a number or an amount; Concept for everything else,
    since the LLM output names no kinds and a wrong kind would veto a correct merge later."""
    label = label.strip()
    return "Quantity" if QUANTITY_LABEL.fullmatch(label) or is_quantity(label) else "Concept"


def add_document_entity(document: Document, builder: ExtractionBuilder) -> None:
    """The document entity (key ``doc``), as the rules extractor makes it: titled, kind from front matter
    ``type`` or Document, located at the front matter title and at a heading that repeats the title."""
    front_matter = document.front_matter
    kind = kind_from_type(front_matter.get("type") or front_matter.get("kind")) or "Document"
    span = locate_value(document, "title", document.title) if "title" in front_matter else None
    label = document.title.strip() or document.path.rsplit("/", 1)[-1]
    builder.entity(label, kind, span, explicit=True, key=DOCUMENT_KEY)
    title = normalise_label(document.title)
    for heading in document.headings:
        if normalise_label(heading.text) == title:
            heading_span = heading_label_span(document, heading, document.title)
            if heading_span is not None:
                builder.add_span(DOCUMENT_KEY, heading_span)


def _add_entity(builder: ExtractionBuilder, finder: _Finder, label: str) -> str:
    key = builder.entity(label, guess_kind(label))
    for span in finder.mentions(label):
        builder.add_span(key, span)
    return key


class _Finder:
    """Where labels occur in one document's body: exact occurrences first, case-insensitive ones when there are
    none; and the smallest sentence or line that holds two labels."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.text = document.text
        self.start = document.body_start
        self._ranges: list[tuple[int, int]] | None = None

    def occurrences(self, label: str, ignore_case: bool) -> list[tuple[int, int]]:
        pattern = _label_pattern(label, ignore_case)
        if pattern is None:
            return []
        return [m.span() for m in pattern.finditer(self.text, self.start) if _stands_alone(self.text, *m.span())]

    def mentions(self, label: str) -> list[Span]:
        found = self.occurrences(label, False) or self.occurrences(label, True)
        return [span_at(self.document, start, end) for start, end in found]

    def first(self, label: str) -> Span | None:
        mentions = self.mentions(label)
        return mentions[0] if mentions else None

    def sentence_with(self, first: str, second: str) -> Span | None:
        first_at, second_at = self.occurrences(first, True), self.occurrences(second, True)
        if not first_at or not second_at:
            return None
        holding = [
            (end - start, start, end)
            for start, end in self.ranges()
            if _holds(first_at, start, end) and _holds(second_at, start, end)
        ]
        if not holding:
            return None
        _, start, end = min(holding)
        return span_at(self.document, start, end)

    def ranges(self) -> list[tuple[int, int]]:
        """Sentences and whole lines of the body; a line catches pairs that a sentence split (``Jan. 1960``)
        separates."""
        if self._ranges is None:
            lines = []
            for line in re.finditer(r"[^\n]+", self.text[self.start :]):
                start, end = self.start + line.start(), self.start + line.end()
                marker = HEADING_MARKER.match(self.text, start, end)
                start, end = strip_range(self.text, marker.end() if marker else start, end)
                if end > start:
                    lines.append((start, end))
            self._ranges = sorted(set(sentences(self.text, self.start)) | set(lines))
        return self._ranges


@lru_cache(maxsize=8192)
def _label_pattern(label: str, ignore_case: bool) -> re.Pattern[str] | None:
    words = label.split()
    if not words:
        return None
    return re.compile(r"\s+".join(map(re.escape, words)), re.IGNORECASE if ignore_case else 0)


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is not part of a longer word (``1963`` in ``19634``, ``Paris`` in
    ``Parisian``). Hangul and CJK neighbours are allowed: particles attach to names without a space."""
    before = text[start - 1] if start > 0 else ""
    return not (_glued(before, text[start]) or _glued(text[end - 1], text[end : end + 1]))


def _holds(occurrences: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(start <= a and b <= end for a, b in occurrences)


def _glued(left: str, right: str) -> bool:
    return bool(left and right) and all(c.isalnum() and not _UNSPACED_SCRIPT.match(c) for c in (left, right))


def _string(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
