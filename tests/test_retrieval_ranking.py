"""The ranking's promises on a vault built through the real lifecycle: a chat's speakers (named in every
session, with greetings around their names) do not decide the order, a note that matches only as a whole
outranks notes with one matching chunk, and a question about something no note mentions is answered with
``no_relevant_memory`` (auto_turn then injects only a notice)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stdout

import duckdb
import pytest

from engramrag.retrieve import Retriever
from engramrag.retrieve.published_index import current_index
from engramrag.store import Home
from pipelines.build import run_build
from pipelines.cli import main

SMALL_TALK = [
    "Hey {b}! How was your week?",
    "Wow {a}, that sounds busy. Work has been a lot for me too.",
    "Congrats {b}, you earned that weekend.",
    "Thanks {a}! The weather was lovely, we went for a walk by the river.",
    "Oh {b}, I love walks. My family says hi.",
    "Haha, say hi to them from me, {a}.",
    "Bye {a}, talk soon!",
    "Bye {b}!",
]
FACTS = {
    3: "I finally finished my research on adoption agencies for the thesis, {b}.",
    5: "{b}, I signed up for a pottery class on Thursdays.",
    7: "We booked a trip to Lisbon for May, {b}.",
}


def session(number: int, a: str, b: str) -> str:
    lines = [
        "---",
        f"title: {a} and {b} — session {number}",
        f"date: 2025-0{1 + number // 4}-{10 + number:02d}",
        "---",
        f"# {a} and {b} — session {number}",
        "",
    ]
    turns = [line.format(a=a, b=b) for line in SMALL_TALK]
    if number in FACTS:
        turns.insert(3, FACTS[number].format(a=a, b=b))
    for i, turn in enumerate(turns):
        speaker = a if i % 2 == 0 else b
        lines.append(f"**{speaker}:** {turn}")
        lines.append("")
    return "\n".join(lines)


def spread_note() -> str:
    """Each of three rare words in its own section: no chunk matches well, the note as a whole does."""
    sections = [
        ("Harbour", "The kestrel nests above the old pier. " + "Boats come and go all day. " * 2),
        ("Coast", "A lighthouse keeper logs the tides. " + "The wind turns in the evening. " * 2),
        ("Market", "Saffron is sold by the gram on Sundays. " + "Stalls open early in summer. " * 2),
    ]
    body = "\n\n".join(f"## {heading}\n\n{text}" for heading, text in sections)
    return f"---\ntitle: Field notes\n---\n# Field notes\n\n{body}\n"


def one_word_note(title: str, word: str) -> str:
    return f"---\ntitle: {title}\n---\n# {title}\n\nThe {word} was mentioned here, and the {word} again.\n"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    root = tmp_path_factory.mktemp("ranking")
    vault = root / "vault"
    for number in range(1, 9):
        target = vault / "conversations" / "caroline-melanie" / f"session-{number:02d}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(session(number, "Caroline", "Melanie"), encoding="utf-8")
    (vault / "notes").mkdir()
    (vault / "notes" / "field-notes.md").write_text(spread_note(), encoding="utf-8")
    for title, word in (("Birds", "kestrel"), ("Lights", "lighthouse"), ("Spices", "saffron")):
        (vault / "notes" / f"{title.lower()}.md").write_text(one_word_note(title, word), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("ENGRAM_HOME", "ENGRAM_VAULT", "ENGRAM_EXTRACTOR", "ENGRAM_EMBEDDER", "DAGSTER_HOME"):
            patch.delenv(name, raising=False)
        built = Home.at(root / "home")
        outcome = run_build(built, vault)
        assert outcome.success, outcome.errors
        yield built


@pytest.fixture(scope="module")
def retriever(home: Home) -> Iterator[Retriever]:
    opened = Retriever.open(home)
    yield opened
    opened.close()


def test_greetings_around_a_speakers_name_are_not_entities(home: Home) -> None:
    with duckdb.connect(str(current_index(home) / "index.duckdb"), read_only=True) as db:
        labels = {label for (label,) in db.execute("SELECT label FROM entity_nodes").fetchall()}
        speaker = db.execute("SELECT documents, specificity FROM entity_nodes WHERE node_key = 'caroline'").fetchone()
    assert "Caroline" in labels
    assert not {"Hey Caroline", "Wow Caroline", "Congrats Caroline", "Bye Caroline", "Oh Melanie"} & labels
    # Named in every session: the least specific entity of the vault, so it carries little of the walk.
    assert speaker[0] == 8 and speaker[1] < 0.5


@pytest.mark.parametrize(
    ("question", "session"),
    [
        ("What did Caroline research?", 3),
        ("Which class did they sign up for?", 5),
        ("Where did they book a trip to?", 7),
    ],
)
def test_a_question_about_one_session_ranks_that_session_first(
    retriever: Retriever, question: str, session: int
) -> None:
    for mode in ("full", "auto_turn"):
        answer = retriever.search(question, mode=mode, k=5)
        assert answer.results, (mode, answer.warnings)
        assert answer.results[0].doc == f"conversations/caroline-melanie/session-{session:02d}.md", mode
    # The speakers are the seeds, and they are named everywhere: the graph's weight in the fusion drops.
    answer = retriever.search("What did Caroline research?")
    assert answer.ranking["seed_specificity"] < 0.5
    assert answer.no_relevant_memory is False and answer.confidence >= 0.5


def test_a_note_that_matches_only_as_a_whole_outranks_notes_with_one_matching_chunk(retriever: Retriever) -> None:
    answer = retriever.search("kestrel lighthouse saffron", k=4)
    assert answer.results[0].doc == "notes/field-notes.md"
    assert {hit.doc for hit in answer.results[1:4]} == {"notes/birds.md", "notes/lights.md", "notes/spices.md"}
    # Chunk BM25 alone prefers a short note with one word twice: the whole-note leg is what lifts it.
    by_chunks = retriever.search("kestrel lighthouse saffron", k=4, ablation="bm25_only")
    assert by_chunks.results[0].doc != "notes/field-notes.md"


def test_a_question_the_vault_cannot_answer_says_so_and_auto_turn_injects_only_the_notice(
    retriever: Retriever,
) -> None:
    full = retriever.search("What is the boiling point of tungsten carbide?")
    assert full.no_relevant_memory is True and full.confidence < 0.5
    assert any("nothing relevant found" in warning for warning in full.warnings)
    turn = retriever.search("What is the boiling point of tungsten carbide?", mode="auto_turn")
    assert turn.no_relevant_memory is True and turn.results == []
    assert turn.context.strip().count("\n") == 0 and "nothing relevant found" in turn.context
    answered = retriever.search("What did Caroline research?", mode="auto_turn")
    assert answered.confidence > full.confidence


def test_the_cli_json_carries_confidence_and_the_fusion_weights(home: Home) -> None:
    output = io.StringIO()
    with redirect_stdout(output):
        code = main(["search", "What did Caroline research?", "--home", str(home.root), "--json"])
    assert code == 0
    answer = json.loads(output.getvalue())
    assert 0.0 <= answer["confidence"] <= 1.0 and answer["no_relevant_memory"] is False
    assert set(answer["ranking"]) >= {"seed_specificity", "notes_weight", "graph_weight"}
    assert answer["results"][0]["legs"]["notes"] > 0


def test_retrieval_index_records_specificity_for_every_entity(home: Home) -> None:
    with duckdb.connect(str(current_index(home) / "index.duckdb"), read_only=True) as db:
        low, high = db.execute("SELECT min(specificity), max(specificity) FROM entity_nodes").fetchone()
    assert 0.0 <= low < high <= 1.0
    assert (current_index(home) / "notes_bm25").is_dir()


def test_every_result_says_from_when_it_holds_and_how_that_date_was_found(retriever: Retriever) -> None:
    sessions = retriever.search("What did Caroline research?", k=3).results
    assert sessions[0].valid_from == {"date": "2025-01-13", "source": "front_matter:date"}
    undated = retriever.search("kestrel lighthouse saffron", k=1).results[0]
    assert undated.doc == "notes/field-notes.md" and undated.valid_from["source"] == "mtime"
    assert len(undated.valid_from["date"]) == 10


def test_an_as_of_date_puts_the_notes_dated_up_to_then_first(retriever: Retriever, home: Home) -> None:
    plain = retriever.search("Which class did they sign up for?", k=8)
    assert plain.results[0].doc.endswith("session-05.md") and plain.temporal["intent"] == "none"
    then = retriever.search("Which class did they sign up for?", k=8, as_of="2025-01-31")
    dates = [hit.valid_from["date"] for hit in then.results]
    early = [day <= "2025-01-31" for day in dates]
    assert early == sorted(early, reverse=True) and early[0]  # every note dated by then comes before the later ones
    assert then.temporal == {"intent": "as_of", "as_of": "2025-01-31", "cue": "--as-of"}
    asked = retriever.search("What did Caroline research in January 2025?", k=3)
    assert asked.temporal["as_of"] == "2025-01-31" and asked.results[0].doc.endswith("session-03.md")
    output = io.StringIO()
    with redirect_stdout(output):
        code = main(["search", "지금 Caroline은 무엇을 연구하나?", "--home", str(home.root), "--json"])
    assert code == 0
    assert json.loads(output.getvalue())["temporal"] == {"intent": "current", "as_of": None, "cue": "지금"}
    assert main(["search", "x", "--home", str(home.root), "--as-of", "March"]) == 2
