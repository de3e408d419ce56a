"""Converters for the sources folder: real HTML, PDF, DOCX, CSV, XLSX and text files made here, converted, and
built through the real lifecycle."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import os
import zipfile
from pathlib import Path

import dagster as dg
import pytest
import yaml
from openpyxl import Workbook
from pypdf import PdfReader, PdfWriter

from engramrag.lifecycle.plan import plan_changes
from engramrag.lifecycle.scan import scan_vault
from engramrag.lifecycle.sync import sync_documents
from engramrag.ontology.quadstore import QuadStore
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.converters import base, convert, convert_document, is_convertible, spreadsheet
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.markdown import FRONT_MATTER
from tests.conftest import Lifecycle

docx = pytest.importorskip("docx", reason="python-docx (dev extra) builds the DOCX fixtures")

KOREAN = "회의록: 엔그램 프로젝트\n박민지는 서울 사무소에서 새 검색 엔진을 검토했다.\n결정: 다음 분기에 공개한다.\n"


# ---------------------------------------------------------------- fixtures: real files of each format


def pdf_bytes(pages: list[list[str]], title: str | None = None, author: str | None = None) -> bytes:
    """A valid PDF with a Helvetica text layer, one content stream per page, written by hand."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for lines in pages:
        page_number = len(objects) + 1
        kids.append(f"{page_number} 0 R".encode())
        operations = ["BT", "/F1 12 Tf", "72 720 Td", "14 TL"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            operations.append(f"({escaped}) Tj T*")
        stream = "\n".join([*operations, "ET"]).encode("latin-1")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (page_number + 1, page_number + 2)
        )
        objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    info = b""
    if title or author:
        fields = [f"/Title ({title})" if title else "", f"/Author ({author})" if author else ""]
        objects.append(f"<< {' '.join(fields)} >>".encode("latin-1"))
        info = b" /Info %d 0 R" % len(objects)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, info, xref))
    return out.getvalue()


