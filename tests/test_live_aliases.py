"""The aliased labels of the live notes, kept per note between reads (``catalog.live_aliases``): after notes are
changed, added and deleted, a read that takes the unchanged notes' pairs gives what a read of every note gives.
A real DuckDB catalog in a temporary home, no build."""

from __future__ import annotations

from engramrag.catalog import live_aliases as module
from engramrag.catalog.connection import catalog_writer
from engramrag.catalog.live_aliases import live_aliases
from engramrag.lifecycle.timeline_notes import NOTE_DIGEST
from engramrag.store import Home

BUCKETS = 4


def _note(catalog, doc_id: str, rows: list[tuple[str, list[str] | None]], text: str = "x") -> None:
    catalog.execute("DELETE FROM entities WHERE doc_id = ?", [doc_id])
    catalog.execute("DELETE FROM documents WHERE doc_id = ?", [doc_id])
    catalog.execute(
        "INSERT INTO documents (doc_id, path, bucket, agent_authored, body_hash, size_bytes, mtime_ns, text, "
        "extracted_hash, extractor) VALUES (?, ?, 0, false, ?, 1, 1, ?, ?, 'rules')",
        [doc_id, f"{doc_id}.md", f"hash-{text}", text, f"extracted-{text}"],
    )
    for number, (label, aliases) in enumerate(rows):
        catalog.execute("INSERT INTO entities VALUES (?, ?, ?, 'Tool', ?, 1, 1, NULL)",
                        [doc_id, f"e{number}", label, aliases])  # fmt: skip


def _read(home: Home, whole: bool = False) -> set:
    with catalog_writer(home, BUCKETS) as catalog:
        digests = dict(catalog.execute(f"SELECT doc_id, {NOTE_DIGEST} FROM documents WHERE NOT gone").fetchall())
        found = live_aliases(catalog, home.catalog_path, digests, whole=whole)
        every = {(str(label), tuple(aliases)) for label, aliases in catalog.execute(
            "SELECT DISTINCT label, aliases FROM entities WHERE len(aliases) > 0 AND doc_id IN "
            "(SELECT doc_id FROM documents WHERE NOT gone)").fetchall()}  # fmt: skip
    assert found == every  # what the timeline read before, as one scan of every mention row
    return found


def test_pairs_kept_per_note_equal_a_read_of_every_note(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(module, "WHOLE_READ_SHARE", 0.9)  # small vault: patch rather than read all
    home = Home.at(tmp_path / "home")
    with catalog_writer(home, BUCKETS) as catalog:
        for number in range(8):
            _note(catalog, f"d{number}", [("Postgres", ["PG", "pgsql"]), (f"Tool {number}", None),
                                          (f"Team {number}", ["T{number}"])])  # fmt: skip
    assert ("Postgres", ("PG", "pgsql")) in _read(home)
    with catalog_writer(home, BUCKETS) as catalog:
        _note(catalog, "d1", [("Postgres", ["PG"]), ("Lance", ["LanceDB"])], text="edited")  # changed
        _note(catalog, "d9", [("Kafka", ["event bus"])], text="new")  # added
        catalog.execute("UPDATE documents SET gone = true WHERE doc_id = 'd2'")  # deleted: its pairs go
    found = _read(home)
    assert {("Postgres", ("PG",)), ("Lance", ("LanceDB",)), ("Kafka", ("event bus",))} <= found
    assert ("Team 2", ("T2",)) not in found and ("Postgres", ("PG", "pgsql")) in found  # other notes still say it
    with catalog_writer(home, BUCKETS) as catalog:
        for number in range(8):
            _note(catalog, f"d{number}", [("Postgres", ["PG"])], text=f"again {number}")
    found = _read(home)
    assert ("Postgres", ("PG", "pgsql")) not in found  # no note gives it any more
    assert _read(home, whole=True) == found
