"""The live notes' labels, read once per state of the live notes' extractions. A real DuckDB catalog, no build."""

from __future__ import annotations

import pandas as pd

from engramrag.catalog.connection import catalog_writer
from engramrag.catalog.digests import LIVE_EXTRACTIONS, note_digest
from engramrag.catalog.live_labels import labels_by_first_mention, live_labels
from engramrag.store import Home


def write(home: Home, documents: list[tuple[str, str, bool]], mentions: list[tuple[str, str]]) -> None:
    """documents: (doc_id, extracted_hash, gone); mentions: (doc_id, label)."""
    with catalog_writer(home, 4) as catalog:
        catalog.execute("DELETE FROM documents")
        catalog.execute("DELETE FROM entities")
        docs = pd.DataFrame([(doc_id, f"{doc_id}.md", 0, False, "h", 1, 0, "", gone, extracted, "rules")
                             for doc_id, extracted, gone in documents],
                            columns=["doc_id", "path", "bucket", "agent_authored", "body_hash", "size_bytes",
                                     "mtime_ns", "text", "gone", "extracted_hash", "extractor"])  # fmt: skip
        rows = pd.DataFrame([(doc_id, label.lower(), label, "Concept", 1) for doc_id, label in mentions],
                            columns=["doc_id", "entity_key", "label", "kind", "mentions"])  # fmt: skip
        catalog.register("new_documents", docs)
        catalog.execute(f"INSERT INTO documents ({', '.join(docs.columns)}) SELECT * FROM new_documents")
        catalog.register("new_entities", rows)
        catalog.execute(f"INSERT INTO entities ({', '.join(rows.columns)}) SELECT * FROM new_entities")


def labels(home: Home) -> tuple[str, ...]:
    with catalog_writer(home, 4) as catalog:
        return live_labels(catalog, home.catalog_path)


def test_live_labels_are_read_again_only_when_the_live_notes_or_their_extractions_change(tmp_path) -> None:
    home, other = Home.at(tmp_path / "one"), Home.at(tmp_path / "two")
    write(home, [("d1", "x1", False), ("d2", "x2", False)], [("d1", "Falcon"), ("d2", "Postgres"), ("d2", "Falcon")])
    write(other, [("d9", "x9", False)], [("d9", "Zeta")])
    first = labels(home)
    assert first == ("Falcon", "Postgres")
    assert labels(other) == ("Zeta",) and labels(home) is first  # kept per catalog file
    # Both extracted again (a note's rows change only with its extraction): their labels are read again. One read
    # gives both orders: by first mention and sorted.
    write(home, [("d1", "x1b", False), ("d2", "x2b", False)], [("d1", "Zulu"), ("d2", "Lance DB"), ("d1", "Alpha")])
    with catalog_writer(home, 4) as catalog:
        first_mentioned = labels_by_first_mention(catalog, home.catalog_path)
        assert first_mentioned == ("Alpha", "Zulu", "Lance DB")  # d1's rows by entity key ("alpha" < "zulu"), then d2
        assert live_labels(catalog, home.catalog_path) == ("Alpha", "Lance DB", "Zulu")
        assert labels_by_first_mention(catalog, home.catalog_path) is first_mentioned
    # d1 gone: its labels leave the live ones.
    write(home, [("d1", "x1b", True), ("d2", "x2b", False)], [("d1", "Zulu"), ("d2", "Lance DB"), ("d1", "Alpha")])
    assert labels(home) == ("Lance DB",)


def test_a_note_digest_moves_with_its_extraction_and_is_null_for_a_note_the_catalog_lacks(tmp_path) -> None:
    home = Home.at(tmp_path / "home")

    def digests() -> tuple[dict[str, str | None], tuple]:
        with catalog_writer(home, 4) as catalog:
            per_note = dict(catalog.execute(
                f"SELECT l.doc_id, {note_digest('d.body_hash', table='d')} FROM (VALUES ('d1'), ('d2'), ('d9')) "
                "l(doc_id) LEFT JOIN documents d USING (doc_id)"
            ).fetchall())  # fmt: skip
            return per_note, catalog.execute(LIVE_EXTRACTIONS).fetchone()

    write(home, [("d1", "x1", False), ("d2", "x2", False)], [])
    before, live_before = digests()
    assert before["d9"] is None and None not in (before["d1"], before["d2"]) and before["d1"] != before["d2"]
    write(home, [("d1", "x1", False), ("d2", "x2b", False)], [])
    after, live_after = digests()
    assert after["d1"] == before["d1"] and after["d2"] != before["d2"] and live_after != live_before
    write(home, [("d1", "x1", False), ("d2", "x2b", True)], [])
    assert digests()[1][0] == 1  # a gone note leaves the live ones


def test_the_embedding_step_takes_the_live_labels_only_while_the_embedded_notes_are_the_live_ones(tmp_path) -> None:
    from engramrag.lifecycle.embedding import _embedded_are_live

    home = Home.at(tmp_path / "home")
    write(home, [("d1", "x1", False), ("d2", "x2", False)], [("d1", "Falcon"), ("d2", "Postgres")])

    def embedded(rows: list[tuple[str, str]]) -> bool:
        with catalog_writer(home, 4) as catalog:
            catalog.execute("DELETE FROM embedded_documents")
            for doc_id, extraction in rows:
                catalog.execute("INSERT INTO embedded_documents VALUES (?, 0, ?, 'hash', 1, 1, 1, now())",
                                [doc_id, extraction])  # fmt: skip
            return _embedded_are_live(catalog)

    assert embedded([("d1", "x1|rules"), ("d2", "x2|rules")])
    assert not embedded([("d1", "x1|rules")])  # d2 not embedded yet
    assert not embedded([("d1", "x1|rules"), ("d2", "x0|rules")])  # d2 embedded at an earlier extraction
    assert not embedded([("d1", "x1|rules"), ("d2", "x2|rules"), ("d3", "x3|rules")])  # d3: no such live note


