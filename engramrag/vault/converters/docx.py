"""Word documents (.docx): mammoth's semantic HTML, then the same HTML-to-Markdown rules as web pages.

mammoth maps Word's paragraph styles to headings, lists and tables and ignores visual formatting, which is
what the extractor needs; going through HTML (rather than mammoth's deprecated Markdown writer) keeps one set
of Markdown rules for both formats. Images are not extracted: their alt text, when there is one, stays.
The title and author come from the package's core properties (docProps/core.xml).
"""

from __future__ import annotations

import io
import zipfile
from xml.etree import ElementTree

import mammoth
from bs4 import BeautifulSoup

from engramrag.vault.converters.base import Body, ConversionError, check_office_package, clean_metadata
from engramrag.vault.converters.html import html_to_markdown

_ADVICE = "re-save it from Word as .docx"
_CORE = "docProps/core.xml"
_DC = "{http://purl.org/dc/elements/1.1/}"


def convert_docx(raw: bytes, name: str) -> Body:
    """A DOCX file's text as Markdown; ConversionError for a file that is not a Word package."""
    check_office_package(raw, "DOCX", _ADVICE)
    with zipfile.ZipFile(io.BytesIO(raw)) as package:
        if "word/document.xml" not in package.namelist():
            raise ConversionError(
                "the package has no word/document.xml (is it another Office format renamed to .docx?)",
                _ADVICE,
            )
        title, author = _core_properties(package)
    result = mammoth.convert_to_html(io.BytesIO(raw), convert_image=mammoth.images.img_element(lambda image: {}))
    markdown = html_to_markdown(BeautifulSoup(result.value, "html.parser"))
    return Body(markdown, title=title, author=author)


def _core_properties(package: zipfile.ZipFile) -> tuple[str | None, str | None]:
    if _CORE not in package.namelist():
        return None, None
    try:
        core = ElementTree.fromstring(package.read(_CORE))
    except ElementTree.ParseError:
        return None, None
    return clean_metadata(core.findtext(f"{_DC}title")), clean_metadata(core.findtext(f"{_DC}creator"))
