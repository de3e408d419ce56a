"""The replay extractor: precomputed LLM extractions matched to documents by their text, with located spans."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import duckdb
import pytest

from engramrag.extract.base import CORE_KINDS, Extraction
from engramrag.extract.builder import DOCUMENT_KEY
from engramrag.extract.registry import extractor_id, make_extractor
from engramrag.extract.replay import NoReplayExtraction, ReplayExtractor, guess_kind, model_from_filename, relation_id
from engramrag.extract.textutil import normalise_label
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.document import Document
from engramrag.vault.markdown import parse_document

MUSIQUE = Path("/work/shared/data/musique/openie_gpt35.json")

JOURNAL = {
    "title": "Journal of Mathematical Physics",
    "text": (
        "The Journal of Mathematical Physics is a peer-reviewed journal published monthly by the American "
        "Institute of Physics. The journal was first published in January 1960. The current editor is "
        "Jan Philip Solovej from University of Copenhagen."
    ),
    "extracted_entities": [
        "Journal of Mathematical Physics", "American Institute of Physics", "January 1960", "Jan Philip Solovej",
        "University of Copenhagen", "", 7,
    ],
    "extracted_triples": [
        ["Journal of Mathematical Physics", "published by", "American Institute of Physics"],
        ["Journal of Mathematical Physics", "first published in", "January 1960"],
        ["Jan Philip Solovej", "is from", "University of Copenhagen"],
        ["Jan Philip Solovej", "edits"],  # malformed: two parts
        ["", "is", "nothing"],  # malformed: empty subject
        ["Journal of Mathematical Physics", "current editor is", "Jan Philip Solovej"],
    ],
}  # fmt: skip
JOURNAL["passage"] = f"{JOURNAL['title']}\n{JOURNAL['text']}"
KOREAN = {
    "title": "박민지",
    "text": "박민지는 서울에서 태어났다. 그녀는 2019년 3월 카카오에 입사했다.",
    "extracted_entities": ["박민지", "서울", "2019년 3월", "카카오"],
    "extracted_triples": [
        ["박민지", "출생지", "서울"], ["박민지", "입사", "카카오"], ["박민지", "입사 시기", "2019년 3월"],
    ],
}  # fmt: skip
KOREAN["passage"] = f"{KOREAN['title']}\n{KOREAN['text']}"
SINGER = {  # no "passage": indexed by title and text
    "title": "Ana Torres",
    "text": "Ana Torres is a Chilean singer.\nIn 2003 she became engaged to the painter Luis Vidal.",
    "extracted_entities": ["Ana Torres", "Chilean", "Luis Vidal"],
    "extracted_triples": [["Ana Torres", "is fiancée of", "Luis Vidal"], ["Ana Torres", "nationality", "Chilean"],
                          ["Luis Vidal", "occupation", "painter"], ["Luis Vidal", "born in", "Valparaíso"]],
}  # fmt: skip
FIXTURE = [JOURNAL, KOREAN, SINGER]


@pytest.fixture
def replay_file(tmp_path: Path) -> Path:
    path = tmp_path / "openie_fixture_results_ner_test-model-1_3.json"
    path.write_text(json.dumps({"docs": FIXTURE, "ents_by_doc": []}, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def replay(replay_file: Path) -> ReplayExtractor:
    return ReplayExtractor(replay_file)


def passage_file(entry: dict, front_matter: str = "") -> str:
    return f"{front_matter}# {entry['title']}\n\n{entry['text']}\n"


def parse(text: str, path: str = "passages/p.md") -> Document:
    return parse_document(text.encode("utf-8"), path, VaultConfig())


def at(document: Document, span) -> str:
    return document.text[span.start : span.end]


def by_label(extraction: Extraction) -> dict[str, str]:
    """Entity key → label, to read statements."""
    return {entity.key: entity.label for entity in extraction.entities}


def triples(extraction: Extraction) -> set[tuple[str, str, str]]:
    labels = by_label(extraction)
    return {(labels[s.subject], s.predicate, labels[s.obj]) for s in extraction.statements}


def assert_well_formed(document: Document, extraction: Extraction) -> None:
    keys = [entity.key for entity in extraction.entities]
    assert len(keys) == len(set(keys))
    assert {entity.kind for entity in extraction.entities} <= set(CORE_KINDS)
    for entity in extraction.entities:
        for span in entity.spans:
            assert span == document.span(span.start, span.end)
    for statement in extraction.statements:
        assert statement.subject in keys and statement.obj in keys and statement.object_is_entity
        assert statement.role == "assertion"
        assert re.fullmatch(r"[a-z0-9_가-힣]+", statement.predicate)
        if statement.span is not None:
            assert document.body_start <= statement.span.start < statement.span.end <= len(document.text)
            assert statement.span == document.span(statement.span.start, statement.span.end)


def test_a_passage_file_gets_its_triples_with_sentence_spans(replay: ReplayExtractor) -> None:
    document = parse(passage_file(JOURNAL))
    extraction = replay.extract(document)
    assert_well_formed(document, extraction)
    assert (extraction.extractor, extraction.version, extraction.model) == ("replay", "1.0.0", "test-model-1")
    assert (extraction.tokens_in, extraction.tokens_out) == (0, 0)

    # The title is the document itself, as in the rules extractor: located at the heading and in the text.
    doc = extraction.entities[0]
    assert (doc.key, doc.kind, doc.label) == (DOCUMENT_KEY, "Document", JOURNAL["title"])
    assert [document.span(s.start, s.end).line_start for s in doc.spans] == [1, 3]
    assert triples(extraction) == {
        (JOURNAL["title"], "published_by", "American Institute of Physics"),
        (JOURNAL["title"], "first_published_in", "January 1960"),
        ("Jan Philip Solovej", "is_from", "University of Copenhagen"),
        (JOURNAL["title"], "current_editor_is", "Jan Philip Solovej"),
    }
    kinds = {entity.label: entity.kind for entity in extraction.entities}
    assert kinds["January 1960"] == "Quantity" and kinds["Jan Philip Solovej"] == "Concept"

    published = next(s for s in extraction.statements if s.predicate == "published_by")
    assert published.label == "published by"
    assert at(document, published.span).startswith("The Journal of Mathematical Physics is a peer-reviewed")
    assert at(document, published.span).endswith("Institute of Physics.")
    is_from = next(s for s in extraction.statements if s.predicate == "is_from")
    assert at(document, is_from.span) == "The current editor is Jan Philip Solovej from University of Copenhagen."
    # Subject and object share no sentence, only the paragraph's line: the line is the smallest span of both.
    for predicate in ("first_published_in", "current_editor_is"):
        statement = next(s for s in extraction.statements if s.predicate == predicate)
        assert at(document, statement.span) == JOURNAL["text"]

    entry = replay.lookup(document)
    assert entry is not None and entry.malformed_triples == 2
    assert replay.malformed_triples == 2 and replay.malformed_entities == 2
    for entity in extraction.entities:
        assert all(at(document, span).casefold() == entity.label.casefold() for span in entity.spans)
    assert [s.span.start for s in extraction.statements] == sorted(s.span.start for s in extraction.statements)
    assert replay.extract(parse(passage_file(JOURNAL))) == extraction


def test_korean_passage_spans_take_particles(replay: ReplayExtractor) -> None:
    document = parse(passage_file(KOREAN))
    extraction = replay.extract(document)
    assert_well_formed(document, extraction)
    assert triples(extraction) == {
        ("박민지", "출생지", "서울"), ("박민지", "입사", "카카오"), ("박민지", "입사_시기", "2019년 3월"),
    }  # fmt: skip
    spans = {entity.label: [at(document, span) for span in entity.spans] for entity in extraction.entities}
    assert spans["서울"] == ["서울"] and spans["카카오"] == ["카카오"] and spans["박민지"] == ["박민지", "박민지"]
    assert {e.label: e.kind for e in extraction.entities}["2019년 3월"] == "Quantity"
    born = next(s for s in extraction.statements if s.predicate == "출생지")
    assert at(document, born.span) == "박민지는 서울에서 태어났다."


def test_entries_without_passage_unknown_labels_and_lines(replay: ReplayExtractor) -> None:
    document = parse(passage_file(SINGER))
    extraction = replay.extract(document)
    assert_well_formed(document, extraction)
    assert ("Ana Torres", "is_fiancee_of", "Luis Vidal") in triples(extraction)
    fiancee = next(s for s in extraction.statements if s.predicate == "is_fiancee_of")
    assert fiancee.label == "is fiancée of"
    # The pair is split over two lines; the subject's first mention locates it.
    assert at(document, fiancee.span) == "Ana Torres" and fiancee.span.line_start == 1
    labels = {entity.label: entity for entity in extraction.entities}
    assert labels["painter"].spans and labels["painter"].kind == "Concept"  # a triple object not in the list
    assert labels["Valparaíso"].spans == ()  # not in the text: no invented span
    born = next(s for s in extraction.statements if s.predicate == "born_in")
    assert at(document, born.span) == "Luis Vidal"
    occupation = next(s for s in extraction.statements if s.predicate == "occupation")
    assert at(document, occupation.span) == "In 2003 she became engaged to the painter Luis Vidal."


def test_front_matter_and_retitled_documents_still_match(replay: ReplayExtractor) -> None:
    with_heading = parse(passage_file(JOURNAL, "---\nsource: musique\ntags: [passage]\n---\n"))
    assert triples(replay.extract(with_heading)) == triples(replay.extract(parse(passage_file(JOURNAL))))
    titled = parse(f"---\ntitle: {SINGER['title']}\n---\n{SINGER['text']}\n")
    assert replay.lookup(titled) is not None and replay.extract(titled).statements
    retitled = parse(f"# Another name\n\n{KOREAN['text']}\n")  # text alone
    assert replay.lookup(retitled) is not None
    extraction = replay.extract(retitled)
    assert extraction.entities[0].label == "Another name" and len(extraction.statements) == 3
    spaced = parse(f"#   {KOREAN['title']}\n\n\n{KOREAN['text'].replace(' ', '  ')}\n")
    assert replay.lookup(spaced) is not None


def test_a_document_without_a_precomputed_extraction_fails_clearly(replay: ReplayExtractor, replay_file: Path) -> None:
    document = parse("# Journal of Mathematical Physics\n\nA different text entirely.\n", "notes/other.md")
    assert replay.lookup(document) is None
    with pytest.raises(NoReplayExtraction) as raised:
        replay.extract(document)
    assert isinstance(raised.value, LookupError)
    message = str(raised.value)
    assert "notes/other.md" in message and str(replay_file) in message and "no precomputed extraction" in message


def test_model_names_kinds_and_relation_ids(replay_file: Path) -> None:
    assert model_from_filename("out/openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json") == (
        "gpt-3.5-turbo-1106"
    )
    assert model_from_filename("openie_gpt35.json") == "gpt35"
    assert model_from_filename("extractions.json") == "extractions"
    assert ReplayExtractor(replay_file, model="gpt-3.5-turbo-1106").model == "gpt-3.5-turbo-1106"
    for label in ("1963", "January 1960", "3 March 1901", "July 23rd, 1975", "1960s", "$12.5 billion", "45%",
                  "1,270 mm", "2019-03-01", "2019년 3월"):  # fmt: skip
        assert guess_kind(label) == "Quantity", label
    for label in ("2018 Impact Factor", "May", "Mix 96.5 FM", "Jan Philip Solovej", "20th-century"):
        assert guess_kind(label) == "Concept", label
    assert relation_id("published by") == "published_by"
    assert relation_id("isPartOf") == "is_part_of"
    assert relation_id("—") == "related_to"


def test_registry_reads_the_replay_file_from_the_environment(
    replay_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ENGRAM_REPLAY_FILE", raising=False)
    with pytest.raises(ValueError, match="set ENGRAM_REPLAY_FILE"):
        make_extractor("replay")
    monkeypatch.setenv("ENGRAM_REPLAY_FILE", str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match=r"missing\.json \(from ENGRAM_REPLAY_FILE\) does not exist"):
        make_extractor("replay")
    monkeypatch.setenv("ENGRAM_REPLAY_FILE", str(replay_file))
    extractor = make_extractor("replay")
    assert isinstance(extractor, ReplayExtractor) and extractor.path == replay_file
    assert extractor_id(extractor) == "replay/1.0.0/test-model-1"
    monkeypatch.delenv("ENGRAM_REPLAY_FILE")
    assert make_extractor(f"replay:{replay_file}").path == replay_file
    with pytest.raises(ValueError, match="does not exist"):
        make_extractor(f"replay:{tmp_path / 'nope.json'}")
    with pytest.raises(ValueError, match="available: rules, replay"):
        make_extractor("llm")


@pytest.mark.skipif(not MUSIQUE.exists(), reason="MuSiQue replay file not present")
def test_real_musique_passages_match_and_are_located() -> None:
    replay = ReplayExtractor(MUSIQUE)
    docs = json.loads(MUSIQUE.read_text(encoding="utf-8"))["docs"]
    assert len(replay.entries) == len(docs) == 1890
    assert replay.model == "gpt35"
    for index in (0, 1, 2, 500, 1000, 1889):
        entry = docs[index]
        document = parse(f"# {entry['title']}\n\n{entry['text']}\n", f"musique/{index:04d}.md")
        extraction = replay.extract(document)
        assert_well_formed(document, extraction)
        assert extraction.entities[0].label == entry["title"]
        located = [s for s in extraction.statements if s.span is not None]
        assert located, entry["title"]
        labels = by_label(extraction)
        for statement in located:  # a located statement's span always holds its subject
            assert normalise_label(labels[statement.subject]) in normalise_label(at(document, statement.span))


def test_build_records_replay_statements_in_the_catalog(
    replay_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.build import run_build

    vault = tmp_path / "vault"
    vault.mkdir()
    for name, entry in zip(("journal.md", "minji.md", "singer.md"), FIXTURE, strict=True):
        (vault / name).write_text(passage_file(entry), encoding="utf-8")
    monkeypatch.setenv("ENGRAM_REPLAY_FILE", str(replay_file))
    home = Home.at(tmp_path / "home")

    environment = dict(os.environ)
    outcome = run_build(home, vault, extractor="replay")
    assert outcome.success, outcome.errors
    assert dict(os.environ) == environment  # settings reach the assets through the resource, not the environment
    replay = ReplayExtractor(replay_file)
    expected = {
        name: len(replay.extract(parse(passage_file(entry), name)).statements)
        for name, entry in zip(("journal.md", "minji.md", "singer.md"), FIXTURE, strict=True)
    }
    connection = duckdb.connect(str(home.catalog_path), read_only=True)
    try:
        rows = connection.execute(
            """SELECT d.path, s.extractor, s.predicate, s.label, s.char_start FROM statements s
            JOIN documents d USING (doc_id)"""
        ).fetchall()
        runs = connection.execute("SELECT path, status, extractor, model FROM extraction_runs").fetchall()
    finally:
        connection.close()
    assert {path: sum(1 for row in rows if row[0] == path) for path in expected} == expected
    assert all(row[1] == "replay/1.0.0/test-model-1" for row in rows)
    assert ("minji.md", "replay/1.0.0/test-model-1", "출생지", "출생지") in {row[:4] for row in rows}
    assert sorted(runs) == [(name, "ok", "replay", "test-model-1") for name in sorted(expected)]
