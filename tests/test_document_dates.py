"""Document-date precedence (pure: no build)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from engramrag.vault.dates import DocumentDate, document_date, find_date

COMMIT = datetime(2024, 5, 6, 23, 30, tzinfo=UTC)
MTIME = datetime(2026, 1, 2, tzinfo=UTC).timestamp()


def test_front_matter_wins_in_the_order_date_created_updated() -> None:
    matter = {"updated": "2025-09-01", "created": date(2025, 1, 5), "date": "2025-03-04"}
    assert document_date(matter, "meetings/2024-01-01-sync.md", None, COMMIT, MTIME) == DocumentDate(
        "2025-03-04", "front_matter:date"
    )
    del matter["date"]
    assert document_date(matter, "x.md", None, COMMIT, MTIME) == DocumentDate("2025-01-05", "front_matter:created")
    del matter["created"]
    assert document_date(matter, "x.md", None, None, None) == DocumentDate("2025-09-01", "front_matter:updated")


def test_then_the_file_name_the_heading_git_and_the_modification_time() -> None:
    assert document_date({}, "meetings/20250304-sync.md", "Sync 2025-06-01", COMMIT, MTIME).source == "file_name"
    assert document_date({}, "meetings/sync.md", "2025년 6월 1일 회의", COMMIT, MTIME) == DocumentDate(
        "2025-06-01", "heading"
    )
    assert document_date({}, "notes/x.md", "Notes", COMMIT, MTIME) == DocumentDate("2024-05-06", "git_first_commit")
    assert document_date({}, "notes/x.md", None, None, MTIME) == DocumentDate("2026-01-02", "mtime")
    assert document_date({}, "notes/x.md", None, None, None) is None


def test_an_unreadable_front_matter_date_falls_through() -> None:
    assert document_date({"date": "soon"}, "2025-02-03.md", None, None, None) == DocumentDate("2025-02-03", "file_name")
    assert find_date("ADR 0001 of 2025-02-30, then 2025-03-01") == "2025-03-01"
    assert find_date("build 123456789") is None
