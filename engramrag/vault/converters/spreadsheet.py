"""CSV and XLSX files: each sheet becomes a Markdown table under a heading with the sheet's name.

A table's first non-empty row is its header. Rows past ``MAX_ROWS`` and columns past ``MAX_COLUMNS`` are
left out and the table says how many, so a large export stays within the vault's size limit and a reader
knows the converted note is not the whole file. Workbooks are read with cached formula values (what Excel
showed), never by evaluating formulas.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable, Iterator

from engramrag.vault.converters.base import Body, ConversionError, check_office_package, clean_metadata
from engramrag.vault.converters.text import decode_text

MAX_ROWS = 500
MAX_COLUMNS = 30
_DELIMITERS = ",;\t|"


def convert_csv(raw: bytes, name: str) -> Body:
    """A CSV file (any common delimiter and encoding) as one Markdown table."""
    text, encoding = decode_text(raw)
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:8192], delimiters=_DELIMITERS)
    except csv.Error:
        dialect = csv.excel
    try:
        table = markdown_table(csv.reader(io.StringIO(text, newline=""), dialect))
    except csv.Error as error:
        raise ConversionError(f"it is not well-formed CSV ({error})", "re-export it as CSV") from None
    return Body(table, extra={"source_encoding": encoding})


def convert_xlsx(raw: bytes, name: str) -> Body:
    """An XLSX workbook: one section per worksheet, titled by the workbook's title property when set."""
    from openpyxl import load_workbook

    check_office_package(raw, "XLSX", "re-save it from Excel as .xlsx")
    workbook = load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    try:
        sections = [
            f"## {' '.join(sheet.title.split()) or 'Sheet'}\n\n{markdown_table(sheet.iter_rows(values_only=True))}"
            for sheet in workbook.worksheets
        ]
        title = clean_metadata(workbook.properties.title)
        author = clean_metadata(workbook.properties.creator)
    finally:
        workbook.close()
    return Body("\n\n".join(sections), title=title, author=author, extra={"source_sheets": len(sections)})


def markdown_table(rows: Iterable[Iterable[object]]) -> str:
    """A Markdown table of ``rows`` (the first non-empty one is the header), capped and saying what was cut."""
    kept: list[list[str]] = []
    left_out = 0
    widest = 0
    for cells in _non_empty(rows):
        widest = max(widest, len(cells))
        if len(kept) <= MAX_ROWS:  # the header plus MAX_ROWS data rows
            kept.append(cells)
        else:
            left_out += 1
    if not kept:
        return "(empty)"
    width = min(max(widest, 1), MAX_COLUMNS)
    lines = [_row(kept[0], width), "| " + " | ".join("---" for _ in range(width)) + " |"]
    lines += [_row(cells, width) for cells in kept[1:]]
    notes = []
    if left_out:
        notes.append(f"{left_out:,} more row(s) not shown: only the first {MAX_ROWS:,} are converted")
    if widest > MAX_COLUMNS:
        notes.append(f"{widest - MAX_COLUMNS:,} more column(s) not shown: only the first {MAX_COLUMNS} are converted")
    if notes:
        lines += ["", "; ".join(notes) + "; the original file has all of them."]
    return "\n".join(lines)


def _non_empty(rows: Iterable[Iterable[object]]) -> Iterator[list[str]]:
    for row in rows:
        cells = [_cell(value) for value in row]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            yield cells


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        text = value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    elif isinstance(value, dt.date | dt.time):
        text = value.isoformat()
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    else:
        text = str(value)
    return " ".join(text.split()).replace("|", "\\|")


def _row(cells: list[str], width: int) -> str:
    padded = (cells + [""] * width)[:width]
    return "| " + " | ".join(padded) + " |"
