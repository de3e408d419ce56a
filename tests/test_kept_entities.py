"""The index's mention rows kept by a resident builder and spliced by note: after each change, the spliced rows equal
one sorted read of the catalog, and only the notes whose extraction changed are read again. A real DuckDB catalog in a
temporary home, no build."""

from __future__ import annotations

import pandas as pd
import pytest

from engramrag.catalog.connection import catalog_writer
from engramrag.retrieve import kept_entities
from engramrag.retrieve.edge_statements import note_digests
from engramrag.retrieve.kept_entities import entity_rows
from engramrag.store import Home

LISTED = "SELECT doc_id FROM embedded_documents"


class Catalog:
    def __init__(self, home: Home) -> None:
        self.home = home
        self.notes: dict[str, tuple[str, list[tuple[str, str, str, int]], bool]] = {}  # (extraction, rows, listed)

    def put(self, doc_id: str, extraction: str, rows: list[tuple[str, str, str, int]], listed: bool = True) -> None:
        self.notes[doc_id] = (extraction, rows, listed)

    def read(self, whole: bool = False) -> tuple[kept_entities.EntityRows, pd.DataFrame]:
        """The rows as the index reads them now, and one sorted read of every row."""
        with catalog_writer(self.home, 4) as catalog:
            for table in ("documents", "entities", "embedded_documents"):
                catalog.execute(f"DELETE FROM {table}")
            for doc_id, (extraction, rows, listed) in sorted(self.notes.items()):
                catalog.execute(
                    "INSERT INTO documents (doc_id, path, bucket, agent_authored, body_hash, size_bytes, mtime_ns, "
                    "text, extracted_hash, extractor, extracted_at) VALUES (?, ?, 0, false, ?, 1, 1, '', ?, 'rules', "
                    "TIMESTAMP '2026-12-06 10:00:00')",
                    [doc_id, f"notes/{doc_id}.md", extraction, extraction],
                )
                if listed:
                    catalog.execute("INSERT INTO embedded_documents VALUES (?, 0, 'x', 'hash', 1, 1, 1, now())",
                                    [doc_id])  # fmt: skip
                for key, label, kind, count in rows:
                    catalog.execute("INSERT INTO entities (doc_id, entity_key, label, kind, mentions) VALUES "
                                    "(?, ?, ?, ?, ?)", [doc_id, key, label, kind, count])  # fmt: skip
            found = entity_rows(catalog, self.home.catalog_path, LISTED, note_digests(catalog, LISTED).listed,
                                whole=whole)  # fmt: skip
            expected = catalog.execute(
                f"SELECT doc_id, entity_key, label, kind, mentions FROM entities WHERE doc_id IN ({LISTED}) "
                "ORDER BY doc_id, entity_key"
            ).df()
        return found, expected


def same(found: kept_entities.EntityRows, expected: pd.DataFrame) -> None:
    frame = found.frame()
    for column in ("doc_id", "entity_key", "label", "kind"):
        assert isinstance(frame[column].dtype, pd.CategoricalDtype)
        held = frame[column].cat.codes.to_numpy()
        assert len(set(held.tolist())) == len(frame[column].cat.categories)  # no value that no row holds
    assert frame.astype({c: object for c in ("doc_id", "entity_key", "label", "kind")}).to_dict("records") == \
        expected.astype({"mentions": frame["mentions"].dtype}).to_dict("records")  # fmt: skip


@pytest.fixture()
def catalog(tmp_path) -> Catalog:
    kept_entities._kept.clear()
    catalog = Catalog(Home.at(tmp_path / "home"))
    for number in range(40):
        catalog.put(f"d{number:02d}", "one", [("doc", f"Note {number}", "Document", 1),
                                              (f"e{number % 3}", ["Postgres", "Minji Park", "LanceDB"][number % 3],
                                               "Tool", number % 4 + 1)], listed=number % 5 != 4)  # fmt: skip
    return catalog


def test_spliced_rows_equal_a_sorted_read_after_each_change_and_only_changed_notes_are_read(catalog, monkeypatch):
    monkeypatch.setattr(kept_entities, "WHOLE_READ_SHARE", 0.5)
    first, expected = catalog.read()
    same(first, expected)
    assert first.notes_kept == 0

    unchanged, expected = catalog.read()
    same(unchanged, expected)
    assert (unchanged.notes_read, unchanged.notes_kept) == (0, 32)

    catalog.put("d07", "two", [("doc", "Note 7", "Document", 1), ("e9", "Falcon", "Project", 2)])  # a new label
    edited, expected = catalog.read()
    same(edited, expected)
    assert edited.notes_read == 1 and "Falcon" in edited.frame()["label"].cat.categories

    catalog.put("d01", "two", [("doc", "Note 1", "Document", 1)])  # the second note: the first is kept before it
    catalog.put("d10", "two", [])  # a note that names nothing is read once, not at every build
    empty, expected = catalog.read()
    same(empty, expected)
    assert empty.notes_read == 2
    catalog.put("d01", "three", [("doc", "Note 1", "Document", 1)])
    second, expected = catalog.read()
    same(second, expected)
    assert second.notes_read == 1

    del catalog.notes["d00"]  # gone, and its unique title with it
    catalog.put("d07", "three", [("doc", "Note 7", "Document", 1)])  # Falcon no longer named anywhere
    catalog.put("d025", "one", [("doc", "Between", "Document", 1), ("e0", "Postgres", "Tool", 3)])  # sorts inside
    catalog.put("zz", "one", [("doc", "Last", "Document", 1)])  # sorts after every kept note
    catalog.put("d026", "one", [("doc", "Unlisted", "Document", 1)], listed=False)
    catalog.put("d04", "one", catalog.notes["d04"][1], listed=False)  # no longer listed: its rows go
    changed, expected = catalog.read()
    same(changed, expected)
    assert (changed.notes_read, changed.notes_kept) == (3, 30)  # d07, d025 and zz read; d00 and d04 dropped
    assert "Falcon" not in changed.frame()["label"].cat.categories and "Note 0" not in changed.frame()["label"].values

    whole, expected = catalog.read(whole=True)
    same(whole, expected)
    assert whole.notes_kept == 0


def test_many_changed_notes_are_read_whole_and_another_catalog_is_never_spliced(catalog, tmp_path) -> None:
    catalog.read()
    for number in range(10):
        catalog.put(f"d{number:02d}", "two", [("doc", f"Renamed {number}", "Document", 1)])
    many, expected = catalog.read()
    same(many, expected)
    assert many.notes_kept == 0
    other = Catalog(Home.at(tmp_path / "other"))
    other.notes = dict(catalog.notes)
    elsewhere, expected = other.read()
    same(elsewhere, expected)
    assert elsewhere.notes_kept == 0
    again, expected = catalog.read()  # the first catalog's rows are kept beside the other's
    same(again, expected)
    assert again.notes_read == 0
