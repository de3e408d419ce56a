"""Co-occurrence: entities mentioned in the same sentence, as machine analysis rather than author assertion."""

from __future__ import annotations

from engramrag.extract.builder import ExtractionBuilder, MentionIndex
from engramrag.extract.textutil import sentences, span_at, widen_to_links
from engramrag.vault.document import Document

MAX_ENTITIES_PER_SENTENCE = 6  # so that one long list line yields at most 15 pairs


def extract_cooccurrence(document: Document, builder: ExtractionBuilder, prose: str) -> None:
    """``co_occurs_with`` for each pair of distinct entities in a sentence (subject key < object key), with
    the sentence as the span. Overlapping mentions count once (the first, longest one)."""
    mentions = MentionIndex(builder.mentions())
    for start, end in sentences(prose, document.body_start):
        chosen: list[str] = []
        taken: list[tuple[int, int]] = []
        for span, key in mentions.within(start, end):
            if key in chosen or any(s < span.end and span.start < e for s, e in taken):
                continue
            chosen.append(key)
            taken.append((span.start, span.end))
            if len(chosen) == MAX_ENTITIES_PER_SENTENCE:
                break
        if len(chosen) < 2:
            continue
        sentence = span_at(document, *widen_to_links(document, start, end))
        for index, first in enumerate(chosen):
            for second in chosen[index + 1 :]:
                subject, obj = sorted((first, second))
                builder.statement(
                    subject,
                    "co_occurs_with",
                    "same sentence",
                    obj,
                    object_is_entity=True,
                    span=sentence,
                    role="analysis",
                )
