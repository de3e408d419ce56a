"""The ``openai`` extractor: entities, relations and dated decisions asked of any OpenAI-compatible server.

A document is asked about segment by segment (see ``segments``), in order, each later segment told the entity
labels the earlier ones found so that "she" or a short name is tied to the right label. Every answer is looked
up in the response cache first and written to it the moment it is paid for.

Answers become entities and statements through the same ``ExtractionBuilder`` as every other backend. Every
item carries the quote it came from; the quote is looked up in its segment and gives the span. A quote that is
not in the text is counted in ``unlocated_quotes`` and its item kept without a span: the model's word is kept,
a position is never invented; a dated decision whose quote is not found is kept as a record without a span.
Statements are what the document states (role ``assertion``); predicates are the relation's wording in snake_case,
as in the replay backend. The custom kinds the entities use leave with the extraction, each with the core kind it was
declared under, so that the document graph and the catalog keep the declaration whatever the configuration later is.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engramrag.extract.base import CORE_KINDS, DecisionRecord, Extraction
from engramrag.extract.builder import DOCUMENT_KEY, ExtractionBuilder, entity_key, identity
from engramrag.extract.decision_fields import parse_status
from engramrag.extract.llm import prompt
from engramrag.extract.llm.cache import CacheKey, ResponseCache, ResponseCacheError, input_hash
from engramrag.extract.llm.calls import CallRecord, LLMExtractionFailed
from engramrag.extract.llm.client import ChatFailed, StructuredChat
from engramrag.extract.llm.config import LLMConfig
from engramrag.extract.llm.segments import Segment, locate, locate_within, split_segments
from engramrag.extract.replay import add_document_entity, guess_kind, relation_id
from engramrag.extract.textutil import TextViews, span_at
from engramrag.vault.document import Document, Span

ISO_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
OUTPUT_RATIO = 0.4  # answer tokens per segment token, for estimates: quotes repeat a good part of the text
MIN_OUTPUT_TOKENS = 64


@dataclass(frozen=True)
class Estimate:
    """What extracting one document would take, before anything is paid: the segments, how many of them the
    cache already answers, and the tokens (in and out) of the others."""

    segments: int
    tokens_in: int
    tokens_out: int
    cached_segments: int


class OpenAIExtractor:
    """Extracts documents with a chat model; safe to call from several threads at once (``concurrency``)."""

    name = "openai"

    def __init__(self, config: LLMConfig, cache: ResponseCache, chat: StructuredChat | None = None) -> None:
        self.config = config
        self.cache = cache
        self.model = config.model
        self.concurrency = config.concurrency
        self.chat = chat or StructuredChat(config)
        self._kinds = {kind.casefold(): kind for kind in config.kinds}
        self._parents = {kind: parent for kind, parent in config.custom_kinds if kind not in CORE_KINDS}
        self._system = prompt.system_prompt(config.custom_kinds)
        self._schema = prompt.response_schema(config.kinds)

    @property
    def version(self) -> str:
        """The prompt version: answers to another prompt are neither reused nor mixed in."""
        return prompt.PROMPT_VERSION

    @property
    def usage_missing(self) -> bool:
        """Whether the server answered without token usage this run, so its tokens (and cost) read 0."""
        return self.chat.usage_missing

    @property
    def server_unreachable(self) -> str | None:
        """What the run's breaker said when it found the server unreachable (and stopped sending), else None."""
        breaker = self.chat.breaker
        return breaker.message() if breaker.is_open else None

    def extract(self, document: Document) -> Extraction:
        """The document's extraction, or LLMExtractionFailed (carrying every call made) when a segment gets no
        usable answer after the retries."""
        segments = self._segments(document)
        reader = _Reader(document, self._kinds, self._parents)
        hints: dict[str, tuple[str, str]] = {}
        calls: list[CallRecord] = []
        for segment in segments:
            answer = self._answer(document, segment, len(segments), _hint_list(hints), calls)
            for label, kind in reader.read(segment, answer):
                hints.setdefault(identity(label), (label, kind))
        extraction = reader.finish(self.name, self.version)
        extraction.model = self.model
        paid = [call for call in calls if not call.cached]
        extraction.tokens_in = sum(call.tokens_in for call in paid)
        extraction.tokens_out = sum(call.tokens_out for call in paid)
        extraction.calls = calls
        return extraction

    def estimate(self, document: Document) -> Estimate:
        """Segments, cached segments and estimated tokens of what extracting the document would pay; no request
        is made. Later segments' hints come from cached answers while there are some; after the first segment
        the cache cannot answer, a later segment counts as cached when any answer is stored under its key."""
        segments = self._segments(document)
        hints: dict[str, tuple[str, str]] = {}
        hints_known, cached_segments, tokens_in, tokens_out = True, 0, 0, 0
        for segment in segments:
            hint_list = _hint_list(hints)
            key = self._key(document, segment)
            cached = self.cache.get(key, input_hash(segment.text, hint_list) if hints_known else None)
            if cached is not None:
                cached_segments += 1
                if hints_known:
                    for item in cached.answer.get("entities", []):
                        label, kind = str(item.get("label", "")).strip(), _kind(self._kinds, item.get("kind"))
                        if label:
                            hints.setdefault(identity(label), (label, kind))
                continue
            hints_known = False
            user = prompt.user_message(
                document.path, document.title, segment.index, len(segments), hint_list, segment.text
            )
            tokens_in += prompt.estimate_tokens(self._system + user)
            tokens_out += max(MIN_OUTPUT_TOKENS, round(prompt.estimate_tokens(segment.text) * OUTPUT_RATIO))
        return Estimate(len(segments), tokens_in, tokens_out, cached_segments)

    def close(self) -> None:
        self.chat.close()

    # one segment ------------------------------------------------------------------------------------------

    def _segments(self, document: Document) -> list[Segment]:
        return split_segments(document, self.config.segment_chars, self.config.max_segments)

    def _key(self, document: Document, segment: Segment) -> CacheKey:
        return CacheKey(document.body_hash, segment.index, self.model, prompt.PROMPT_VERSION)

    def _answer(
        self,
        document: Document,
        segment: Segment,
        count: int,
        hints: list[tuple[str, str]],
        calls: list[CallRecord],
    ) -> dict[str, Any]:
        """The answer for one segment, from the cache or the server; the call is appended to ``calls``."""
        called_at, started = datetime.now(UTC), time.perf_counter()
        key = self._key(document, segment)
        fingerprint = input_hash(segment.text, hints)

        def record(**values: Any) -> CallRecord:
            base = {"path": document.path, "body_hash": document.body_hash, "segment": segment.index,
                    "segments": count, "model": self.model, "prompt_version": key.prompt_version, "tokens_in": 0,
                    "tokens_out": 0, "latency_ms": round((time.perf_counter() - started) * 1000.0, 3),
                    "requests": 0, "cached": False, "status": "ok", "error": None, "called_at": called_at}  # fmt: skip
            return CallRecord(**(base | values))

        try:
            cached = self.cache.get(key, fingerprint)
        except ResponseCacheError as error:
            raise LLMExtractionFailed(f"{document.path}: {error}", calls) from error
        if cached is not None:
            calls.append(record(cached=True))
            return cached.answer
        user = prompt.user_message(document.path, document.title, segment.index, count, hints, segment.text)
        where = f"{document.path}, segment {segment.index + 1} of {count}"
        try:
            answer = self.chat.ask(prompt.messages(self._system, user), self._schema)
        except ChatFailed as failed:
            if failed.requests:  # a segment the open breaker kept from the server was not a call: nothing to record
                calls.append(record(tokens_in=failed.tokens_in, tokens_out=failed.tokens_out,
                                    requests=failed.requests, latency_ms=failed.latency_ms, status="failed",
                                    error=failed.reason))  # fmt: skip
            raise LLMExtractionFailed(f"{where}: {failed.reason}", calls) from None
        calls.append(record(tokens_in=answer.tokens_in, tokens_out=answer.tokens_out, requests=answer.requests,
                            latency_ms=answer.latency_ms))  # fmt: skip
        try:
            self.cache.put(key, fingerprint, answer.data, answer.tokens_in, answer.tokens_out, answer.requests,
                           answer.latency_ms)  # fmt: skip
        except ResponseCacheError as error:
            reason = f"{where}: the answer was paid for but could not be kept: {error}"
            raise LLMExtractionFailed(reason, calls) from error
        return answer.data


