"""The rules extractor: exact spans, determinism, Korean, front matter, links, key–value lines, decision records."""

from __future__ import annotations

from pathlib import Path

import pytest

from engramrag.extract.base import CORE_KINDS, Entity, Extraction, Statement
from engramrag.extract.korean import noun_phrases
from engramrag.extract.quantities import find_quantities
from engramrag.extract.rules import RulesExtractor
from engramrag.extract.textutil import normalise_label
from engramrag.vault.config import VaultConfig
from engramrag.vault.document import Document
from engramrag.vault.markdown import parse_document

EXAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "vault"


def parse(text: str, path: str = "notes/note.md") -> Document:
    return parse_document(text.encode("utf-8"), path, VaultConfig())


def extract(text: str, path: str = "notes/note.md") -> tuple[Document, Extraction]:
    document = parse(text, path)
    return document, RulesExtractor().extract(document)


def entity(extraction: Extraction, label: str) -> Entity:
    matches = [e for e in extraction.entities if e.label == label]
    assert matches, f"no entity {label!r} in {[e.label for e in extraction.entities]}"
    return matches[0]


def statements(extraction: Extraction, predicate: str, subject: str | None = None) -> list[Statement]:
    return [s for s in extraction.statements if s.predicate == predicate and subject in (None, s.subject)]


def at(document: Document, span) -> str:
    return document.text[span.start : span.end]


def assert_spans_exact(document: Document, extraction: Extraction) -> None:
    """Every entity span holds the label or an alias; every span is inside the text with correct lines."""
    for item in extraction.entities:
        names = {normalise_label(name) for name in (item.label, *item.aliases)}
        for span in item.spans:
            assert normalise_label(at(document, span)) in names, (item, at(document, span))
            assert span == document.span(span.start, span.end)
    for statement in extraction.statements:
        if statement.span is not None:
            assert 0 <= statement.span.start < statement.span.end <= len(document.text)
            assert statement.span == document.span(statement.span.start, statement.span.end)
    keys = [e.key for e in extraction.entities]
    assert len(keys) == len(set(keys))
    assert {e.kind for e in extraction.entities} <= set(CORE_KINDS)
    for statement in extraction.statements:
        assert statement.subject in keys
        if statement.object_is_entity:
            assert statement.obj in keys


NOTE = """---
title: Minji Park
aliases: [박민지, Park Minji]
author: Jihoon Kim
date: 2026-02-01
tags: [people, team]
type: person
team: Platform
---
# Minji Park

Minji Park maintains DuckDB. She works with "Project Falcon" and the [[Project Falcon|Falcon]] team.
See [the pipeline](../projects/ingest-pipeline.md) and https://duckdb.org/docs for details.

## Role

Owner: Minji Park
- **Status**: done
- Due: 2026-03-01
담당자: 박민지

### Latency

The p95 latency dropped from 300 ms to 120 ms, saving ₩5,000,000 and 3.5% of cost.

```python
# Secret Code inside a fence: [[NotALink]] "Quoted Thing" Owner: Nobody
client = LanceDB()
```
"""


@pytest.fixture(scope="module")
def note() -> tuple[Document, Extraction]:
    return extract(NOTE, "people/minji-park.md")


def test_rules_extractor_identity():
    assert RulesExtractor.name == "rules"
    assert RulesExtractor.version == "1.1.0"


def test_spans_are_exact_everywhere(note):
    document, extraction = note
    assert_spans_exact(document, extraction)


def test_deterministic_output(note):
    _, extraction = note
    again = RulesExtractor().extract(parse(NOTE, "people/minji-park.md"))
    assert again == extraction
    assert [e.key for e in again.entities] == [e.key for e in extraction.entities]


