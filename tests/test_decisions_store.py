"""The decisions store on real SQLite files: verdicts, undo, validation, concurrency and crash safety."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from engramrag.decisions import MERGE, SUPERSESSION, DecisionsStore, DecisionsStoreError
from engramrag.decisions.store import MIGRATIONS, SCHEMA_VERSION
from engramrag.store import Home


def test_round_trip_in_a_real_file_with_wal(tmp_path: Path) -> None:
    store = DecisionsStore.for_home(Home.at(tmp_path / "home"))
    made = store.decide(MERGE, "dagster", "dagster labs", "related", "minji", note="the company", context={"s": 0.8})

    reopened = DecisionsStore(tmp_path / "home" / "decisions.sqlite")
    assert reopened.current_for(MERGE, "dagster", "dagster labs") == made
    assert made.context == {"s": 0.8}
    assert (made.operator, made.note, made.replaces, made.undone_at) == ("minji", "the company", None, None)
    assert made.decided_at.endswith("+00:00")
    raw = sqlite3.connect(tmp_path / "home" / "decisions.sqlite")
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS)
    finally:
        raw.close()


def test_merge_pairs_are_canonical_and_broader_flips(tmp_path: Path) -> None:
    store = DecisionsStore(tmp_path / "d.sqlite")
    swapped = store.decide(MERGE, "tool", "dagster", "broader", "minji")
    assert (swapped.left_key, swapped.right_key, swapped.verdict) == ("dagster", "tool", "narrower")
    assert store.current_for(MERGE, "tool", "dagster") == swapped
    assert store.current_for(MERGE, "dagster", "tool") == swapped

    in_order = store.decide(MERGE, "a", "b", "broader", "minji")
    assert (in_order.left_key, in_order.right_key, in_order.verdict) == ("a", "b", "broader")

    later = store.decide(SUPERSESSION, "z-decision", "a-decision", "accept", "minji")
    assert (later.left_key, later.right_key) == ("z-decision", "a-decision")
    assert store.current_for(SUPERSESSION, "a-decision", "z-decision") is None


def test_undo_restores_the_previous_verdict_and_keeps_history(tmp_path: Path) -> None:
    store = DecisionsStore(tmp_path / "d.sqlite")
    first = store.decide(MERGE, "a", "b", "related", "minji", context={"score": 0.7})
    second = store.decide(MERGE, "b", "a", "same", "jisoo", note="same service")
    assert second.replaces == first.id

    undone = store.undo(MERGE, "a", "b", "hana")
    assert undone is not None and undone.id == second.id
    assert undone.undone_by == "hana" and undone.undone_at is not None
    assert store.current_for(MERGE, "a", "b") == first
    assert store.current(MERGE) == [first]

    history = store.history(MERGE, "a", "b")
    assert [(v.id, v.verdict, v.operator, v.replaces, v.undone_by) for v in history] == [
        (first.id, "related", "minji", None, None),
        (second.id, "same", "jisoo", first.id, "hana"),
    ]

    # Undoing again walks back past the first verdict; then there is nothing left to undo.
    assert store.undo(MERGE, "b", "a", "hana").id == first.id
    assert store.current_for(MERGE, "a", "b") is None
    assert store.current(MERGE) == []
    assert store.undo(MERGE, "a", "b", "hana") is None
    assert len(store.history(MERGE)) == 2

    # A new verdict after undoing everything replaces nothing.
    again = store.decide(MERGE, "a", "b", "distinct", "minji")
    assert again.replaces is None and store.current_for(MERGE, "a", "b") == again


def test_deciding_the_current_verdict_again_records_nothing(tmp_path: Path) -> None:
    store = DecisionsStore(tmp_path / "d.sqlite")
    first = store.decide(MERGE, "a", "b", "broader", "minji")
    assert store.decide(MERGE, "b", "a", "narrower", "jisoo") == first
    assert len(store.history(MERGE)) == 1


def test_current_and_history_filters(tmp_path: Path) -> None:
    store = DecisionsStore(tmp_path / "d.sqlite")
    ab = store.decide(MERGE, "a", "b", "same", "minji")
    bc = store.decide(MERGE, "c", "b", "distinct", "minji")
    cd = store.decide(MERGE, "c", "d", "related", "minji")
    replaced = store.decide(MERGE, "a", "b", "related", "minji")
    store.decide(SUPERSESSION, "old", "new", "accept", "minji")

    assert [v.id for v in store.current(MERGE)] == [bc.id, cd.id, replaced.id]
    assert [v.id for v in store.history(MERGE, "b")] == [ab.id, bc.id, replaced.id]
    assert [v.id for v in store.history(MERGE, right="d")] == [cd.id]
    assert [v.topic for v in store.current(SUPERSESSION)] == [SUPERSESSION]


@pytest.mark.parametrize(
    ("topic", "left", "right", "verdict", "operator", "message"),
    [
        ("merge", "a", "b", "accept", "minji", "unknown merge verdict 'accept'"),
        ("supersession", "a", "b", "same", "minji", "unknown supersession verdict 'same'"),
        ("review", "a", "b", "same", "minji", "unknown topic 'review'"),
        ("merge", "a", "a", "same", "minji", "two different keys"),
        ("merge", "", "a", "same", "minji", "left key must be a non-empty string"),
        ("merge", "a", "b", "same", "  ", "needs an operator"),
    ],
)
def test_validation_errors(
    tmp_path: Path, topic: str, left: str, right: str, verdict: str, operator: str, message: str
) -> None:
    store = DecisionsStore(tmp_path / "d.sqlite")
    with pytest.raises(ValueError, match=message):
        store.decide(topic, left, right, verdict, operator)
    assert store.history(MERGE) == []


def test_context_must_be_json(tmp_path: Path) -> None:
    store = DecisionsStore(tmp_path / "d.sqlite")
    with pytest.raises(ValueError, match="JSON"):
        store.decide(MERGE, "a", "b", "same", "minji", context={"when": object()})
    with pytest.raises(ValueError, match="finite"):
        store.decide(MERGE, "a", "b", "same", "minji", context={"score": float("nan")})
    assert store.history(MERGE) == []


def test_a_file_that_is_not_sqlite_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "decisions.sqlite"
    path.write_bytes(b"this is a markdown note, not a database\n" * 200)
    with pytest.raises(DecisionsStoreError) as raised:
        DecisionsStore(path)
    message = str(raised.value)
    assert str(path) in message and "not a usable SQLite database" in message and "move it aside" in message
    assert path.read_bytes().startswith(b"this is a markdown note")


def test_a_write_after_the_file_was_replaced_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "decisions.sqlite"
    store = DecisionsStore(path)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(b"\x00garbage" * 1000)
    with pytest.raises(DecisionsStoreError, match=str(path)):
        store.decide(MERGE, "a", "b", "same", "minji")


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite"
    DecisionsStore(path)
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(DecisionsStoreError, match="upgrade EngramRAG"):
        DecisionsStore(path)


# --- concurrency and crashes: real OS processes (spawned, so they share nothing with this one) ---


def _writer(path: str, prefix: str, count: int, reading: multiprocessing.Event) -> None:
    reading.wait(60)
    store = DecisionsStore(path)
    for number in range(count):
        store.decide(MERGE, f"{prefix}-{number:04d}", f"{prefix}-partner", "same", prefix, context={"n": number})


def _long_reader(path: str, reading: multiprocessing.Event, writers_done: multiprocessing.Event, out) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN")
    before = connection.execute("SELECT count(*) FROM verdicts").fetchone()[0]
    reading.set()
    finished = writers_done.wait(120)
    during = connection.execute("SELECT count(*) FROM verdicts").fetchone()[0]
    connection.execute("COMMIT")
    out.put((before, during, finished))
    connection.close()


def test_two_writers_and_a_long_reader_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "d.sqlite")
    seed = DecisionsStore(path).decide(MERGE, "seed-a", "seed-b", "related", "minji")
    context = multiprocessing.get_context("spawn")
    reading, writers_done, out = context.Event(), context.Event(), context.Queue()
    reader = context.Process(target=_long_reader, args=(path, reading, writers_done, out))
    writers = [context.Process(target=_writer, args=(path, name, 200, reading)) for name in ("one", "two")]
    reader.start()
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(180)
    writers_done.set()
    reader.join(60)

    assert [writer.exitcode for writer in writers] == [0, 0]
    assert reader.exitcode == 0
    before, during, finished = out.get(timeout=5)
    # The writers finished while the reader held its transaction, and the reader's snapshot never moved.
    assert (before, during, finished) == (1, 1, True)

    store = DecisionsStore(path)
    current = store.current(MERGE)
    assert len(current) == 401 and current[0] == seed
    for name in ("one", "two"):
        mine = [v for v in current if v.operator == name]
        assert sorted(v.context["n"] for v in mine) == list(range(200))


def _endless_writer(path: str) -> None:
    store = DecisionsStore(path)
    number = 0
    while True:
        store.decide(MERGE, f"k-{number:06d}", "partner", "same", "crasher", note="x" * 4000, context={"n": number})
        number += 1


def test_a_killed_writer_leaves_only_complete_verdicts(tmp_path: Path) -> None:
    path = str(tmp_path / "d.sqlite")
    DecisionsStore(path)
    child = multiprocessing.get_context("spawn").Process(target=_endless_writer, args=(path,))
    child.start()
    deadline = time.monotonic() + 60
    written = 0
    while written < 150 and time.monotonic() < deadline:
        time.sleep(0.02)
        written = len(DecisionsStore(path).history(MERGE))
    os.kill(child.pid, signal.SIGKILL)
    child.join(10)
    assert child.exitcode == -signal.SIGKILL
    assert written >= 150

    store = DecisionsStore(path)
    rows = store.history(MERGE)
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        raw.close()
    assert len(rows) >= written
    assert [v.id for v in rows] == list(range(1, len(rows) + 1))
    for number, verdict in enumerate(rows):
        assert verdict.left_key == f"k-{number:06d}" and verdict.context == {"n": number}
        assert verdict.note == "x" * 4000 and verdict.verdict == "same" and verdict.operator == "crasher"
    after = store.decide(MERGE, "after", "crash", "distinct", "minji")
    assert after.id == len(rows) + 1
