"""The deterministic, offline rules extractor (the default backend).

The rules run in a fixed order because later rules build on earlier ones: the document entity and decision
records first (their kinds are explicit), then structure (headings, links), tasks, key–value lines, defined
terms, mentions in running text, a sweep that gives every entity all its mentions, and finally the relations
and co-occurrences read off those mentions. Output is sorted, so the same document always yields the same extraction.
"""

from __future__ import annotations

from engramrag.extract.base import Extraction
from engramrag.extract.builder import ExtractionBuilder
from engramrag.extract.cooccurrence import extract_cooccurrence
from engramrag.extract.decisions import extract_decisions
from engramrag.extract.frontmatter import extract_front_matter
from engramrag.extract.glossary import extract_definitions
from engramrag.extract.keyvalue import extract_key_values
from engramrag.extract.mentions import extract_mentions
from engramrag.extract.property_changes import extract_property_changes
from engramrag.extract.relations import extract_relations
from engramrag.extract.structure import extract_headings, extract_links
from engramrag.extract.tasks import checkbox_lines, extract_tasks
from engramrag.extract.textutil import TextViews
from engramrag.vault.document import Document


class RulesExtractor:
    name = "rules"
    version = "1.1.0"
    cpu_bound = True  # pure computation, picklable: documents are extracted in worker processes

    def extract(self, document: Document) -> Extraction:
        views = TextViews.of(document)
        builder = ExtractionBuilder(document)
        extract_front_matter(document, builder)
        decisions = extract_decisions(document, builder, views.masked)
        extract_links(document, builder, views.masked)
        extract_headings(document, builder, decisions.heading_keys)
        extract_tasks(document, builder, views.masked)
        skip = decisions.consumed + checkbox_lines(views.masked, document.body_start)
        extract_key_values(document, builder, views.masked, skip, decisions.regions)
        extract_definitions(document, builder, views.masked)
        extract_mentions(document, builder, views.prose)
        builder.sweep(views.prose)
        extract_relations(document, builder, views.prose)
        extract_property_changes(document, builder, views.prose)
        extract_cooccurrence(document, builder, views.prose)
        return builder.build(self.name, self.version)
