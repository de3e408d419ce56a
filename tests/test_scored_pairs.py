"""Which candidate pairs a run scores again, and the stored pairs it trusts: pure functions, no build.

That the rows a run keeps equal a full recomputation is shown on real builds by
``tests/test_incremental_equals_full.py`` (an edit, a delete and rename, an alias note, verdicts).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from engramrag.resolve.keytable import build_key_table
from engramrag.resolve.scored_pairs import (
    FILE,
    ScoredPairs,
    commit_pending,
    key_digests,
    meta_value,
    plan_scoring,
    trusted_token,
)


def pairs(keys: list[str], named: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    index = {key: i for i, key in enumerate(keys)}
    return (np.array([index[a] for a, _ in named], dtype=np.int64),
            np.array([index[b] for _, b in named], dtype=np.int64))  # fmt: skip


def stored(keys: list[str], digests: list[str], named: list[tuple[str, str]], settings: str = "s",
           token: str = "t1") -> ScoredPairs:  # fmt: skip
    left, right = pairs(keys, named)
    return ScoredPairs(keys, digests, left, right, settings, token)


PREVIOUS = stored(["a", "b", "c", "d", "g"], ["1", "2", "3", "4", "7"],
                  [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("a", "g")])  # fmt: skip


def test_only_pairs_touching_changed_or_new_keys_and_newly_proposed_pairs_are_scored() -> None:
    keys, digests = ["a", "b", "c", "e", "g"], ["1", "2", "3x", "5", "7"]  # c changed, d gone, e new
    now = [("a", "b"), ("a", "c"), ("b", "e"), ("b", "g")]
    plan = plan_scoring(PREVIOUS, keys, digests, *pairs(keys, now), "s")
    assert plan.whole is None
    # a-b: both unchanged and proposed before: kept. a-c: c changed. b-e: e is new. b-g: both unchanged but not
    # proposed before (a posting list fell under its cap): scored.
    assert plan.score.tolist() == [False, True, True, True]
    assert plan.kept == 1
    assert sorted(plan.stale_keys) == ["c", "d"]  # every stored row naming them goes
    assert plan.dropped == [("a", "g")]  # unchanged keys, no longer proposed
    assert plan.changed_keys == 2


def test_everything_is_scored_without_trusted_pairs_with_other_settings_or_on_the_consistency_pass() -> None:
    keys = ["a", "b"]
    left, right = pairs(keys, [("a", "b")])
    for previous, settings, whole, reason in [
        (None, "s", None, "nothing stored"),
        (PREVIOUS, "other", None, "settings or code changed"),
        (PREVIOUS, "s", "consistency pass", "consistency pass"),
    ]:
        plan = plan_scoring(previous, keys, ["1", "2"], left, right, settings, whole)
        assert plan.whole == reason
        assert plan.score.all() and plan.stale_keys == [] and plan.dropped == []


def test_stored_pairs_are_trusted_only_with_the_catalogs_token_and_row_count(tmp_path: Path) -> None:
    assert trusted_token(meta_value("t1", 12), 12) == "t1"
    assert trusted_token(meta_value("t1", 12), 0) is None  # the table was emptied since
    assert trusted_token(None, 0) is None

    PREVIOUS.save_pending(tmp_path)
    commit_pending(tmp_path)
    newer = stored(["a"], ["1"], [], token="t2")
    newer.save_pending(tmp_path)  # the catalog committed t2, the run stopped before renaming
    assert ScoredPairs.load(tmp_path, "t2").keys == ["a"]
    loaded = ScoredPairs.load(tmp_path, "t1")
    assert loaded.keys == PREVIOUS.keys and loaded.digests == PREVIOUS.digests
    assert loaded.left.tolist() == PREVIOUS.left.tolist() and loaded.right.tolist() == PREVIOUS.right.tolist()
    assert ScoredPairs.load(tmp_path, "t3") is None
    assert ScoredPairs.load(tmp_path, None) is None

    commit_pending(tmp_path)
    assert ScoredPairs.load(tmp_path, "t2").token == "t2"
    (tmp_path / FILE).write_bytes(b"not a numpy archive")
    assert ScoredPairs.load(tmp_path, "t2") is None  # unreadable: scored afresh


def mention_rows(rows: list[tuple[str, str, str, int, int]]) -> pd.DataFrame:
    return pd.DataFrame(
        [(doc, f"e{n}", label, kind, [], count, line, None) for n, (doc, label, kind, count, line) in enumerate(rows)],
        columns=["doc_id", "entity_key", "label", "kind", "aliases", "mentions", "first_line", "core_kind"],
    ).astype(object)


def test_a_keys_digest_changes_with_its_row_its_vector_and_its_inputs_and_only_then() -> None:
    base = [("d1", "Minji Park", "Person", 2, 3), ("d2", "Postgres", "Tool", 1, 1),
            ("d2", "minji park", "Person", 1, 5)]  # fmt: skip

    def digests(rows, inputs=("i1", "i2"), vectors=("", "")) -> dict[str, str]:
        table = build_key_table(mention_rows(rows), None, None, 200)
        return dict(zip(table.keys, key_digests(table, list(vectors), list(inputs)), strict=True))

    first = digests(base)
    assert set(first) == {"minji park", "postgres"}
    assert digests(base) == first
    # Other mention rows or documents (``resolve.stored_keys.key_inputs``, tested there): only that key changes.
    changed = digests(base, inputs=("i9", "i2"))
    assert changed["minji park"] != first["minji park"] and changed["postgres"] == first["postgres"]
    # Another kind, another label shown, a new vector: each changes the key's digest.
    assert digests([*base[:1], ("d2", "Postgres", "Organization", 1, 1), base[2]])["postgres"] != first["postgres"]
    assert digests([*base, ("d1", "POSTGRES", "Tool", 1, 1)])["postgres"] != first["postgres"]  # shown as POSTGRES
    assert digests(base, vectors=("", "v1"))["postgres"] != first["postgres"]


def test_digests_taken_from_the_last_call_equal_digests_computed_afresh() -> None:
    from engramrag.resolve.keytable import KeyAssembly, KeyRow

    def row(key: str, label: str, written=()) -> KeyRow:
        return KeyRow(key, label, "Tool", "Tool", frozenset(), frozenset(written), frozenset({"d1"}))

    others = [row(f"other {n}", f"Other {n}") for n in range(6)]  # untouched keys: the table is patched
    rows = [row("alpha", "Alpha"), row("beta", "Beta", ["b"]), row("gamma", "Gamma"), *others]
    file_names: dict = {}
    first = KeyAssembly.of(rows, file_names, None, 200)
    vectors, inputs = [""] * len(rows), [f"i{n}" for n in range(len(rows))]
    before = key_digests(first.table, vectors, inputs)
    edited = KeyAssembly.of([rows[0], row("beta", "BETA", ["b"]), *rows[2:]], file_names, None, 200, first).table
    assert edited.keys is first.table.keys  # the patched table: only beta's fields are other objects
    new_vectors = ["", "", "v3", *vectors[3:]]  # and gamma's vector is new
    after = key_digests(edited, new_vectors, inputs)
    assert after[0] == before[0] and after[1] != before[1] and after[2] != before[2] and after[3:] == before[3:]
    key_digests(build_key_table(mention_rows([("d9", "Other", "Tool", 1, 1)]), None, None, 200), [""], ["x"])
    # Computed afresh (the last call was of other keys): the same digests.
    assert key_digests(edited, new_vectors, inputs) == after