def test_document_entity_front_matter(note):
    document, extraction = note
    doc = entity(extraction, "Minji Park")
    assert doc.key == "doc" and extraction.entities[0] is doc
    assert doc.kind == "Person"  # from type: person
    assert set(doc.aliases) >= {"박민지", "Park Minji"}
    aliases = statements(extraction, "has_alias", "doc")
    assert {s.obj for s in aliases} == {"박민지", "Park Minji"}
    assert all(at(document, s.span) == s.obj for s in aliases)
    assert {s.obj for s in statements(extraction, "has_tag", "doc")} == {"people", "team"}
    (authored,) = statements(extraction, "authored_by", "doc")
    author = next(e for e in extraction.entities if e.key == authored.obj)
    assert (author.label, author.kind) == ("Jihoon Kim", "Person")
    assert at(document, authored.span) == "Jihoon Kim"
    (dated,) = statements(extraction, "dated", "doc")
    assert (dated.obj, dated.datatype, at(document, dated.span)) == ("2026-02-01", "date", "2026-02-01")
    (team,) = statements(extraction, "team", "doc")
    assert team.object_is_entity  # "team" names an organization
    # the H1 equal to the title is the document itself, and body mentions of the title or an alias count too
    assert any(at(document, span) == "박민지" for span in doc.spans)
    assert any(at(document, span) == "Minji Park" and span.start > document.body_start for span in doc.spans)


def test_headings_become_sections(note):
    document, extraction = note
    role = entity(extraction, "Role")
    latency = entity(extraction, "Latency")
    (section,) = [s for s in statements(extraction, "has_section", "doc") if s.obj == role.key]
    assert at(document, section.span) == "Role"
    (sub,) = statements(extraction, "has_subsection", role.key)
    assert sub.obj == latency.key and at(document, sub.span) == "Latency"


def test_links(note):
    document, extraction = note
    falcon = entity(extraction, "Project Falcon")
    assert falcon.kind == "Document" and "Falcon" in falcon.aliases
    pipeline = entity(extraction, "ingest-pipeline")
    web = entity(extraction, "https://duckdb.org/docs")
    assert web.kind == "Artifact"
    links = {s.obj: s for s in statements(extraction, "links_to", "doc")}
    assert set(links) >= {falcon.key, pipeline.key, web.key}
    assert at(document, links[falcon.key].span) == "[[Project Falcon|Falcon]]"
    assert at(document, links[pipeline.key].span) == "[the pipeline](../projects/ingest-pipeline.md)"
    assert at(document, links[web.key].span) == "https://duckdb.org/docs"


def test_key_value_lines(note):
    document, extraction = note
    (owner,) = statements(extraction, "owner", "doc")
    assert owner.object_is_entity and owner.label == "Owner"
    assert at(document, owner.span) == "Owner: Minji Park"
    (status,) = statements(extraction, "status", "doc")
    assert (status.obj, status.object_is_entity, status.label) == ("done", False, "Status")
    assert at(document, status.span) == "**Status**: done"
    (due,) = statements(extraction, "due", "doc")
    assert (due.obj, due.datatype) == ("2026-03-01", "date")
    (responsible,) = statements(extraction, "담당자", "doc")
    person = next(e for e in extraction.entities if e.key == responsible.obj)
    assert person.kind == "Person" and at(document, person.spans[0]) in (person.label, *person.aliases)


def test_capitalised_quoted_and_quantities(note):
    document, extraction = note
    assert entity(extraction, "DuckDB").kind == "Artifact"
    for label in ("300 ms", "120 ms", "₩5,000,000", "3.5%"):
        quantity = entity(extraction, label)
        assert quantity.kind == "Quantity" and at(document, quantity.spans[0]) == label
    assert not any(e.label in ("The", "She", "See") for e in extraction.entities)


def test_verb_relation_and_person_kind(note):
    document, extraction = note
    (maintains,) = statements(extraction, "maintains")
    assert maintains.subject == "doc" and maintains.role == "assertion"
    assert maintains.obj == entity(extraction, "DuckDB").key
    assert at(document, maintains.span) == "Minji Park maintains DuckDB"


def test_nothing_from_fenced_code(note):
    document, extraction = note
    labels = {e.label for e in extraction.entities}
    assert not labels & {"Secret Code", "NotALink", "Quoted Thing", "LanceDB", "Nobody"}
    fence = document.text.index("```python")
    for item in extraction.entities:
        assert all(not (fence <= span.start < len(document.text)) for span in item.spans)
    assert not [s for s in extraction.statements if s.span and s.span.start >= fence]


