"""The temporal retrieval set (eval/sets/temporal_notes.py) and the pure parts of its harness (eval/temporal.py),
without building anything: deterministic vault, sound gold and stale notes, a date for every note, and every
supersession form the set promises."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path

import pytest

from eval import temporal
from eval.sets import temporal_notes
from eval.sets.base import absent_violations

HANGUL = re.compile(r"[가-힣]")


@pytest.fixture(scope="module")
def generated() -> tuple[dict[str, str], list, dict]:
    return temporal_notes.generate(0)


def digest(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return h.hexdigest()


def test_same_seed_same_vault_other_seed_other_vault(generated, tmp_path: Path) -> None:
    files, questions, _ = generated
    again, again_questions, _ = temporal_notes.generate(0)
    assert digest(again) == digest(files)
    assert again_questions == questions
    other, _, _ = temporal_notes.generate(1)
    assert digest(other) != digest(files)
    first = temporal_notes.build(tmp_path / "a", seed=0)
    second = temporal_notes.build(tmp_path / "b", seed=0)
    assert first.digest == second.digest
    assert temporal_notes.build(tmp_path / "c", seed=1).digest != first.digest


def test_sizes_and_groups(generated) -> None:
    files, questions, _ = generated
    assert 150 <= len(files) <= 250
    assert len(questions) >= 150
    groups = Counter(q.group for q in questions)
    assert set(groups) == {"current", "still", "as_of", "replaced", "unanswerable"}
    for group in ("current", "still", "as_of", "replaced"):
        assert groups[group] >= 25, group
    assert groups["unanswerable"] >= 20
    assert len({q.id for q in questions}) == len(questions)
    assert len({q.question for q in questions}) == len(questions)


def test_korean_questions_and_notes(generated) -> None:
    files, questions, _ = generated
    korean = [q for q in questions if q.language == "ko"]
    assert 0.2 <= len(korean) / len(questions) <= 0.45
    assert all(HANGUL.search(q.question) for q in korean)
    for group in ("current", "still", "as_of", "replaced", "unanswerable"):
        assert any(q.group == group for q in korean), group
    korean_notes = sum(1 for text in files.values() if len(HANGUL.findall(text)) > len(re.findall(r"[A-Za-z]",
                                                                                                  text)) / 2)
    assert 0.2 <= korean_notes / len(files) <= 0.45


def test_gold_and_stale_are_disjoint_existing_files(generated) -> None:
    files, questions, _ = generated
    for q in questions:
        assert isinstance(q, temporal_notes.TemporalQuestion)
        assert not set(q.gold) & set(q.stale), q.id
        assert all(path in files for path in q.gold + q.stale), q.id
        if q.group == "unanswerable":
            assert not q.gold and not q.stale and q.as_of is None
        else:
            assert q.gold and q.stale, q.id
        if q.group == "as_of":
            assert q.as_of is not None
            year, month = int(q.as_of[:4]), int(q.as_of[5:7])
            said = (f"{year}년 {month}월", f"{temporal_notes.EN_MONTHS[month - 1]} {year}", q.as_of)
            assert any(text in q.question for text in said), q.question


def test_unanswerable_words_are_absent(generated) -> None:
    files, questions, absent = generated
    assert absent_violations(files, questions, absent) == []


def test_every_note_has_a_date_without_mtime(generated) -> None:
    from engramrag.vault.config import VaultConfig
    from engramrag.vault.dates import document_date
    from engramrag.vault.markdown import parse_document

    files, _, _ = generated
    sources = Counter()
    for path, text in files.items():
        document = parse_document(text.encode("utf-8"), path, VaultConfig())
        found = document_date(document.front_matter, path, document.title, None, None)
        assert found is not None, path
        sources[found.source.split(":")[0]] += 1
    assert sources["front_matter"] and sources["file_name"] and sources["heading"]


def test_every_declaration_form_occurs(generated) -> None:
    files, _, _ = generated
    text = "\n".join(files.values())
    forms = {
        "front matter supersedes": r'^supersedes: "\[\[[^\]]+\]\]"$',
        "front matter superseded_by": r'^superseded_by: "\[\[[^\]]+\]\]"$',
        "Nygard status": r"^## Status\n\nSuperseded by ADR-\d+$",
        "MADR status": r"^\* Status: superseded by \[ADR-\d{4}\]\(\d{4}-[a-z0-9-]+\.md\)$",
        "DECISIONS.md supersedes": r"^Supersedes D-\d+$",
        "DECISIONS.md Korean": r"^D-\d+[을를] 대체한다\.$",
        "in-text replaces": r"^This replaces \[\[[^\]]+\]\]\.$",
        "key-value change": r"^- [A-Z][a-z]+ service owner: .+$",
        "Korean key-value change": r"^- .+ 담당자: .+$",
        "learned note citing its source": r"^Learned from \[\[[^\]]+\]\]\.$",
        "aliases": r"^aliases: \[.+, .+\]$",
    }
    for name, pattern in forms.items():
        assert re.search(pattern, text, re.MULTILINE), name
    assert "D-" in files["DECISIONS.md"]
    assert any(path.startswith("learned/") for path in files)


def test_stale_above_fresh() -> None:
    gold, stale = {"new.md"}, {"old.md"}
    assert temporal.stale_above_fresh(["old.md", "new.md"], gold, stale)
    assert not temporal.stale_above_fresh(["new.md", "old.md"], gold, stale)
    assert not temporal.stale_above_fresh(["x.md", "new.md"], gold, stale)  # no stale ranked
    assert temporal.stale_above_fresh(["old.md", "x.md"], gold, stale)  # gold missing: ranked below everything
    assert not temporal.stale_above_fresh([], gold, stale)
    ranked = [f"n{i}.md" for i in range(10)] + ["old.md", "new.md"]
    assert not temporal.stale_above_fresh(ranked, gold, stale)  # both below the top 10
    assert temporal.stale_above_fresh(["n.md", "old.md", "n.md", "new.md"], gold, stale)  # repeats count once
    assert temporal.stale_above_fresh(["old.md"] + [f"n{i}.md" for i in range(10)] + ["new.md"], gold, stale, k=10)
    assert not temporal.stale_above_fresh(["new.md", "old.md"], gold, set())
