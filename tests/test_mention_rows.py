"""The mention lists evidence reads: ordered like the lists they stand for, made into tuples only as they are read."""

import numpy as np
import pandas as pd

from engramrag.resolve import mention_rows
from engramrag.resolve.keytable import mention_lists
from engramrag.resolve.mention_rows import MentionList, SortedMentions


def frame(rows):
    return pd.DataFrame(rows, columns=["doc_id", "entity_key", "label", "kind", "aliases", "mentions", "first_line"])


def test_lists_order_most_mentioned_first_then_by_document_then_as_given():
    rows = frame([
        ("d2", "e1", "LanceDB", "Tool", None, 1, 4),
        ("d1", "e1", "lancedb", "Tool", None, 1, None),
        ("d3", "e1", "LanceDB", "Tool", None, 5, 2),
        ("d1", "e2", "LanceDB", "Tool", None, 1, 9),
        ("d1", "e3", "Minji Park", "Person", None, 2, 1),
        ("d1", "e4", "!!", "Concept", None, 3, 1),  # no stable key: no list
    ])  # fmt: skip
    lists = mention_lists(rows)
    in_document_order = mention_lists(rows.sort_values("doc_id", kind="stable"))  # the path that ranks no documents
    assert in_document_order == lists
    assert set(lists) == {"lancedb", "minji park"}
    assert lists["lancedb"] == [
        ("d3", "LanceDB", 2, 5),
        ("d1", "lancedb", None, 1),
        ("d1", "LanceDB", 9, 1),
        ("d2", "LanceDB", 4, 1),
    ]
    assert list(lists["minji park"]) == [("d1", "Minji Park", 1, 2)]
    assert len(lists["lancedb"]) == 4 and lists["lancedb"][0] == ("d3", "LanceDB", 2, 5)
    assert lists["lancedb"][-1] == ("d2", "LanceDB", 4, 1) and lists["lancedb"][1:3] == lists["lancedb"][1:3]
    assert lists["lancedb"] != lists["minji park"] and lists["lancedb"] != "lancedb"


def test_reading_the_first_rows_makes_only_those(monkeypatch):
    count = 5000
    docs = np.array([f"d{i:05}" for i in range(count)], dtype=object)
    labels, lines = np.array(["Popular"] * count, dtype=object), np.array([1] * count, dtype=object)
    rows = SortedMentions(["popular"], np.zeros(count, dtype=np.int64), docs, labels, lines, np.arange(count))
    made = []
    original = SortedMentions.row
    monkeypatch.setattr(SortedMentions, "row", lambda self, position: made.append(position) or original(self, position))
    popular = rows.lists()["popular"]
    assert isinstance(popular, MentionList) and len(popular) == count and made == []
    first = [row for _, row in zip(range(3), popular, strict=False)]
    assert first == [(f"d{i:05}", "Popular", 1, i) for i in (4999, 4998, 4997)]  # most mentioned first
    assert len(made) <= 4


def test_unknown_first_lines_read_as_none():
    assert mention_rows._int_or_none(float("nan")) is None
    assert mention_rows._int_or_none("x") is None
    assert mention_rows._int_or_none(np.int64(7)) == 7
