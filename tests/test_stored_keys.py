"""The key table kept in the catalog: after each change, the table assembled from stored and recomputed rows equals
the one built from every mention row, and only the keys the change touched are recomputed. A real DuckDB catalog in a
temporary home, no build."""

from __future__ import annotations

import json
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest

from engramrag.catalog.connection import catalog_writer
from engramrag.resolve.inputs import live_mentions
from engramrag.resolve.keytable import KeyTable, build_key_table
from engramrag.resolve.stored_keys import (
    KeyTableUpdate,
    key_inputs,
    key_mention_lists,
    live_label_keys,
    update_key_table,
    write_key_rows,
)
from engramrag.store import Home

MAX_POSTING = 1  # an alias two keys own is generic: the shared-alias names must be recomputed across keys


def document(doc_id: str, path: str, body: str, aliases: list[str] | None = None, gone: bool = False) -> tuple:
    front_matter = json.dumps({"aliases": aliases}) if aliases is not None else None
    return (doc_id, path, 0, None, None, False, f"h-{body}", len(body), 0, body, front_matter, None, gone)


def mention(doc_id: str, entity_key: str, label: str, kind: str, count: int = 1, aliases: list[str] | None = None):
    return (doc_id, entity_key, label, kind, aliases or [], count, 1, None)


