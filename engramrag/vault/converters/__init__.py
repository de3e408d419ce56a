"""Files that are not Markdown (HTML, PDF, DOCX, CSV, XLSX, plain text) in the vault's sources folder, turned
into Markdown notes so they join the same lifecycle as the notes people write.

The original is the document: it is never changed, moved or copied, and the converted note exists only in the
catalog, under the original's vault path (``sources/report.pdf``). So chunks, statements and their provenance
name the original file, and change detection looks at the original's size, modification time and hash (the
hash is kept in the note's ``source_sha256`` field). Line numbers and character spans of statements refer to
the converted text as stored in the catalog's ``documents.text``, not to the original file.

The converted note has front matter (title from the file's metadata or name, ``source_file``,
``source_format``, ``converted_by`` with the converter and library versions, ``source_sha256``, and what the
format adds) and its first body line links to the original relative to the note's folder. A file that cannot
be converted raises ``DocumentRejected`` with reason ``conversion_failed``: the message names the file, the
format, what went wrong and what to do.

Format modules import their libraries at the top, and this module imports a format module only when a file
of that format is converted, so scanning the vault stays cheap.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

import yaml

from engramrag.vault.config import VaultConfig
from engramrag.vault.converters.base import Body, ConversionError, tidy
from engramrag.vault.document import Document
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.markdown import parse_document

CONVERSION_FAILED = "conversion_failed"
# Front matter a converter writes for change detection and provenance, not knowledge about the document's
# subject: extractors skip these keys so a converted PDF does not state its own hash and library versions.
BOOKKEEPING_KEYS = frozenset(("source_file", "converted_by", "source_sha256"))


@dataclass(frozen=True)
class Format:
    """One convertible format: its label, the function converting it and the libraries that do the work."""

    label: str
    module: str
    function: str
    libraries: tuple[str, ...]
    remedy: str  # what to do when a file of this format fails for a reason the converter did not foresee


FORMATS: dict[str, Format] = {
    ".html": Format("HTML", "html", "convert_html", ("beautifulsoup4", "markdownify"), "save the page again as HTML"),
    ".htm": Format("HTML", "html", "convert_html", ("beautifulsoup4", "markdownify"), "save the page again as HTML"),
    ".pdf": Format("PDF", "pdf", "convert_pdf", ("pypdf",), "re-export or print it to a new PDF"),
    ".docx": Format("DOCX", "docx", "convert_docx", ("mammoth", "markdownify"), "re-save it from Word as .docx"),
    ".csv": Format("CSV", "spreadsheet", "convert_csv", ("charset-normalizer",), "re-export it as UTF-8 CSV"),
    ".xlsx": Format("XLSX", "spreadsheet", "convert_xlsx", ("openpyxl",), "re-save it from Excel as .xlsx"),
    ".txt": Format("text", "text", "convert_text", ("charset-normalizer",), "re-save it as UTF-8 text"),
}


@dataclass(frozen=True)
class Converted:
    """The Markdown note (front matter included) for one original, and the converter that wrote it."""

    markdown: str
    converter: str


def is_convertible(relative_path: str, config: VaultConfig) -> bool:
    """Whether a vault path is a file to convert: inside the sources folder, with a convertible suffix that is
    not also a Markdown suffix, and a format this package knows."""
    parts = relative_path.split("/")
    if len(parts) < 2 or parts[0] != config.sources_folder.strip("/"):
        return False
    name = parts[-1].lower()
    if name.endswith(tuple(s.lower() for s in config.suffixes)):
        return False
    return any(name.endswith(suffix.lower()) and suffix.lower() in FORMATS for suffix in config.convertible_suffixes)


def source_hash(raw: bytes) -> str:
    """The hash of an original's bytes, as the converted note records it in ``source_sha256``."""
    return hashlib.sha256(raw).hexdigest()


def convert(raw: bytes, relative_path: str) -> Converted:
    """The Markdown note for the original ``raw`` at vault path ``relative_path``; DocumentRejected with reason
    ``conversion_failed`` when the file cannot be converted, and ValueError for a suffix no converter knows."""
    suffix = PurePosixPath(relative_path).suffix.lower()
    form = FORMATS.get(suffix)
    if form is None:
        raise ValueError(f"{relative_path}: no converter for {suffix or 'files without a suffix'}")
    converter = f"engramrag {form.label} converter ({_library_versions(form.libraries)})"
    name = PurePosixPath(relative_path).name
    try:
        body: Body = getattr(importlib.import_module(f"{__name__}.{form.module}"), form.function)(raw, name)
    except ConversionError as error:
        raise _failed(relative_path, form, error.problem, error.advice) from None
    except Exception as error:  # the libraries raise many types for a damaged file; each means the same to a user
        detail = " ".join(str(error).split())[:300] or "no detail"
        raise _failed(relative_path, form, f"{type(error).__name__}: {detail}", form.remedy) from None
    return Converted(_note(body, relative_path, form, converter, raw), converter)


def convert_document(raw: bytes, relative_path: str, config: VaultConfig) -> Document:
    """The parsed Document of a converted original. The vault's one size limit applies to the original and
    to the converted note; ``size_bytes`` is the original's size, so unchanged files are recognised by it."""
    form = FORMATS.get(PurePosixPath(relative_path).suffix.lower())
    label = form.label if form else "source"
    if len(raw) > config.max_file_bytes:
        raise DocumentRejected(
            "too_large",
            f"{relative_path}: this {label} file is {len(raw):,} bytes, over the {config.max_file_bytes:,}-byte "
            "limit that applies to every vault file, converted sources included; split it or raise "
            "the max_file_bytes setting.",
        )
    encoded = convert(raw, relative_path).markdown.encode("utf-8")
    if len(encoded) > config.max_file_bytes:
        raise DocumentRejected(
            "too_large",
            f"{relative_path}: converted from {label}, its Markdown is {len(encoded):,} bytes, over the "
            f"{config.max_file_bytes:,}-byte limit; split the original or raise the max_file_bytes setting.",
        )
    document = parse_document(encoded, relative_path, config)
    return dataclasses.replace(document, size_bytes=len(raw))


def _note(body: Body, relative_path: str, form: Format, converter: str, raw: bytes) -> str:
    name = PurePosixPath(relative_path).name
    front: dict[str, Any] = {"title": body.title or PurePosixPath(name).stem}
    if body.author:
        front["author"] = body.author
    front |= {
        "source_file": relative_path,
        "source_format": form.label,
        "converted_by": converter,
        "source_sha256": source_hash(raw),
        **body.extra,
    }
    header = yaml.safe_dump(front, allow_unicode=True, sort_keys=False, width=10_000)
    label = name.replace("[", "(").replace("]", ")")
    link = f"[original: {label}]({quote(name)})"
    text = tidy(body.markdown)
    return f"---\n{header}---\n{link}\n\n{text}\n" if text else f"---\n{header}---\n{link}\n"


def _failed(relative_path: str, form: Format, problem: str, advice: str) -> DocumentRejected:
    return DocumentRejected(
        CONVERSION_FAILED,
        f"{relative_path}: could not be converted from {form.label} to Markdown: {problem}. To fix: {advice}. "
        "The original is left untouched; the next build retries it once the file changes.",
    )


@cache
def _library_versions(libraries: tuple[str, ...]) -> str:
    found = []
    for library in libraries:
        try:
            found.append(f"{library} {version(library)}")
        except PackageNotFoundError:
            found.append(f"{library} (version unknown)")
    return ", ".join(found)