class _Reader:
    """Turns the answers of one document's segments into its extraction."""

    def __init__(self, document: Document, kinds: dict[str, str], parents: dict[str, str]) -> None:
        self.document = document
        self.kinds = kinds
        self.parents = parents
        self.builder = ExtractionBuilder(document)
        self.unlocated = 0
        self._decisions: dict[tuple[str, str | None], str] = {}
        self._records: dict[str, DecisionRecord] = {}  # one per decision: the first located, else the first
        add_document_entity(document, self.builder)

    def read(self, segment: Segment, answer: dict[str, Any]) -> list[tuple[str, str]]:
        """Add one segment's answer; returns the (label, kind) of the entities it named, for later hints."""
        named = []
        for item in answer.get("entities", []):
            label = _text(item.get("label"))
            if not label:
                continue
            where = self._quote(segment, item.get("quote"))
            kind = _kind(self.kinds, item.get("kind"))
            self.builder.entity(label, kind, self._mention(label, where))
            named.append((label, kind))
        for item in answer.get("relations", []):
            self._relation(segment, item)
        for item in answer.get("decisions", []):
            self._decision(segment, item)
        return named

    def finish(self, extractor: str, version: str) -> Extraction:
        self.builder.sweep(TextViews.of(self.document).prose)
        records = list(self._records.values())
        self.builder.decisions.extend(record for record in records if record.span is not None)
        extraction = self.builder.build(extractor, version)
        # Unlocated decisions come after the located ones, in the order the answers named them.
        extraction.decisions.extend(record for record in records if record.span is None)
        extraction.unlocated_quotes = self.unlocated
        used = {entity.kind for entity in extraction.entities}
        extraction.custom_kinds = {kind: parent for kind, parent in self.parents.items() if kind in used}
        return extraction

    def _relation(self, segment: Segment, item: dict[str, Any]) -> None:
        subject_label, relation = _text(item.get("subject")), _text(item.get("relation"))
        obj = _text(item.get("object"))
        if not (subject_label and relation and obj):
            return
        where = self._quote(segment, item.get("quote"))
        subject = self._entity(subject_label, where)
        is_entity = bool(item.get("object_is_entity"))
        if is_entity:
            obj = self._entity(obj, where)
        self.builder.statement(
            subject, relation_id(relation), relation, obj, object_is_entity=is_entity, span=self._span(where)
        )

    def _decision(self, segment: Segment, item: dict[str, Any]) -> None:
        title = _text(item.get("title"))
        if not title:
            return
        where = self._quote(segment, item.get("quote"))
        date = _iso_day(item.get("date"))
        raw_status = _text(item.get("status"))
        found = parse_status(raw_status, 0, len(raw_status), "status") if raw_status else None
        status = found.value if found else None
        identity_key = (identity(title), date)
        key = self._decisions.get(identity_key)
        if key is None:
            key = self._decisions[identity_key] = entity_key(f"{title}\x1f{date or ''}", "decision")
        builder, quote_span = self.builder, self._span(where)
        builder.entity(title, "Decision", self._mention(title, where), explicit=True, key=key)
        builder.statement(DOCUMENT_KEY, "records_decision", "decision", key, object_is_entity=True, span=quote_span)
        if status is not None:
            span = self._span(self._within(raw_status, where)) or quote_span
            builder.statement(key, "has_status", "status", status, object_is_entity=False, span=span)
        if date is not None:
            span = self._span(self._within(date, where)) or quote_span
            builder.statement(key, "decided_on", "date", date, object_is_entity=False, span=span, datatype="date")
        known = self._records.get(key)
        if known is None or (known.span is None and quote_span is not None):
            self._records[key] = DecisionRecord(key, title, date, status, quote_span)

    # locating ---------------------------------------------------------------------------------------------

    def _quote(self, segment: Segment, quote: Any) -> tuple[int, int] | None:
        """Where the item's quote is in the document, or None (counted) when the segment does not contain it."""
        found = locate(segment, _text(quote))
        if found is None:
            self.unlocated += 1
        return found

    def _within(self, label: str, where: tuple[int, int] | None) -> tuple[int, int] | None:
        return locate_within(self.document.text, label, *where) if where is not None else None

    def _mention(self, label: str, where: tuple[int, int] | None) -> Span | None:
        """The label inside its quote, else the whole quote: where the model found the entity."""
        return self._span(self._within(label, where) or where)

    def _entity(self, label: str, where: tuple[int, int] | None) -> str:
        """The key of an entity a relation names; one the answer did not list is added with a guessed kind."""
        key = self.builder.key_for(label)
        mention = self._span(self._within(label, where))
        if key is None:
            return self.builder.entity(label, guess_kind(label), mention)
        if mention is not None:
            self.builder.add_span(key, mention)
        return key

    def _span(self, where: tuple[int, int] | None) -> Span | None:
        return span_at(self.document, *where) if where is not None else None


def _hint_list(hints: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    return list(hints.values())[: prompt.MAX_HINTS]


def _kind(kinds: dict[str, str], raw: Any) -> str:
    """A core or declared custom kind as the model named it (any case); anything else is Concept, the kind that
    claims nothing, since an unknown kind would stop resolution."""
    return kinds.get(_text(raw).casefold(), "Concept")


def _iso_day(raw: Any) -> str | None:
    match = ISO_DAY.fullmatch(_text(raw))
    if match is None or not (1 <= int(match.group(2)) <= 12 and 1 <= int(match.group(3)) <= 31):
        return None
    return match.group(0)


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


__all__ = ["Estimate", "LLMExtractionFailed", "OpenAIExtractor"]