class Vault:
    """The catalog's documents and entities, rewritten whole at each step as a build would leave them."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.documents: dict[str, tuple] = {}
        self.mentions: dict[str, list[tuple]] = {}

    def put(self, doc: tuple, rows: list[tuple]) -> None:
        self.documents[doc[0]] = doc
        self.mentions[doc[0]] = rows

    def write(self) -> None:
        with catalog_writer(self.home, 4) as catalog:
            catalog.execute("DELETE FROM documents")
            catalog.execute("DELETE FROM entities")
            docs = pd.DataFrame(list(self.documents.values()), columns=[
                "doc_id", "path", "bucket", "title", "author", "agent_authored", "body_hash", "size_bytes", "mtime_ns",
                "text", "front_matter", "seen_run", "gone"])  # fmt: skip
            # As an extraction records it: what rewrote the note's mention rows.
            docs["extracted_hash"] = [repr(self.mentions[doc_id]) for doc_id in docs["doc_id"]]
            catalog.register("new_documents", docs)
            catalog.execute(f"INSERT INTO documents ({', '.join(docs.columns)}) SELECT * FROM new_documents")
            rows = pd.DataFrame([row for rows in self.mentions.values() for row in rows], columns=[
                "doc_id", "entity_key", "label", "kind", "aliases", "mentions", "first_line", "core_kind"])  # fmt: skip
            catalog.register("new_entities", rows)
            catalog.execute(f"INSERT INTO entities ({', '.join(rows.columns)}) SELECT * FROM new_entities")

    def update(self, code: str = "code-1") -> tuple[KeyTableUpdate, KeyTable]:
        """One run: the stored table brought up to date (and written back), and the table built from scratch."""
        self.write()
        with catalog_writer(self.home, 4) as catalog:
            labels = live_label_keys(catalog, self.home.catalog_path)
            update = update_key_table(catalog, labels, None, MAX_POSTING, code)
            update.table.fresh_lists = key_mention_lists(catalog, labels, {row.key for row in update.fresh})
            # The lists taken from the rows the update read (a key it did not read comes from the catalog).
            asked = {row.key for row in update.fresh} | {"falcon"}
            from_rows = key_mention_lists(catalog, labels, asked, update.mentions)
            assert from_rows == key_mention_lists(catalog, labels, asked)
            afresh = key_inputs(catalog, labels)  # the inputs, patched or not, are those of every key computed anew
            assert update.inputs == [afresh[key] for key in update.table.keys]
            catalog.execute("BEGIN")
            write_key_rows(catalog, update, code)
            catalog.execute("COMMIT")
            mentions = live_mentions(catalog)
            documents = catalog.execute("SELECT doc_id, path, front_matter FROM documents WHERE NOT gone").df()
        return update, build_key_table(mentions, documents, None, MAX_POSTING)


def assert_same_table(update: KeyTableUpdate, full: KeyTable) -> None:
    for field in fields(KeyTable):
        if field.name in ("mentions", "vectors", "has_vector"):
            continue
        assert getattr(update.table, field.name) == getattr(full, field.name), field.name
    assert update.table.mentions == {}  # the caller reads the lists of the keys it quotes, as a full build has them
    fresh = {row.key for row in update.fresh}
    assert update.table.fresh_lists == {key: full.mentions[key] for key in fresh}


def recomputed(update: KeyTableUpdate) -> set[str]:
    return {row.key for row in update.fresh}


@pytest.fixture()
def vault(tmp_path) -> Vault:
    vault = Vault(Home.at(tmp_path / "home"))
    vault.put(document("d1", "people/minji-park.md", "one", aliases=["박민지", "MP"]), [
        mention("d1", "doc", "Minji Park", "Document"), mention("d1", "e1", "Postgres", "Tool", 3),
        mention("d1", "e2", "Falcon", "Project")])  # fmt: skip
    vault.put(document("d2", "notes/stack.md", "two"), [
        mention("d2", "doc", "Stack", "Document"), mention("d2", "e1", "postgres", "Tool"),
        mention("d2", "e2", "Lance DB", "Tool", aliases=["lance"]), mention("d2", "e3", "minji park", "Person", 2)])
    vault.put(document("d3", "notes/lancedb.md", "three", aliases=["MP"]), [
        mention("d3", "doc", "LanceDB", "Document"), mention("d3", "e1", "ADR-0001", "Decision")])  # fmt: skip
    return vault


def test_the_stored_table_equals_a_full_one_after_each_change_and_only_touched_keys_are_recomputed(vault):
    first, full = vault.update()
    assert first.whole == "nothing stored"
    assert_same_table(first, full)
    assert recomputed(first) == set(full.keys)
    assert "mp" not in full.names[full.keys.index("minji park")]  # "MP" is declared by two notes: generic

    unchanged, full = vault.update()
    assert unchanged.whole is None and unchanged.fresh == [] and unchanged.removed == []
    assert first.inputs_computed is None and unchanged.inputs_computed == 0
    assert_same_table(unchanged, full)

    # An edit of d2 (one count): the keys mentioned there and only they.
    vault.put(vault.documents["d2"], [*vault.mentions["d2"][:3], mention("d2", "e3", "minji park", "Person", 5)])
    edited, full = vault.update()
    assert recomputed(edited) == {"minji park"}
    assert edited.inputs_computed == 4  # d2's keys: their inputs computed again, the others' kept
    assert_same_table(edited, full)

    # d2 no longer names Minji Park, whom d1 also names: found by the stored row, which lists d2 under that key.
    vault.put(vault.documents["d2"], vault.mentions["d2"][:3])
    dropped, full = vault.update()
    assert recomputed(dropped) == {"minji park"} and dropped.inputs_computed == 4
    assert_same_table(dropped, full)
    vault.put(vault.documents["d2"], [*vault.mentions["d2"], mention("d2", "e3", "minji park", "Person", 5)])
    assert recomputed(vault.update()[0]) == {"minji park"}

    # The front matter of d3 changes (its text does not): only its title key; "MP" stops being generic for the other.
    vault.put(document("d3", "notes/lancedb.md", "three", aliases=["LDB"]), vault.mentions["d3"])
    front, full = vault.update()
    assert recomputed(front) == {"lancedb"}
    assert_same_table(front, full)
    assert "mp" in full.names[full.keys.index("minji park")]

    # A new note with d1's file name: "minji-park" no longer declares anything, though no row of that key changed.
    vault.put(document("d4", "archive/minji-park.md", "four"), [mention("d4", "doc", "Old Profile", "Document")])
    named, full = vault.update()
    assert recomputed(named) == {"old profile"}
    assert_same_table(named, full)
    assert "minjipark" not in full.declared[full.keys.index("minji park")]

    # d2 is deleted: its only keys go, the keys it shared are recomputed.
    vault.put(document("d2", "notes/stack.md", "two", gone=True), vault.mentions["d2"])
    deleted, full = vault.update()
    assert set(deleted.removed) == {"stack", "lance db", "postgres", "minji park"}
    assert recomputed(deleted) == {"postgres", "minji park"}
    assert_same_table(deleted, full)

    # Other code: every row again.
    recoded, full = vault.update(code="code-2")
    assert recoded.whole == "code changed" and recomputed(recoded) == set(full.keys)
    assert_same_table(recoded, full)


def test_a_process_uses_the_rows_it_wrote_only_while_the_catalog_still_holds_that_write(vault):
    # Issue 16: a resident builder (engram watch) need not read back the rows it wrote (6.6 s at 100,000 notes).
    first, _ = vault.update()
    assert not first.kept_in_memory  # nothing written by this process yet
    again, full = vault.update()
    assert again.kept_in_memory and again.fresh == []
    assert_same_table(again, full)
    # A write rolled back: the catalog holds the earlier write, so its rows are read back, not this process's.
    vault.put(vault.documents["d2"], [*vault.mentions["d2"][:3], mention("d2", "e3", "minji park", "Person", 7)])
    vault.write()
    with catalog_writer(vault.home, 4) as catalog:
        labels = live_label_keys(catalog, vault.home.catalog_path)
        update = update_key_table(catalog, labels, None, MAX_POSTING, "code-1")
        catalog.execute("BEGIN")
        write_key_rows(catalog, update, "code-1")
        catalog.execute("ROLLBACK")
    after, full = vault.update()
    assert not after.kept_in_memory and recomputed(after) == {"minji park"}
    assert_same_table(after, full)
    # Rows deleted by hand (the meta row left): read back, and every key computed again.
    with catalog_writer(vault.home, 4) as catalog:
        catalog.execute("DELETE FROM resolution_keys WHERE entity_key = 'falcon'")
    emptied, full = vault.update()
    assert not emptied.kept_in_memory and recomputed(emptied) == {"falcon"}
    assert_same_table(emptied, full)
    assert vault.update()[0].kept_in_memory


def test_a_keys_inputs_change_with_its_mention_rows_and_documents_and_only_then(vault):
    vault.write()

    def inputs() -> dict[str, str]:
        with catalog_writer(vault.home, 4) as catalog:
            return key_inputs(catalog, live_label_keys(catalog, vault.home.catalog_path))

    first = inputs()
    assert set(first) == {"minji park", "postgres", "falcon", "stack", "lance db", "lancedb", "adr-0001"}
    assert inputs() == first
    # d3's text changes (its evidence would read differently): only the keys mentioned in d3.
    vault.put(document("d3", "notes/lancedb.md", "three, edited", aliases=["MP"]), vault.mentions["d3"])
    vault.write()
    changed = {key for key, digest in inputs().items() if digest != first[key]}
    assert changed == {"lancedb", "adr-0001"}
    # A moved note, a written alias, a first line: each changes the keys of that row only.
    vault.put(document("d1", "people/minji.md", "one", aliases=["박민지", "MP"]), vault.mentions["d1"])
    vault.put(vault.documents["d2"], [*vault.mentions["d2"][:2], mention("d2", "e2", "Lance DB", "Tool")])
    vault.write()
    now = inputs()
    assert {key for key in first if now[key] != first[key]} == {
        "minji park", "postgres", "falcon", "lancedb", "adr-0001", "lance db"}  # fmt: skip


def test_key_vectors_give_the_rows_a_dict_of_the_same_vectors_gives() -> None:
    import numpy as np

    from engramrag.resolve.keytable import KeyRow, KeyVectors, assemble_key_table

    rows = [KeyRow(key, key.title(), "Concept", "Concept", frozenset(), frozenset(), frozenset({"d1"}))
            for key in ("alpha", "beta", "gamma", "delta")]  # fmt: skip
    rows.sort(key=lambda row: row.key)
    vectors = np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    as_dict = assemble_key_table(rows, {}, {"gamma": vectors[0], "alpha": vectors[1]}, MAX_POSTING)
    as_rows = assemble_key_table(rows, {}, KeyVectors(["gamma", "alpha"], vectors), MAX_POSTING)
    assert as_rows.has_vector.tolist() == as_dict.has_vector.tolist() == [True, False, False, True]
    assert np.array_equal(as_rows.vectors, as_dict.vectors) and as_rows.vectors.dtype == np.float32
    assert not as_rows.vectors[1].any()  # beta: no vector, a zero row
    assert dict(KeyVectors(["gamma"], vectors[:1])).keys() == {"gamma"}
    # The key table's own keys in the matrix's order: the matrix itself, read-only (no second copy of 400 MB).
    aligned = KeyVectors(["alpha", "gamma"], vectors[::-1].copy())
    taken, present = aligned.rows(["alpha", "gamma"])
    assert taken is aligned.matrix and present.all() and not taken.flags.writeable
    assert np.array_equal(aligned.rows(["gamma", "alpha"])[0], vectors)  # another order: gathered


def test_a_table_patched_from_the_last_assembly_equals_one_assembled_whole() -> None:
    from engramrag.resolve.keytable import KeyAssembly, KeyRow

    def row(key: str, label: str, declared=(), written=(), documents=("d1",)) -> KeyRow:
        return KeyRow(key, label, "Concept", "Concept", frozenset(declared), frozenset(written), frozenset(documents))

    def whole(rows: list[KeyRow]) -> KeyTable:
        return KeyAssembly.of(rows, file_names, None, MAX_POSTING).table

    file_names = {"beta": {"beta-notes"}}
    # Keys a change does not touch, after the four it does (a table is patched when at most a quarter of it changed).
    others = [row(f"other {n}", f"Other {n}") for n in range(8)]
    first_rows = [row("alpha", "Alpha", written=["mp"]), row("beta", "Beta"), row("delta", "Delta", ["mp"]),
                  row("gamma", "Gamma", written=["gm"]), *others]  # fmt: skip
    first = KeyAssembly.of(first_rows, file_names, None, MAX_POSTING)
    assert "mp" not in first.table.names[0] and first.table.names[3] == frozenset({"gm"})  # two keys own "mp"
    # An edit: beta's row is another (its documents), gamma's alias changes without an alias turning generic.
    edited_rows = [first_rows[0], row("beta", "Beta", documents=["d1", "d2"]), first_rows[2],
                   row("gamma", "GAMMA", written=["gamma team"]), *others]  # fmt: skip
    patched = KeyAssembly.of(edited_rows, file_names, None, MAX_POSTING, first)
    for field in fields(KeyTable):
        assert getattr(patched.table, field.name) == getattr(whole(edited_rows), field.name), field.name
    assert patched.table.compact is first.table.compact  # patched, not assembled again
    assert patched.table.labels is not first.table.labels and first.table.labels[3] == "Gamma"  # the last one kept
    assert patched.table.declared[1] == frozenset({"betanotes"})  # the file-name alias of a patched row
    # Delta drops "mp": it stops being generic, so alpha's names change though alpha's row did not (assembled whole).
    dropped = [edited_rows[0], edited_rows[1], row("delta", "Delta"), *edited_rows[3:]]
    assembled = KeyAssembly.of(dropped, file_names, None, MAX_POSTING, patched)
    assert assembled.table.names[0] == frozenset({"mp"}) and assembled.table.compact is not patched.table.compact
    for field in fields(KeyTable):
        assert getattr(assembled.table, field.name) == getattr(whole(dropped), field.name), field.name
    # Other file names, or most rows changed: assembled whole.
    other_names = KeyAssembly.of(edited_rows, dict(file_names), None, MAX_POSTING, first)
    assert other_names.table.compact is not first.table.compact
    renamed = [row(r.key, r.label.upper()) for r in edited_rows]
    assert KeyAssembly.of(renamed, file_names, None, MAX_POSTING, patched).table.compact is not patched.table.compact


def test_key_vectors_are_kept_for_the_same_labels_and_stored_vectors_only(tmp_path) -> None:
    # Issue 16: choosing and scaling 200,000 key vectors was 2.5 s of every candidates run at 100,000 notes.
    from engramrag.embed.base import HashEmbedderConfig
    from engramrag.embed.hashing import HashEmbedder
    from engramrag.lifecycle.resolution import _key_vectors
    from engramrag.vectors import VectorStore

    home, embedder = Home.at(tmp_path / "home"), HashEmbedder(HashEmbedderConfig(dimension=16))
    store = VectorStore.for_home(home, embedder)
    store.add_labels(["Postgres", "LanceDB"], embedder.embed(["Postgres", "LanceDB"]))
    labels = pd.DataFrame({"label": ["Postgres", "postgres", "LanceDB"], "key": ["postgres", "postgres", "lancedb"]},
                          dtype=object)  # fmt: skip
    first = _key_vectors(home, embedder, labels)
    assert list(first) == ["lancedb", "postgres"]
    assert _key_vectors(home, embedder, labels.copy()) is first
    store.add_labels(["Falcon"], embedder.embed(["Falcon"]))  # another version of the stored vectors
    more = pd.concat([labels, pd.DataFrame({"label": ["Falcon"], "key": ["falcon"]}, dtype=object)])
    grown = _key_vectors(home, embedder, more)
    assert list(grown) == ["falcon", "lancedb", "postgres"]
    assert _key_vectors(home, embedder, labels) is not first  # the same labels, but the store moved on
    assert np.allclose(_key_vectors(home, embedder, labels).matrix, first.matrix)


def test_rows_kept_in_memory_through_random_edits_equal_a_table_built_from_every_mention(vault) -> None:
    # The rows and inputs of the keys an edit touched are put in their places in the kept lists (sorted again only
    # when a key comes or goes): after each of these edits the table is the one built from scratch.
    import random

    rng = random.Random(16)
    labels = ["Postgres", "postgres", "Falcon", "Lance DB", "LanceDB", "Minji Park", "ADR-0002", "Kafka", "Atlas"]
    vault.update()
    for step in range(25):
        doc_id = rng.choice(sorted(vault.documents))
        rows = [mention(doc_id, "doc", vault.mentions[doc_id][0][2], "Document")]
        rows += [mention(doc_id, f"e{number}", label, rng.choice(["Tool", "Project"]), rng.randint(1, 4))
                 for number, label in enumerate(rng.sample(labels, rng.randint(0, 4)), start=1)]  # fmt: skip
        vault.put(vault.documents[doc_id], rows)
        update, full = vault.update()
        assert update.kept_in_memory, step
        assert_same_table(update, full)
        assert [row.key for row in update.rows] == full.keys
