"""The statements behind the graph's entity–entity edges, held in memory and looked up by entity.

A search asks three things of them: the statements touching its top entities (the context's facts), those
of each result document that touch a seed (its provenance), and one statement per bridge edge. At 10,000
notes the table has about a million rows; a DuckDB scan for each question cost 20-90 ms, a lookup here
well under one. The rows are stored in preference order (asserted statements first, then by statement
id, then by document: one sentence in two notes has one id), so "the first row" of any selection is the one
to show, the same from build to build.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engramrag.retrieve.edge_statements import per_value, read_for_search


@dataclass
class StatementTable:
    src: np.ndarray  # (rows,) entity node of the subject
    dst: np.ndarray  # (rows,) entity node of the object
    doc_node: np.ndarray  # (rows,) passage node of the document that says it
    asserted: np.ndarray  # (rows,) bool: the author's assertion, not the machine's analysis
    label_code: np.ndarray  # (rows,) relation label as a small integer (for grouping)
    details: pa.Table  # statement_id, label, line_start, line_end, in row order
    row_start: np.ndarray  # (entities + 1,) CSR offsets into ``rows_by_entity``
    rows_by_entity: np.ndarray  # rows touching each entity, ascending (= preference order)
    document_start: dict[int, tuple[int, int]]  # passage node -> its slice of ``rows_by_document``
    rows_by_document: np.ndarray  # each document's rows, ascending

    @classmethod
    def load(cls, folder: Path, entity_count: int) -> StatementTable:
        """The rows kept beside the index in ``folder`` (``edge_statements``), in their stored order."""
        table = read_for_search(folder)
        src = table.column("src").to_numpy().astype(np.int64)
        dst = table.column("dst").to_numpy().astype(np.int64)
        labels = pc.cast(table.column("label"), pa.string()).combine_chunks().dictionary_encode()
        rows = np.arange(len(src), dtype=np.int64)
        loops = src == dst
        owners = np.concatenate([src, dst[~loops]])
        owned = np.concatenate([rows, rows[~loops]])
        order = np.lexsort((owned, owners))
        counts = np.bincount(owners, minlength=entity_count) if len(owners) else np.zeros(entity_count, np.int64)
        doc_node = table.column("doc_node").to_numpy().astype(np.int64)
        by_document = np.lexsort((rows, doc_node))
        documents, first, sizes = np.unique(doc_node[by_document], return_index=True, return_counts=True)
        return cls(
            src=src,
            dst=dst,
            doc_node=doc_node,
            asserted=per_value(table.column("role"), "assertion".__eq__, bool),
            label_code=np.asarray(labels.indices.to_numpy(zero_copy_only=False), dtype=np.int64),
            # One chunk: ``take`` over a table of many small chunks cost milliseconds per call.
            details=pa.table(
                {
                    "statement_id": table.column("statement_id"),
                    "label": labels.dictionary_decode(),
                    "line_start": table.column("line_start"),
                    "line_end": table.column("line_end"),
                }
            ).combine_chunks(),
            row_start=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            rows_by_entity=owned[order],
            document_start={
                int(node): (int(start), int(start + size))
                for node, start, size in zip(documents, first, sizes, strict=True)
            },
            rows_by_document=by_document,
        )

    def __len__(self) -> int:
        return len(self.src)

    def touching(self, entities: Iterable[int]) -> np.ndarray:
        """Rows whose subject or object is one of ``entities``, in preference order, each once."""
        slices = [
            self.rows_by_entity[self.row_start[node] : self.row_start[node + 1]]
            for node in entities
            if 0 <= node < len(self.row_start) - 1
        ]
        if not slices:
            return np.zeros(0, dtype=np.int64)
        if len(slices) == 1:
            return slices[0]
        # A hub's slice can hold a hundred thousand rows; marking them is cheaper than sorting them.
        marked = np.zeros(len(self.src), dtype=bool)
        for rows in slices:
            marked[rows] = True
        return np.flatnonzero(marked)

    def of_documents(self, doc_nodes: Iterable[int]) -> np.ndarray:
        """The rows said by the given documents (passage nodes), ascending."""
        spans = [self.document_start[node] for node in doc_nodes if node in self.document_start]
        if not spans:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.concatenate([self.rows_by_document[start:end] for start, end in spans]))

    def best_facts(self, rows: np.ndarray, score: np.ndarray, limit: int) -> np.ndarray:
        """Of ``rows`` (scored), at most ``limit`` distinct facts (subject, object, relation), best first:
        asserted before machine analysis, then by score, then in preference order."""
        if not len(rows):
            return rows
        # Rank by a single key (assertion first, then score; scores are PageRank sums, below 4), looking
        # only at the best few thousand rows: duplicates of a fact share its score and so sit together.
        key = np.where(self.asserted[rows], 0.0, 4.0) - score
        pool = min(len(rows), limit * 20)
        if pool < len(rows):
            chosen = np.argpartition(key, pool - 1)[:pool]
            rows, key = rows[chosen], key[chosen]
        order = np.lexsort((rows, key))
        rows = rows[order]
        facts = np.column_stack([self.src[rows], self.dst[rows], self.label_code[rows]])
        _, first = np.unique(facts, axis=0, return_index=True)
        return rows[np.sort(first)[:limit]]

    def between(self, low: int, high: int) -> int | None:
        """The first row joining the two entities (either direction), or None."""
        rows = self.rows_by_entity[self.row_start[low] : self.row_start[low + 1]]
        joined = rows[(self.src[rows] == high) | (self.dst[rows] == high)]
        return int(joined[0]) if len(joined) else None

    def rows(self, rows: np.ndarray | list[int]) -> list[dict[str, Any]]:
        """The rows' details as dictionaries (with src, dst and doc_node)."""
        picked = np.asarray(rows, dtype=np.int64)
        listed = self.details.take(pa.array(picked)).to_pylist()
        for row, index in zip(listed, picked.tolist(), strict=True):
            row.update(src=int(self.src[index]), dst=int(self.dst[index]), doc_node=int(self.doc_node[index]))
        return listed