def test_labels_patched_from_the_notes_extracted_again_equal_every_label_read_again(tmp_path) -> None:
    # Issue 16: a one-note edit read and sorted every live label (65 ms at 10,000 notes); only the labels first
    # mentioned in the notes that moved, or named by them now, are read again.
    import random

    rng = random.Random(16)
    home = Home.at(tmp_path / "home")
    names = ["Falcon", "Postgres", "Zeta", "Alpha", "Lance DB", "Kafka", "Atlas", "Minji", "Billing", "Ledger"]
    notes = {f"d{number}": [0, False, rng.sample(names, 3)] for number in range(8)}  # extraction, gone, labels

    def written() -> None:
        write(home, [(doc, f"x{extraction}", gone) for doc, (extraction, gone, _) in notes.items()],
              [(doc, label) for doc, (_, _, named) in notes.items() for label in named])  # fmt: skip

    def expected() -> tuple[tuple[str, ...], tuple[str, ...]]:
        with catalog_writer(home, 4) as catalog:
            first = tuple(label for (label,) in catalog.execute(
                "SELECT e.label FROM entities e JOIN documents d USING (doc_id) WHERE NOT d.gone "
                "GROUP BY e.label ORDER BY min(e.doc_id || chr(0) || e.entity_key), e.label"
            ).fetchall())  # fmt: skip
        return first, tuple(sorted(first))

    written()
    kept_as_they_were = 0
    for step in range(40):
        with catalog_writer(home, 4) as catalog:
            before = labels_by_first_mention(catalog, home.catalog_path)
        # One or two notes extracted again with other labels (or the same), one now and then gone or back.
        for doc in rng.sample(sorted(notes), rng.choice([1, 1, 2])):
            notes[doc][0] += 1
            if rng.random() < 0.15:
                notes[doc][1] = not notes[doc][1]
            elif rng.random() < 0.6:
                notes[doc][2] = rng.sample(names, rng.randint(0, 4))
        if rng.random() < 0.1:
            notes[f"d{len(notes)}"] = [0, False, rng.sample(names, 2)]
        written()
        with catalog_writer(home, 4) as catalog:
            found = (labels_by_first_mention(catalog, home.catalog_path), live_labels(catalog, home.catalog_path))
        assert found == expected(), f"step {step}"
        kept_as_they_were += found[0] is before
    assert 0 < kept_as_they_were < 40  # some edits moved no label: the very tuple was given again


def test_the_overlay_check_is_given_again_for_the_same_rows_and_labels_and_made_again_when_either_moves(tmp_path):
    from engramrag.checks.resolution import overlay_names_existing_entities

    home = Home.at(tmp_path / "home")
    write(home, [("d1", "x1", False), ("d2", "x2", False)], [("d1", "Falcon"), ("d2", "Postgres")])

    def clusters(rows: list[tuple[str, str]]) -> None:
        with catalog_writer(home, 4) as catalog:
            catalog.execute("DELETE FROM entity_clusters")
            for key, cluster in rows:
                catalog.execute("INSERT INTO entity_clusters (entity_key, cluster_key) VALUES (?, ?)", [key, cluster])

    clusters([("falcon", "falcon"), ("postgres", "falcon")])
    first = overlay_names_existing_entities(home)
    assert first.passed and overlay_names_existing_entities(home) is first
    clusters([("falcon", "falcon"), ("postgres", "falcon"), ("atlas", "falcon")])  # a key no live note mentions
    stray = overlay_names_existing_entities(home)
    assert not stray.passed and stray.metadata["failures"][0]["examples"] == ["atlas"]
    write(home, [("d1", "x1", False), ("d2", "x2b", False)], [("d1", "Falcon"), ("d2", "Postgres"), ("d2", "Atlas")])
    assert overlay_names_existing_entities(home).passed  # the labels moved: checked again


def test_order_free_digests_keep_which_values_go_together(tmp_path) -> None:
    # DuckDB's hash(a, b) XORed over rows kept each column's values but not their pairing: two clusters of two
    # merged into one, or two notes trading titles, left the digests the steps compare as they were.
    from engramrag.lifecycle.freshness import CATALOG_PARTS
    from engramrag.lifecycle.timeline_notes import TITLES_DIGEST

    home = Home.at(tmp_path / "home")
    write(home, [("d1", "x1", False), ("d2", "x2", False)], [])
    states = {
        "clusters": ("DELETE FROM entity_clusters; INSERT INTO entity_clusters VALUES ('a', 'a'), ('b', 'a'), "
                     "('c', 'c'), ('d', 'c')", "UPDATE entity_clusters SET cluster_key = 'a'"),
        "titles": ("UPDATE documents SET title = CASE doc_id WHEN 'd1' THEN 'X' ELSE 'Y' END",
                   "UPDATE documents SET title = CASE doc_id WHEN 'd1' THEN 'Y' ELSE 'X' END"),
    }  # fmt: skip
    for name, (before, after) in states.items():
        query = CATALOG_PARTS["clusters"] if name == "clusters" else TITLES_DIGEST
        with catalog_writer(home, 4) as catalog:
            catalog.execute(before)
            first = catalog.execute(query).fetchone()
            catalog.execute(after)
            assert catalog.execute(query).fetchone() != first, name
