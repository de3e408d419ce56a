"""PDF files: the text layer of each page, in page order, with a ``<!-- page N -->`` marker before each page.

pypdf reads the text a PDF carries; it does not see text that exists only as pixels. A PDF with no text at all
(a scan) is therefore rejected with "run OCR first" instead of joining as an empty document, and pages
without text in an otherwise readable PDF are marked as such. The markers are HTML comments so they neither
render nor become headings (a heading "Page 3" would be an entity shared by every PDF), but a reader of the
converted text can still tell which page a line came from. A PDF encrypted with a user password is rejected;
one that opens with the empty password (owner-restricted only) is read.
"""

from __future__ import annotations

import io

from pypdf import PasswordType, PdfReader
from pypdf.errors import PdfReadError

from engramrag.vault.converters.base import Body, ConversionError, clean_metadata

_ENCRYPTED_ADVICE = "save an unencrypted copy (print to PDF, or qpdf --decrypt) in its place"


def convert_pdf(raw: bytes, name: str) -> Body:
    """The PDF's text as Markdown; ConversionError for encrypted, scanned or unreadable files."""
    if b"%PDF-" not in raw[:1024]:
        raise ConversionError("it is not a PDF (no %PDF- header at the start)", "check the file; re-export it as PDF")
    try:
        return _convert(PdfReader(io.BytesIO(raw), strict=False))
    except PdfReadError as error:
        detail = " ".join(str(error).split())[:200]
        raise ConversionError(
            f"it is damaged or truncated ({type(error).__name__}: {detail})",
            "download or export it again; if a viewer still opens it, print it to a new PDF",
        ) from None


def _convert(reader: PdfReader) -> Body:
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except Exception as error:  # an unsupported cipher is the same problem for the user
            raise ConversionError(f"it is encrypted and cannot be opened ({error})", _ENCRYPTED_ADVICE) from None
        if opened == PasswordType.NOT_DECRYPTED:
            raise ConversionError("it is encrypted with a password", _ENCRYPTED_ADVICE)
    pages: list[str] = []
    with_text = 0
    for number, page in enumerate(reader.pages, start=1):
        try:
            text = (page.extract_text() or "").strip()
        except Exception as error:  # one damaged page should not lose the others
            pages.append(f"<!-- page {number}: its text could not be read ({type(error).__name__}) -->")
            continue
        if text:
            with_text += 1
            pages.append(f"<!-- page {number} -->\n\n{text}")
        else:
            pages.append(f"<!-- page {number}: no text layer -->")
    if with_text == 0:
        raise ConversionError(
            f"no text layer on any of its {len(pages)} page(s) (a scan or an image-only PDF)",
            "run OCR first (for example `ocrmypdf in.pdf out.pdf`) and put the OCR'd PDF in its place",
        )
    metadata = reader.metadata
    title = clean_metadata(metadata.title) if metadata else None
    author = clean_metadata(metadata.author) if metadata else None
    return Body("\n\n".join(pages), title=title, author=author, extra={"source_pages": len(pages)})
