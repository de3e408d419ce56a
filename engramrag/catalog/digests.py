"""The catalog's digests of notes, as SQL fragments: what a step that keeps work between builds compares to know
which notes changed. One rule lives here: a note's statements and mention rows are written only by its extraction,
and an extraction records its text hash, its extractor and when it ran (a re-extraction of the same text, as a
``--full`` build makes, records a new time), so those three columns name the extraction that wrote a note's rows.
"""

from __future__ import annotations


def extraction(table: str = "") -> str:
    """The columns that name a note's extraction, of ``table`` (an alias) when given."""
    prefix = f"{table}." if table else ""
    return f"{prefix}extracted_hash, {prefix}extractor, {prefix}extracted_at::VARCHAR"


def live_documents_digest(*columns: str) -> str:
    """A query of one row: how many notes are live and an order-free digest of each one's id and ``columns``."""
    return f"SELECT count(*), bit_xor(hash(doc_id, {', '.join(columns)})) FROM documents WHERE NOT gone"


# Which notes are live and which extraction wrote each one's rows: what their mention rows are a function of.
LIVE_EXTRACTIONS = live_documents_digest(extraction())


def note_digest(*columns: str, table: str = "") -> str:
    """Per note, a digest of its extraction and ``columns`` (a string; NULL when ``table`` is an outer join's side
    that holds no note). ``table`` prefixes the extraction columns and ``doc_id`` only: ``columns`` are taken as
    written, so in a join give them their alias (``note_digest("d.body_hash", table="d")``)."""
    prefix = f"{table}." if table else ""
    return (f"CASE WHEN {prefix}doc_id IS NOT NULL "
            f"THEN hash({', '.join((*columns, extraction(table)))})::VARCHAR END")  # fmt: skip
