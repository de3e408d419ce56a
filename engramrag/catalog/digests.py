"""The catalog's digests of notes, as SQL fragments: what a step that keeps work between builds compares to know
which notes changed. One rule lives here: a note's statements and mention rows are written only by its extraction,
and an extraction records its text hash, its extractor and when it ran (a re-extraction of the same text, as a
``--full`` build makes, records a new time), so those three columns name the extraction that wrote a note's rows.
"""

from __future__ import annotations

EXTRACTION_COLUMNS = ("extracted_hash", "extractor", "extracted_at")


def extraction_columns(table: str = "") -> tuple[str, ...]:
    """The columns that name a note's extraction, of ``table`` (an alias) when given, one expression each."""
    prefix = f"{table}." if table else ""
    return tuple(f"{prefix}{column}" for column in EXTRACTION_COLUMNS)


def extraction(table: str = "") -> str:
    """The columns that name a note's extraction, of ``table`` (an alias) when given, as one list."""
    hashed, extractor, extracted_at = extraction_columns(table)
    return f"{hashed}, {extractor}, {extracted_at}::VARCHAR"


def row_hash(*columns: str) -> str:
    """One hash of a row's ``columns`` (expressions) taken together, for an order-free digest of many rows
    (``bit_xor``). Not DuckDB's ``hash(a, b)``: it combines each value's hash so that a XOR over rows keeps each
    column's values but not which go together (a key moved between two clusters of two, or two notes trading titles,
    left such a digest as it was); the values joined as text are hashed as one."""
    values = ", ".join(f"coalesce(({column})::VARCHAR, chr(30))" for column in columns)
    return f"hash(concat_ws(chr(31), {values}))"


def rows_digest(rows: str, *columns: str) -> str:
    """A query of one row: how many ``rows`` (a table, with its ``WHERE`` if any) there are and an order-free digest
    of their ``columns``."""
    return f"SELECT count(*), bit_xor({row_hash(*columns)}) FROM {rows}"


def live_documents_digest(*columns: str) -> str:
    """A query of one row: how many notes are live and an order-free digest of each one's id and ``columns``."""
    return rows_digest("documents WHERE NOT gone", "doc_id", *columns)


# Which notes are live and which extraction wrote each one's rows: what their mention rows are a function of.
LIVE_EXTRACTIONS = live_documents_digest(*extraction_columns())


def note_digest(*columns: str, table: str = "") -> str:
    """Per note, a digest of its extraction and ``columns`` (a string; NULL when ``table`` is an outer join's side
    that holds no note). ``table`` prefixes the extraction columns and ``doc_id`` only: ``columns`` are taken as
    written, so in a join give them their alias (``note_digest("d.body_hash", table="d")``)."""
    prefix = f"{table}." if table else ""
    return (f"CASE WHEN {prefix}doc_id IS NOT NULL "
            f"THEN hash({', '.join((*columns, extraction(table)))})::VARCHAR END")  # fmt: skip
