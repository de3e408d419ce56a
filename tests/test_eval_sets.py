"""The generated retrieval sets (chat logs, team notes): deterministic, sound gold, unanswerable questions that
the vault really cannot answer, and idempotent rebuilds."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from types import ModuleType

import pytest

from eval.sets import base, chat_logs, team_notes
from eval.sets.base import RetrievalSet

SETS = [chat_logs, team_notes]
HANGUL = re.compile(r"[가-힣]")


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def front_matter(text: str) -> dict[str, str]:
    head = text.split("\n---\n", 1)[0].removeprefix("---\n")
    return dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)


@pytest.fixture(scope="module", params=SETS, ids=lambda module: module.NAME)
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, RetrievalSet]:
    module = request.param
    return module, module.build_set(tmp_path_factory.mktemp(module.NAME) / "vault")


@pytest.mark.parametrize("module", SETS, ids=lambda module: module.NAME)
def test_same_seed_same_bytes_other_seed_other_bytes(module: ModuleType, tmp_path: Path) -> None:
    one = module.build_set(tmp_path / "one", seed=3)
    two = module.build_set(tmp_path / "two", seed=3)
    three = module.build_set(tmp_path / "three", seed=4)
    assert tree_digest(tmp_path / "one") == tree_digest(tmp_path / "two")
    assert one.digest == two.digest and one.questions == two.questions
    assert tree_digest(tmp_path / "one") != tree_digest(tmp_path / "three")
    assert one.digest != three.digest


def test_gold_ids_and_group_shares(built: tuple[ModuleType, RetrievalSet]) -> None:
    module, retrieval_set = built
    questions = retrieval_set.questions
    assert retrieval_set.name == module.NAME
    assert 150 <= len(questions) <= 210
    assert len({q.id for q in questions}) == len(questions)
    for question in questions:
        assert all((retrieval_set.vault / path).is_file() for path in question.gold), question
        assert len(set(question.gold)) == len(question.gold)
        assert question.answerable == (question.group != "unanswerable")
    unanswerable = sum(not q.answerable for q in questions)
    multi = sum(len(q.gold) >= 2 for q in questions)
    assert unanswerable / len(questions) >= 0.15
    assert multi / len(questions) >= 0.20
    korean = [q for q in questions if q.language == "ko"]
    assert 0.25 <= len(korean) / len(questions) <= 0.5
    assert all(HANGUL.search(q.question) for q in korean)


def test_note_counts_and_korean_share(built: tuple[ModuleType, RetrievalSet]) -> None:
    module, retrieval_set = built
    notes = sorted(retrieval_set.vault.rglob("*.md"))
    low, high = (120, 150) if module is chat_logs else (150, 250)
    assert low <= len(notes) <= high
    korean = sum(bool(HANGUL.search(front_matter(p.read_text(encoding="utf-8"))["title"])) for p in notes)
    assert 0.3 <= korean / len(notes) <= 0.5


def test_unanswerable_words_are_absent_from_the_vault(built: tuple[ModuleType, RetrievalSet]) -> None:
    module, retrieval_set = built
    absent = module.absent_terms()
    unanswerable = [q for q in retrieval_set.questions if not q.answerable]
    assert {q.id for q in unanswerable} == set(absent)
    text = "\n".join(p.read_text(encoding="utf-8") for p in retrieval_set.vault.rglob("*.md"))
    for question in unanswerable:
        words = absent[question.id]
        assert any(base.occurs(word, question.question) for word in words), question
        for word in words:
            assert not base.occurs(word, text), (question.id, word)


def test_absent_word_check_catches_a_leak() -> None:
    files, questions, absent = chat_logs.generate(0)
    words = next(iter(absent.values()))
    assert base.absent_violations(files, questions, absent) == []
    leaked = dict(files) | {"extra.md": f"# Extra\n\nSomething about {words[0]}s and {words[0]}.\n"}
    assert base.absent_violations(leaked, questions, absent)
    assert base.occurs("cat", "A cat.") and not base.occurs("cat", "the category")
    assert base.occurs("고양이", "고양이가 있다")


def test_every_session_names_both_speakers_many_times(tmp_path: Path) -> None:
    retrieval_set = chat_logs.build_set(tmp_path / "chat")
    sessions = sorted(retrieval_set.vault.glob("conversations/*/session-*.md"))
    conversations = {p.parent.name for p in sessions}
    assert len(conversations) == chat_logs.CONVERSATIONS
    for path in sessions:
        text = path.read_text(encoding="utf-8")
        speakers = front_matter(text)["participants"].strip("[]").split(", ")
        body = text.split("\n---\n", 1)[1]
        assert len(speakers) == 2
        turns = re.findall(r"^\*\*(.+?):\*\* ", body, re.MULTILINE)
        assert set(turns) == set(speakers), path
        assert 15 <= len(turns) <= 40, path
        for name in speakers:
            assert body.count(name) >= 5, (path, name)


def test_chat_questions_point_into_their_own_conversation() -> None:
    _, questions, _ = chat_logs.generate(0)
    for question in questions:
        assert len({path.split("/")[1] for path in question.gold}) <= 1, question
        if question.group == "single-session":
            assert len(question.gold) == 1
        if question.group in ("multi-session", "temporal"):
            assert 2 <= len(question.gold) <= 3


def test_team_groups_and_hops() -> None:
    files, questions, _ = team_notes.generate(0)
    groups = {q.group for q in questions}
    assert groups == {"single-doc", "multi-hop", "meeting", "unanswerable"}
    for question in questions:
        if question.group == "multi-hop":
            assert 2 <= len(question.gold) <= 3
        elif question.group != "unanswerable":
            assert len(question.gold) == 1
        if question.group == "meeting":
            assert question.gold[0].startswith(("meetings/", "회의록/"))
    assert sum(q.group == "multi-hop" for q in questions) / len(questions) >= 0.25
    assert any(path.startswith("adr/0001-") for path in files)
    # acronyms reach their service through the aliases: every service note carries one
    services = [text for path, text in files.items() if path.startswith("services/")]
    assert all(re.search(r"^aliases: \[[A-Z]{3,4},", text, re.MULTILINE) for text in services)


@pytest.mark.parametrize("module", SETS, ids=lambda module: module.NAME)
def test_rebuild_on_the_same_folder_rewrites_nothing(module: ModuleType, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    first = module.build_set(vault)
    stray = vault / "stray.md"
    stray.write_text("# left over\n", encoding="utf-8")
    for path in vault.rglob("*.md"):  # an old, exact mtime: any rewrite would change it, however fast
        os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = {p: p.stat().st_mtime_ns for p in vault.rglob("*.md") if p != stray}
    second = module.build_set(vault)
    after = {p: p.stat().st_mtime_ns for p in vault.rglob("*.md")}
    assert not stray.exists()
    assert after == before
    assert first.digest == second.digest
