"""HTML pages (a saved article, an exported wiki page): the readable content as Markdown.

Scripts, styles, navigation and embedded media carry no statements a reader would stand behind, so they are
dropped before the conversion; headings become ATX headings so the chunker and the extractor see the page's
structure. Underscores and asterisks are not escaped: escapes would make quoted labels differ from the page.
Images embedded as ``data:`` URIs keep only their alt text (a base64 blob is not knowledge).
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, NavigableString, Tag
from markdownify import MarkdownConverter

from engramrag.vault.converters.base import Body, clean_metadata

_WHITESPACE = re.compile(r"\s+")
PREFORMATTED = ("pre", "code", "textarea")
DROPPED_TAGS = ("script", "style", "noscript", "template", "nav", "iframe", "svg", "canvas", "object", "embed")


def convert_html(raw: bytes, name: str) -> Body:
    """An HTML file's body as Markdown, titled by its ``<title>`` (else its first ``<h1>``)."""
    soup = BeautifulSoup(raw, "html.parser")
    title = clean_metadata(soup.title.get_text()) if soup.title else None
    if title is None and (first := soup.find("h1")) is not None:
        title = clean_metadata(first.get_text())
    author = soup.find("meta", attrs={"name": "author"})
    author_name = clean_metadata(author.get("content")) if isinstance(author, Tag) else None
    root = soup.body or soup
    return Body(html_to_markdown(root), title=title, author=author_name)


def html_to_markdown(root: Tag) -> str:
    """Markdown for a parsed HTML element (also used for the HTML that DOCX files are turned into)."""
    for tag in root.find_all(DROPPED_TAGS):
        tag.decompose()
    if isinstance(root, BeautifulSoup) and root.head is not None:
        root.head.decompose()
    for image in root.find_all("img"):
        if str(image.get("src", "")).startswith("data:") or not image.get("src"):
            alt = clean_metadata(image.get("alt"))
            image.replace_with(f"[image: {alt}]" if alt else "")
    _collapse_whitespace(root)
    converter = MarkdownConverter(
        heading_style="ATX",
        bullets="-",
        escape_underscores=False,
        escape_asterisks=False,
        table_infer_header=True,
    )
    return converter.convert_soup(root)


def _collapse_whitespace(root: Tag) -> None:
    """Runs of whitespace in running text become one space, as a browser shows them: the line breaks of the
    HTML source are not the author's, and kept they would cut sentences in the middle."""
    texts = [node for node in root.find_all(string=True) if type(node) is NavigableString]
    for node in texts:
        if node.find_parent(PREFORMATTED) is None and _WHITESPACE.search(node):
            node.replace_with(_WHITESPACE.sub(" ", str(node)))
