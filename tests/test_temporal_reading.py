"""The temporal reading of questions (pure: no build)."""

from __future__ import annotations

import pytest

from engramrag.retrieve.temporal import read_temporal


@pytest.mark.parametrize(
    ("question", "intent", "as_of", "cue"),
    [
        ("Who owns the billing service now?", "current", None, "now"),
        ("Is Heron still on DuckDB?", "current", None, "still"),
        ("Who currently leads on-call?", "current", None, "currently"),
        ("지금 결제 서비스 담당자는?", "current", None, "지금"),
        ("아직 팔콘 프로젝트를 진행하나?", "current", None, "아직"),
        ("Who owned the billing service in March 2024?", "as_of", "2024-03-31", "March 2024"),
        ("2024년 3월에는 누가 담당했나?", "as_of", "2024-03-31", "2024년 3월"),
        ("What was the price as of 2024-02-29?", "as_of", "2024-02-29", "2024-02-29"),
        ("Which vendor did we use back in 2023?", "as_of", "2023-12-31", "back in 2023"),
        ("What did the team decide in Sept 2025?", "as_of", "2025-09-30", "Sept 2025"),
        ("Who owned it in March 2024, and does she still?", "as_of", "2024-03-31", "March 2024"),
        ("Who owns Tern?", "none", None, None),
        ("What is the nowhere project?", "none", None, None),
    ],
)
def test_questions_read_as_current_as_of_or_neither(question: str, intent: str, as_of: str | None, cue: str) -> None:
    reading = read_temporal(question)
    assert (reading.intent, reading.as_of, reading.cue) == (intent, as_of, cue)


def test_an_impossible_date_is_not_a_date() -> None:
    assert read_temporal("What happened on 2024-02-30?").intent == "none"
    assert read_temporal("What happened on 2024-02-30?").to_json() == {"intent": "none", "as_of": None, "cue": None}
