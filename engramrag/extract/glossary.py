"""Defined terms in list items: ``- **BL** (B/L, bill of lading, 선하증권) — the carrier's receipt ...``.

The bold term becomes an entity, the bracketed names its aliases (often the other language's name, which
helps resolution), and the first sentence of the definition a ``defined_as`` literal.
"""

from __future__ import annotations

import re

from engramrag.extract.builder import ExtractionBuilder
from engramrag.extract.kinds import guess_kind
from engramrag.extract.textutil import continuation_end, normalise_label, span_at, strip_range
from engramrag.vault.document import Document

DEFINITION = re.compile(
    r"^[ \t]*[-*+][ \t]+(\*\*|__)(?P<term>[^*_\n]{1,60}?)\1[ \t]*(?:\((?P<aliases>[^()\n]{1,80})\)[ \t]*)?"
    r"(?:—|–|--?)[ \t]+(?P<definition>\S[^\n]*)$",
    re.MULTILINE,
)
ALIAS = re.compile(r"[^,;]+")
FIRST_SENTENCE = re.compile(r".*?(?:[.!?。](?=\s|$)|$)", re.DOTALL)
MAX_ALIAS_WORDS = 5


def extract_definitions(document: Document, builder: ExtractionBuilder, masked: str) -> None:
    for match in DEFINITION.finditer(masked, document.body_start):
        term_start, term_end = match.span("term")
        term = document.text[term_start:term_end].strip()
        if not normalise_label(term):
            continue
        key = builder.entity(term, guess_kind(term), span_at(document, term_start, term_start + len(term)))
        if match.group("aliases"):
            for alias in ALIAS.finditer(masked, *match.span("aliases")):
                start, end = strip_range(document.text, alias.start(), alias.end())
                name = document.text[start:end]
                if len(name) >= 2 and len(name.split()) <= MAX_ALIAS_WORDS and normalise_label(name):
                    builder.add_alias(key, name)
                    builder.add_span(key, span_at(document, start, end))
        definition_start = match.start("definition")
        paragraph_end = continuation_end(masked, match.end("definition"), (DEFINITION,))
        sentence = FIRST_SENTENCE.match(masked, definition_start, paragraph_end)
        definition_end = strip_range(document.text, definition_start, sentence.end())[1]
        if definition_end > definition_start:
            builder.statement(
                key,
                "defined_as",
                "definition",
                re.sub(r"\s+", " ", document.text[definition_start:definition_end]),
                object_is_entity=False,
                span=span_at(document, definition_start, definition_end),
            )