def test_cooccurrence_is_analysis(note):
    document, extraction = note
    pairs = statements(extraction, "co_occurs_with")
    assert pairs and all(s.role == "analysis" and s.object_is_entity for s in pairs)
    assert all(s.subject < s.obj for s in pairs)
    ms300, ms120 = entity(extraction, "300 ms"), entity(extraction, "120 ms")
    (pair,) = [s for s in pairs if {s.subject, s.obj} == {ms300.key, ms120.key}]
    assert at(document, pair.span).startswith("The p95 latency dropped")
    assert not [s for s in extraction.statements if s.role == "analysis" and s.predicate != "co_occurs_with"]


def test_cooccurrence_is_capped_per_sentence():
    names = ", ".join(f"Alpha{index}DB" for index in range(12))
    _, extraction = extract(f"# Stack\n\nWe run {names} today.\n")
    assert len(statements(extraction, "co_occurs_with")) == 15  # 6 entities → 15 pairs, not 66


KOREAN = """# 팀 소개

박민지는 데이터 파이프라인을 담당한다. 정현우 님은 검색 품질을 관리한다.
팔콘 프로젝트는 판교 오피스에서 진행된다.
"""


def test_korean_noun_phrases_and_relation():
    document, extraction = extract(KOREAN, "notes/팀.md")
    assert_spans_exact(document, extraction)
    minji = entity(extraction, "박민지")
    pipeline = entity(extraction, "데이터 파이프라인")
    assert minji.kind == "Person"
    assert at(document, minji.spans[0]) == "박민지" and at(document, pipeline.spans[0]) == "데이터 파이프라인"
    (responsible,) = statements(extraction, "responsible_for")
    assert (responsible.subject, responsible.obj, responsible.label) == (minji.key, pipeline.key, "담당한다")
    assert at(document, responsible.span) == "박민지는 데이터 파이프라인을 담당한다"
    (manages,) = statements(extraction, "manages")
    assert entity(extraction, "정현우").kind == "Person"
    assert manages.obj == entity(extraction, "검색 품질").key
    assert entity(extraction, "팔콘 프로젝트")


def test_korean_particles_are_stripped_only_where_phonology_allows():
    text = "차이는 평가 결과가 보여 준다. 서버로 옮긴 회의에서 결정했다."
    labels = [label for label, _, _ in noun_phrases(text)]
    assert "차이" in labels and "평가 결과" in labels and "서버" in labels and "회의" in labels
    for label, start, end in noun_phrases(text):
        assert text[start:end] == label


def test_quantities_units_currencies_and_dates():
    text = "120 ms, 3.5%, ₩5,000,000, $12k, 2 GiB, 3주, 2026-03-01, 2026-13-45"
    found = [text[start:end] for start, end in find_quantities(text)]
    assert found == ["120 ms", "3.5%", "₩5,000,000", "$12k", "2 GiB", "3주", "2026-03-01"]


DECISION_LOG = """# Decisions

## 2026-02-10: Use DuckDB for the catalog

Status: Superseded by 2026-05-02: Move the catalog to PostgreSQL
Deciders: Daniel Choi, Minji Park

Decision: Store the catalog in one DuckDB file.

## Move the catalog to PostgreSQL

- Date: 2026-05-02
- **Status:** Accepted
- Supersedes: 2026-02-10: Use DuckDB for the catalog

## 결제 모듈 교체

날짜: 2026-05-20
상태: 제안됨
"""


