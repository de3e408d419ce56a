"""lifecycle.freshness without a build: a step runs when what it reads changed, and only then."""

from __future__ import annotations

from pathlib import Path

from engramrag.catalog.connection import catalog_writer
from engramrag.decisions.store import MERGE, DecisionsStore
from engramrag.lifecycle.freshness import refresh_unless_fresh, stale_steps
from engramrag.store import Home


def _home(tmp_path: Path) -> Home:
    home = Home.at(tmp_path / "home")
    with catalog_writer(home, 16) as catalog:
        catalog.execute(
            "INSERT INTO documents (doc_id, path, bucket, agent_authored, body_hash, size_bytes, mtime_ns, text) "
            "VALUES ('d1', 'a.md', 0, false, 'h1', 1, 1, 'x')"
        )
    return home


def _run(home: Home, step: str, calls: list[str], settings: str = "s", force: bool = False):
    return refresh_unless_fresh(home, 16, step, settings, lambda: calls.append(step) or len(calls), force=force)


def test_a_step_runs_once_for_the_same_inputs(tmp_path: Path) -> None:
    home, calls = _home(tmp_path), []
    first = _run(home, "supersession_candidates", calls)
    second = _run(home, "supersession_candidates", calls)
    assert first.recomputed and first.result == 1 and "never ran" in first.reason
    assert not second.recomputed and second.result is None and calls == ["supersession_candidates"]
    assert _run(home, "supersession_candidates", calls, force=True).recomputed


def test_changed_documents_settings_or_verdicts_run_the_steps_that_read_them(tmp_path: Path) -> None:
    home, calls = _home(tmp_path), []
    for step in ("supersession_candidates", "resolution_overlay"):
        _run(home, step, calls)
    assert stale_steps(home, {"supersession_candidates": "s", "resolution_overlay": "s"}) == [
        "resolution_candidates", "accepted_supersessions", "document_timeline"]  # never ran
    DecisionsStore.for_home(home).decide(MERGE, "jihoon", "김지훈", "same", "dana")
    assert not _run(home, "supersession_candidates", calls).recomputed  # reads no merge verdicts
    overlay = _run(home, "resolution_overlay", calls)
    assert overlay.recomputed and overlay.reason == "its inputs changed: merge verdicts"
    assert _run(home, "resolution_overlay", calls, settings="other").reason == "its inputs changed: settings"
    # The supersession steps read only the notes that record decisions: an edit of another note leaves them.
    with catalog_writer(home, 16) as catalog:
        catalog.execute("UPDATE documents SET body_hash = 'h2'")
    assert not _run(home, "supersession_candidates", calls).recomputed
    assert _run(home, "resolution_overlay", calls, settings="other").reason == "its inputs changed: documents"
    with catalog_writer(home, 16) as catalog:
        catalog.execute("INSERT INTO decisions (doc_id, entity_key, title) VALUES ('d1', 'd-1', 'Use DuckDB')")
    assert _run(home, "supersession_candidates", calls).reason == "its inputs changed: decision_documents"
    with catalog_writer(home, 16) as catalog:
        catalog.execute("UPDATE documents SET body_hash = 'h3'")
    assert _run(home, "supersession_candidates", calls).reason == "its inputs changed: decision_documents"
