"""A key's mention rows as evidence reads them: (doc_id, label, first_line, mentions), most mentioned first.

One job: order the mention rows of many keys at once (array sorts) and hand each key its rows as a read-only
sequence whose tuples are made when read. Quoting evidence stops after the first few documents that hold a key's
label, so a key named in thousands of notes has thousands of rows of which a handful are read: making every row a
tuple up front was 3.3 s of a one-note edit at 100,000 notes. The sequence equals the list it stands for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
import pandas as pd

MentionRow = tuple[str, str, int | None, int]  # doc_id, label as written, first line (None when unknown), mentions


class SortedMentions:
    """Mention rows of many keys, sorted by key (a row of ``keys``), most mentioned first, then by document, then in
    the order given; ``lists()`` cuts them per key."""

    def __init__(self, keys: list[str], key_index: np.ndarray, doc_ids: np.ndarray, labels: np.ndarray,
                 first_lines: np.ndarray, counts: np.ndarray) -> None:  # fmt: skip
        given = np.arange(len(key_index))
        # Rows read in document order (as the catalog's readers give them) need no ranking of the documents: ranking
        # hashes every doc id (0.4 s for 600,000 rows).
        in_document_order = len(doc_ids) < 2 or bool((doc_ids[:-1] <= doc_ids[1:]).all())
        doc_ranks = given if in_document_order else pd.factorize(doc_ids, sort=True)[0]
        order = np.lexsort((given, doc_ranks, -counts, key_index))
        self.keys = keys
        self.bounds = np.searchsorted(key_index[order], np.arange(len(keys) + 1)).tolist()
        self.doc_ids, self.labels = doc_ids[order], labels[order]
        self.first_lines, self.counts = first_lines[order], counts[order]

    def row(self, position: int) -> MentionRow:
        return (str(self.doc_ids[position]), str(self.labels[position]), _int_or_none(self.first_lines[position]),
                int(self.counts[position]))  # fmt: skip

    def lists(self) -> dict[str, MentionList]:
        return {key: MentionList(self, self.bounds[i], self.bounds[i + 1]) for i, key in enumerate(self.keys)}


class MentionList(Sequence[MentionRow]):
    """One key's rows of a ``SortedMentions``, made into tuples as they are read."""

    __slots__ = ("_rows", "_start", "_stop")

    def __init__(self, rows: SortedMentions, start: int, stop: int) -> None:
        self._rows, self._start, self._stop = rows, start, stop

    def __len__(self) -> int:
        return self._stop - self._start

    def __iter__(self) -> Iterator[MentionRow]:
        return (self._rows.row(position) for position in range(self._start, self._stop))

    @overload
    def __getitem__(self, index: int) -> MentionRow: ...
    @overload
    def __getitem__(self, index: slice) -> list[MentionRow]: ...
    def __getitem__(self, index: int | slice) -> MentionRow | list[MentionRow]:
        positions = range(self._start, self._stop)[index]
        if isinstance(positions, range):
            return [self._rows.row(position) for position in positions]
        return self._rows.row(positions)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so unhashable like one

    def __repr__(self) -> str:
        return f"MentionList({list(self)!r})"


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or pd.isna(value) else int(value)
    except (TypeError, ValueError):
        return None