def test_decisions_md_sections():
    document, extraction = extract(DECISION_LOG, "team/decisions.md")
    assert_spans_exact(document, extraction)
    records = {record.title: record for record in extraction.decisions}
    assert list(records) == ["Use DuckDB for the catalog", "Move the catalog to PostgreSQL", "결제 모듈 교체"]
    duck, postgres, korean = records.values()
    assert (duck.date, duck.status) == ("2026-02-10", "superseded")
    assert duck.superseded_by == ("2026-05-02: Move the catalog to PostgreSQL",)
    assert (postgres.date, postgres.status) == ("2026-05-02", "accepted")
    assert postgres.supersedes == ("2026-02-10: Use DuckDB for the catalog",)
    assert (korean.date, korean.status) == ("2026-05-20", "proposed")
    decision = next(e for e in extraction.entities if e.key == duck.entity_key)
    assert decision.kind == "Decision" and at(document, decision.spans[0]) == "Use DuckDB for the catalog"
    assert at(document, duck.span).startswith("## 2026-02-10: Use DuckDB") and "one DuckDB file." in at(
        document, duck.span
    )

    def about(record, predicate):
        (found,) = statements(extraction, predicate, record.entity_key)
        return found

    assert (about(duck, "has_status").obj, at(document, about(duck, "has_status").span)) == ("superseded", "Superseded")
    decided = about(duck, "decided_on")
    assert (decided.obj, decided.datatype, at(document, decided.span)) == ("2026-02-10", "date", "2026-02-10")
    superseded_by = about(duck, "superseded_by")
    assert at(document, superseded_by.span) == superseded_by.obj
    assert at(document, about(postgres, "supersedes").span) == "2026-02-10: Use DuckDB for the catalog"
    assert at(document, about(korean, "has_status").span) == "제안됨"
    # the section heading is the Decision entity, and the section's fields are about the decision
    assert any(s.obj == duck.entity_key for s in statements(extraction, "has_section", "doc"))
    assert {statement.label for statement in statements(extraction, "deciders", duck.entity_key)} == {"Deciders"}
    assert not statements(extraction, "status")  # status lines are decision fields, not key–value lines


NYGARD = """# 2. Use DuckDB for the catalog

Date: 2026-02-10

## Status

Superseded by [4. Use PostgreSQL for the catalog](0004-use-postgresql-for-the-catalog.md)

Supersedes [1. Use SQLite](0001-use-sqlite.md)

## Context

We need a catalog.
"""


def test_nygard_adr_with_status_section():
    document, extraction = extract(NYGARD, "docs/adr/0002-use-duckdb-for-the-catalog.md")
    assert_spans_exact(document, extraction)
    (record,) = extraction.decisions
    assert record.title == "Use DuckDB for the catalog"
    assert (record.date, record.status) == ("2026-02-10", "superseded")
    assert record.superseded_by == ("0004-use-postgresql-for-the-catalog.md",)
    assert record.supersedes == ("0001-use-sqlite.md",)
    (by,) = statements(extraction, "superseded_by", record.entity_key)
    assert at(document, by.span) == "0004-use-postgresql-for-the-catalog.md" and by.role == "assertion"
    (status,) = statements(extraction, "has_status", record.entity_key)
    assert at(document, status.span) == "Superseded"
    (recorded,) = statements(extraction, "records_decision", "doc")
    assert recorded.obj == record.entity_key
    assert not [e for e in extraction.entities if e.label in ("Status", "Context")]  # boilerplate sections


MADR = """---
status: accepted
date: 2026-04-01
---
# Use LanceDB for vector search

* Status: accepted
* Deciders: Hyunwoo Jung, Minji Park
- Supersedes [ADR-0002](0002-use-faiss.md)

## Decision Outcome

Chosen option: "LanceDB", because it runs offline.
"""


def test_madr_adr():
    document, extraction = extract(MADR, "adr/0003-use-lancedb.md")
    assert_spans_exact(document, extraction)
    (record,) = extraction.decisions
    assert (record.title, record.status, record.date) == ("Use LanceDB for vector search", "accepted", "2026-04-01")
    assert record.supersedes == ("0002-use-faiss.md",)
    (decided,) = statements(extraction, "decided_on", record.entity_key)
    assert decided.span is not None and at(document, decided.span) == "2026-04-01"  # from the front matter
    deciders = statements(extraction, "deciders", record.entity_key)
    kinds = {next(e for e in extraction.entities if e.key == s.obj).kind for s in deciders}
    assert len(deciders) == 2 and kinds == {"Person"}