def encrypted(raw: bytes, user_password: str, owner_password: str = "owner") -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(raw)))
    writer.encrypt(user_password, owner_password, algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def blank_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(612, 792)
    writer.add_blank_page(612, 792)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


REPORT_PDF = pdf_bytes(
    [
        ["Quarterly report of the Atlas project.", "Minji Park decided to adopt DuckDB for the catalog."],
        ["Budget (2024): 12,000 EUR approved by Jonas Weber."],
    ],
    title="Atlas Quarterly Report",
    author="Minji Park",
)

PAGE_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Atlas Launch Notes</title>
<meta name="author" content="Jonas Weber">
<style>body { color: red; }</style><script>var tracking = "SECRET_TRACKER";</script></head>
<body>
<nav><a href="/home">Home</a> | <a href="/about">NAVIGATION_ONLY</a></nav>
<h1>Atlas launch</h1>
<p>The <strong>Atlas</strong> project ships on <em>2024-05-01</em>;
see <a href="https://example.org/atlas">the plan</a>.</p>
<h2>Decisions</h2>
<ul><li>Use snake_case names like rank_fusion</li><li>Keep DuckDB</li></ul>
<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwAB"
     alt="launch diagram">
<table><tr><th>Owner</th><th>Task</th></tr><tr><td>Minji Park</td><td>Index</td></tr></table>
<noscript>NOSCRIPT_TEXT</noscript>
</body></html>
"""


def docx_bytes() -> bytes:
    document = docx.Document()
    document.core_properties.title = "Atlas Design Review"
    document.core_properties.author = "Minji Park"
    document.add_heading("Storage choice", level=1)
    document.add_paragraph("Jonas Weber proposed LanceDB for the vectors.")
    document.add_paragraph("Keep the catalog in DuckDB", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    cells = table.rows[0].cells + table.rows[1].cells
    for cell, text in zip(cells, ["Store", "Owner", "LanceDB", "Jonas"], strict=True):
        cell.text = text
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_bytes() -> bytes:
    workbook = Workbook()
    budget = workbook.active
    budget.title = "Budget"
    budget.append(["Item", "Amount", "Decided"])
    budget.append(["Servers", 1200, dt.datetime(2024, 3, 5)])
    budget.append(["Licences | seats", 300.0, None])
    people = workbook.create_sheet("People")
    people.append(["Name", "Role"])
    people.append(["Minji Park", "lead"])
    workbook.create_sheet("Empty")
    workbook.properties.title = "Atlas Budget 2024"
    workbook.properties.creator = "Jonas Weber"
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def split(markdown: str) -> tuple[dict, list[str]]:
    """Front matter (parsed) and the body lines of a converted note."""
    match = FRONT_MATTER.match(markdown)
    assert match is not None, markdown[:200]
    return yaml.safe_load(match.group(1)), markdown[match.end() :].split("\n")


# ---------------------------------------------------------------- one format at a time


def test_html_keeps_the_content_and_drops_scripts_styles_and_navigation() -> None:
    converted = convert(PAGE_HTML, "sources/web/launch notes.html")
    front, body = split(converted.markdown)
    assert front["title"] == "Atlas Launch Notes"
    assert front["author"] == "Jonas Weber"
    assert front["source_file"] == "sources/web/launch notes.html"
    assert front["source_format"] == "HTML"
    assert front["source_sha256"] == hashlib.sha256(PAGE_HTML).hexdigest()
    assert front["converted_by"] == converted.converter
    assert "beautifulsoup4" in converted.converter and "markdownify" in converted.converter
    assert body[0] == "[original: launch notes.html](launch%20notes.html)"
    text = "\n".join(body)
    assert "# Atlas launch" in body
    assert "## Decisions" in body
    assert "The **Atlas** project ships on *2024-05-01*; see [the plan](https://example.org/atlas)." in body
    assert "- Use snake_case names like rank_fusion" in body
    assert "[image: launch diagram]" in text and "base64" not in text
    assert "| Minji Park | Index |" in body
    for dropped in ("SECRET_TRACKER", "color: red", "NAVIGATION_ONLY", "NOSCRIPT_TEXT"):
        assert dropped not in text


def test_pdf_text_layer_page_by_page_with_metadata_title() -> None:
    converted = convert(REPORT_PDF, "sources/report.pdf")
    front, body = split(converted.markdown)
    assert front["title"] == "Atlas Quarterly Report"
    assert front["author"] == "Minji Park"
    assert front["source_format"] == "PDF"
    assert front["source_pages"] == 2
    assert converted.converter.startswith("engramrag PDF converter (pypdf ")
    assert body[0] == "[original: report.pdf](report.pdf)"
    first, second = body.index("<!-- page 1 -->"), body.index("<!-- page 2 -->")
    assert first < body.index("Minji Park decided to adopt DuckDB for the catalog.") < second
    assert body.index("Budget (2024): 12,000 EUR approved by Jonas Weber.") > second


def test_pdf_without_metadata_is_titled_by_its_file_name() -> None:
    front, _ = split(convert(pdf_bytes([["Only text."]]), "sources/minutes-2024.pdf").markdown)
    assert front["title"] == "minutes-2024"
    assert "author" not in front


def test_pdf_failures_are_rejections_that_say_what_to_do() -> None:
    cases = {
        "sources/locked.pdf": (encrypted(REPORT_PDF, "secret"), "encrypted with a password", "unencrypted copy"),
        "sources/scan.pdf": (blank_pdf(), "no text layer", "run OCR first"),
        "sources/cut.pdf": (REPORT_PDF[: len(REPORT_PDF) // 3], "damaged or truncated", "download or export it"),
        "sources/fake.pdf": (b"this is not a pdf at all", "not a PDF", "re-export it as PDF"),
    }
    for path, (raw, problem, advice) in cases.items():
        with pytest.raises(DocumentRejected) as rejected:
            convert(raw, path)
        assert rejected.value.reason == "conversion_failed"
        message = rejected.value.message
        assert message.startswith(f"{path}: could not be converted from PDF to Markdown")
        assert problem in message and advice in message, message


def test_pdf_restricted_only_by_an_owner_password_is_read() -> None:
    _, body = split(convert(encrypted(REPORT_PDF, ""), "sources/restricted.pdf").markdown)
    assert "Quarterly report of the Atlas project." in body


def test_docx_headings_lists_tables_and_core_properties() -> None:
    converted = convert(docx_bytes(), "sources/review.docx")
    front, body = split(converted.markdown)
    assert front["title"] == "Atlas Design Review"
    assert front["author"] == "Minji Park"
    assert front["source_format"] == "DOCX"
    assert "mammoth" in converted.converter
    assert body[0] == "[original: review.docx](review.docx)"
    assert "# Storage choice" in body
    assert "Jonas Weber proposed LanceDB for the vectors." in body
    assert "- Keep the catalog in DuckDB" in body
    assert "| LanceDB | Jonas |" in body


def test_corrupt_docx_is_rejected() -> None:
    not_word = io.BytesIO()
    with zipfile.ZipFile(not_word, "w") as package:
        package.writestr("content.xml", "<office/>")
    cases = ((b"PK\x03\x04 broken", "not a valid DOCX package"), (not_word.getvalue(), "word/document.xml"))
    for raw, problem in cases:
        with pytest.raises(DocumentRejected) as rejected:
            convert(raw, "sources/broken.docx")
        assert rejected.value.reason == "conversion_failed"
        assert "sources/broken.docx: could not be converted from DOCX" in rejected.value.message
        assert problem in rejected.value.message


def test_xlsx_one_section_per_sheet() -> None:
    converted = convert(xlsx_bytes(), "sources/budget.xlsx")
    front, body = split(converted.markdown)
    assert front["title"] == "Atlas Budget 2024"
    assert front["author"] == "Jonas Weber"
    assert front["source_format"] == "XLSX"
    assert front["source_sheets"] == 3
    assert "openpyxl" in converted.converter
    text = "\n".join(body)
    assert "## Budget\n\n| Item | Amount | Decided |\n| --- | --- | --- |\n| Servers | 1200 | 2024-03-05 |" in text
    assert "| Licences \\| seats | 300 |  |" in body
    assert "## People\n\n| Name | Role |\n| --- | --- |\n| Minji Park | lead |" in text
    assert "## Empty\n\n(empty)" in text


def test_corrupt_xlsx_is_rejected() -> None:
    raw = xlsx_bytes()
    not_excel = io.BytesIO()
    with zipfile.ZipFile(not_excel, "w") as package:
        package.writestr("hello.txt", "not a workbook")
    cases = ((raw[: len(raw) // 2], "not a valid XLSX package"), (not_excel.getvalue(), "Error: "))
    for broken, problem in cases:
        with pytest.raises(DocumentRejected) as rejected:
            convert(broken, "sources/budget.xlsx")
        assert rejected.value.reason == "conversion_failed"
        message = rejected.value.message
        assert message.startswith("sources/budget.xlsx: could not be converted from XLSX to Markdown: ")
        assert problem in message and "re-save it from Excel" in message


def test_office_files_that_unpack_too_far_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "MAX_UNPACKED_BYTES", 2_000)
    for raw, path in ((docx_bytes(), "sources/review.docx"), (xlsx_bytes(), "sources/budget.xlsx")):
        with pytest.raises(DocumentRejected) as rejected:
            convert(raw, path)
        assert rejected.value.reason == "conversion_failed"
        assert "over the converter's 2,000-byte limit" in rejected.value.message


def test_csv_sniffs_the_delimiter_detects_the_encoding_and_caps_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spreadsheet, "MAX_ROWS", 3)
    rows = ["이름;역할;도시", "박민지;리드;서울", "Jonas Weber;engineer;Berlin", "a;b;c", "d;e;f", "g;h;i"]
    raw = "\r\n".join(rows).encode("cp949")
    front, body = split(convert(raw, "sources/team.csv").markdown)
    assert front["title"] == "team"
    assert front["source_format"] == "CSV"
    assert front["source_encoding"] == "cp949"
    assert body[2:7] == [
        "| 이름 | 역할 | 도시 |",
        "| --- | --- | --- |",
        "| 박민지 | 리드 | 서울 |",
        "| Jonas Weber | engineer | Berlin |",
        "| a | b | c |",
    ]
    assert "2 more row(s) not shown: only the first 3 are converted; the original file has all of them." in body
    assert "| d | e | f |" not in body


@pytest.mark.parametrize("encoding", ["utf-16", "cp949", "utf-8"])
def test_text_files_in_other_encodings(encoding: str) -> None:
    front, body = split(convert(KOREAN.encode(encoding), "sources/minutes.txt").markdown)
    assert front["source_format"] == "text"
    assert front["source_encoding"] == encoding
    assert body[0] == "[original: minutes.txt](minutes.txt)"
    assert "\n".join(body[2:]).strip("\n") == KOREAN.strip("\n")


def test_undecodable_text_is_rejected() -> None:
    with pytest.raises(DocumentRejected) as rejected:
        convert(bytes(range(256)) * 8, "sources/blob.txt")
    assert rejected.value.reason == "conversion_failed"
    assert "encoding could not be detected" in rejected.value.message
    assert "re-save it as UTF-8" in rejected.value.message


def test_size_limit_applies_to_originals_with_a_clear_message() -> None:
    config = VaultConfig(max_file_bytes=len(REPORT_PDF) - 1)
    with pytest.raises(DocumentRejected) as rejected:
        convert_document(REPORT_PDF, "sources/report.pdf", config)
    assert rejected.value.reason == "too_large"
    assert f"this PDF file is {len(REPORT_PDF):,} bytes" in rejected.value.message
    document = convert_document(REPORT_PDF, "sources/report.pdf", VaultConfig(max_file_bytes=len(REPORT_PDF)))
    assert document.size_bytes == len(REPORT_PDF)
    assert document.title == "Atlas Quarterly Report"
    assert document.text.startswith("---\ntitle: Atlas Quarterly Report\n")


def test_only_the_sources_folder_is_converted(tmp_path: Path) -> None:
    config = VaultConfig()
    files = {
        "notes/a.md": b"# A\n",
        "sources/report.pdf": REPORT_PDF,
        "sources/deep/page.HTML": PAGE_HTML,
        "sources/readme.md": b"# Read me\n",
        "sources/image.png": b"\x89PNG",
        "sources/.hidden.pdf": REPORT_PDF,
        "elsewhere/report.pdf": REPORT_PDF,
        "notes/sources/x.txt": b"nested sources folder is not the sources folder",
        "report.txt": b"top level text",
    }
    for path, raw in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(raw)
    found = [file.path for file in scan_vault(tmp_path, config)]
    assert found == ["notes/a.md", "sources/deep/page.HTML", "sources/readme.md", "sources/report.pdf"]
    assert not is_convertible("sources/readme.md", config)
    assert not is_convertible("sources/report.pdf", VaultConfig(sources_folder="inbox"))
    assert not is_convertible("sources/report.pdf", VaultConfig(convertible_suffixes=(".html",)))


# ---------------------------------------------------------------- through the lifecycle


def make_vault(root: Path) -> dict[str, bytes]:
    files = {
        "notes/atlas.md": b"# Atlas\n\nThe Atlas project is led by [[Minji Park]].\n",
        "sources/report.pdf": REPORT_PDF,
        "sources/launch.html": PAGE_HTML,
        "sources/review.docx": docx_bytes(),
        "sources/budget.xlsx": xlsx_bytes(),
        "sources/team.csv": "name,city\n박민지,서울\nJonas Weber,Berlin\n".encode("cp949"),
        "sources/minutes.txt": KOREAN.encode("utf-16"),
        "sources/broken.pdf": REPORT_PDF[: len(REPORT_PDF) // 3],
        "sources/locked.pdf": encrypted(REPORT_PDF, "secret"),
        "archive/old.pdf": REPORT_PDF,
    }
    for path, raw in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(raw)
    return files


def snapshot(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


CONVERTED = {"sources/report.pdf", "sources/launch.html", "sources/review.docx", "sources/budget.xlsx",
             "sources/team.csv", "sources/minutes.txt"}


def test_lifecycle_builds_converted_sources_with_provenance(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    files = make_vault(vault)
    before = snapshot(vault)
    home = Home.at(tmp_path / "home")
    with dg.DagsterInstance.ephemeral() as instance:
        lifecycle = Lifecycle(vault, home, instance)
        first = lifecycle.run_all()
        assert first.success

        assert snapshot(vault) == before  # originals untouched, nothing written next to them
        rows = lifecycle.sql("SELECT path, size_bytes, text FROM documents")
        documents = {path: (size, text) for path, size, text in rows}
        assert set(documents) == {"notes/atlas.md", *CONVERTED}
        for path in CONVERTED:
            size, text = documents[path]
            assert size == len(files[path])
            front, body = split(text)
            assert front["source_file"] == path
            assert front["source_sha256"] == hashlib.sha256(files[path]).hexdigest()
            name = path.rsplit("/", 1)[1]
            assert body[0] == f"[original: {name}]({name})"
        assert lifecycle.extracted_in(first.run_id) == {"notes/atlas.md", *CONVERTED}

        rejected = {path: (reason, message) for path, reason, message in
                    lifecycle.sql("SELECT path, reason, message FROM rejected_documents")}
        assert set(rejected) == {"sources/broken.pdf", "sources/locked.pdf"}
        assert rejected["sources/locked.pdf"][0] == rejected["sources/broken.pdf"][0] == "conversion_failed"
        assert "sources/locked.pdf: could not be converted from PDF" in rejected["sources/locked.pdf"][1]
        assert "encrypted with a password" in rejected["sources/locked.pdf"][1]

        predicates = {row[0] for row in lifecycle.sql(
            """SELECT DISTINCT s.predicate FROM statements s JOIN documents d USING (doc_id)
            WHERE d.path = 'sources/report.pdf'"""
        )}
        assert "source_format" in predicates  # what the document is stays a fact about it
        assert not predicates & {"source_sha256", "converted_by", "source_file"}  # bookkeeping does not
        decided = lifecycle.sql(
            """SELECT s.line_start, s.char_start, s.char_end, d.text FROM statements s JOIN documents d USING (doc_id)
            WHERE d.path = 'sources/report.pdf' AND s.predicate = 'decided'"""
        )
        assert len(decided) == 1
        line, start, end, text = decided[0]
        assert "Minji Park decided to adopt DuckDB" in text[start:end]
        assert text.split("\n")[line - 1] == "Minji Park decided to adopt DuckDB for the catalog."
        labels = {row[0] for row in lifecycle.sql(
            """SELECT e.label FROM entities e JOIN documents d USING (doc_id) WHERE d.path = 'sources/review.docx'"""
        )}
        assert {"Jonas Weber", "LanceDB"} <= labels
        with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
            for path in CONVERTED:
                assert quads.count_document(path) > 0, path
            assert quads.count_document("sources/broken.pdf") == 0
            assert quads.count_document("archive/old.pdf") == 0

        # A touched but unchanged original is recognised by its bytes; an edited one is converted again.
        csv_path = vault / "sources/team.csv"
        os.utime(vault / "sources/report.pdf", ns=(1_000_000_000, 1_000_000_000))
        assert plan_changes(home, vault, VaultConfig()).changes == {}  # the planner too compares the original
        csv_path.write_bytes(csv_path.read_bytes() + "Sora Kim,Busan\n".encode("cp949"))
        second = lifecycle.run_all()
        assert lifecycle.extracted_in(second.run_id) == {"sources/team.csv"}
        [(team,)] = lifecycle.sql("SELECT text FROM documents WHERE path = 'sources/team.csv'")
        assert "| Sora Kim | Busan |" in team.split("\n")


def test_sync_skips_an_unchanged_original_without_converting_it(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "sources").mkdir(parents=True)
    (vault / "sources/report.pdf").write_bytes(REPORT_PDF)
    home = Home.at(tmp_path / "home")
    config = VaultConfig()
    buckets = list(range(config.bucket_count))
    assert sync_documents(home, vault, config, buckets, "run-1").new == ["sources/report.pdf"]
    os.utime(vault / "sources/report.pdf", ns=(2_000_000_000, 2_000_000_000))
    again = sync_documents(home, vault, config, buckets, "run-2")
    assert (again.new, again.changed, again.unchanged) == ([], [], 1)
    checked = sync_documents(home, vault, config, buckets, "run-3", verify_hashes=True)
    assert (checked.new, checked.changed, checked.unchanged) == ([], [], 1)
    (vault / "sources/report.pdf").write_bytes(blank_pdf())
    broken = sync_documents(home, vault, config, buckets, "run-4")
    assert "no text layer" in broken.rejected["sources/report.pdf"]