def test_adr_by_file_name_needs_an_adr_signal():
    _, daily = extract("# Standup\n\nWe talked.\n", "journal/2026-03-01-standup.md")
    assert daily.decisions == []
    _, adr = extract("# Use X\n\n## Status\n\nProposed\n", "notes/2026-03-01-use-x.md")
    assert [(r.title, r.status, r.date) for r in adr.decisions] == [("Use X", "proposed", "2026-03-01")]
    assert statements(adr, "decided_on")[0].span is None  # the date came from the file name: no invented span


MEETING = """# Weekly

Attendees: Minji, Daniel

Minji: the partition model is what we need.

- [ ] Daniel: move the cron jobs to Dagster assets — 2026-03-25
- [x] write ADR-0003
"""


def test_checkbox_tasks_and_speaker_lines():
    document, extraction = extract(MEETING, "meetings/weekly.md")
    assert_spans_exact(document, extraction)
    move = entity(extraction, "move the cron jobs to Dagster assets")
    adr = entity(extraction, "write ADR-0003")
    assert move.kind == adr.kind == "Task"
    assert {s.obj for s in statements(extraction, "has_task", "doc")} == {move.key, adr.key}
    assert [s.obj for s in statements(extraction, "has_status", move.key)] == ["open"]
    assert [s.obj for s in statements(extraction, "has_status", adr.key)] == ["done"]
    (assigned,) = statements(extraction, "assigned_to", move.key)
    daniel = entity(extraction, "Daniel")
    assert assigned.obj == daniel.key and daniel.kind == "Person"
    assert {s.obj for s in statements(extraction, "attendees", "doc")} == {daniel.key, entity(extraction, "Minji").key}
    assert not statements(extraction, "minji") and not statements(extraction, "daniel")  # speakers, not fields


GLOSSARY = """# Glossary

- **BL** (B/L, bill of lading, 선하증권) — the carrier's receipt for the goods
  and the title document. Every shipment has one.
- **Status**: a key–value line, not a definition
"""


def test_defined_terms_with_aliases():
    document, extraction = extract(GLOSSARY, "glossary.md")
    assert_spans_exact(document, extraction)
    bl = entity(extraction, "BL")
    assert set(bl.aliases) == {"B/L", "bill of lading", "선하증권"}
    assert {at(document, span) for span in bl.spans} >= {"BL", "B/L", "선하증권"}
    (definition,) = statements(extraction, "defined_as", bl.key)
    assert definition.obj == "the carrier's receipt for the goods and the title document."
    assert at(document, definition.span) == "the carrier's receipt for the goods\n  and the title document."
    assert [s.obj for s in statements(extraction, "status", "doc")] == ["a key–value line, not a definition"]


@pytest.mark.skipif(not EXAMPLE_VAULT.exists(), reason="example vault not present")
def test_example_vault_smoke():
    extractor = RulesExtractor()
    paths = sorted(EXAMPLE_VAULT.rglob("*.md"))
    assert paths
    for path in paths:
        relative = path.relative_to(EXAMPLE_VAULT).as_posix()
        document = parse_document(path.read_bytes(), relative, VaultConfig())
        extraction = extractor.extract(document)
        assert_spans_exact(document, extraction)
        assert extraction.entities[0].key == "doc"
        assert extraction == extractor.extract(document)


def test_a_repeated_decision_title_stays_separate_decisions():
    log = (
        "# Decisions\n\n"
        "## 2024-03-07: Use ClickHouse for monitoring\nStatus: Superseded\n\n"
        "## 2024-05-04: Use ClickHouse for monitoring\nStatus: Accepted\n\n"
        "## Use ClickHouse for monitoring\nDate: 2024-05-04\nStatus: Rejected\n"
    )
    document, extraction = extract(log, "DECISIONS.md")
    assert_spans_exact(document, extraction)
    records = [(record.date, record.status) for record in extraction.decisions]
    assert records == [("2024-03-07", "superseded"), ("2024-05-04", "accepted"), ("2024-05-04", "rejected")]
    keys = [record.entity_key for record in extraction.decisions]
    assert len(set(keys)) == 3
    assert {e.key for e in extraction.entities if e.kind == "Decision"} == set(keys)
