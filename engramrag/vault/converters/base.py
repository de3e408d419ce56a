"""What every format converter hands back, and how it says that a file cannot be converted."""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field

MAX_UNPACKED_BYTES = 200_000_000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TRAILING_SPACE = re.compile(r"[ \t]+$", re.MULTILINE)
_BLANK_RUNS = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class Body:
    """The Markdown body of a converted file and what its metadata says about it. ``extra`` holds further
    front matter fields a format knows (the detected text encoding, say)."""

    markdown: str
    title: str | None = None
    author: str | None = None
    extra: dict[str, str | int] = field(default_factory=dict)


class ConversionError(Exception):
    """A file of a known format that cannot be turned into text: ``problem`` says what is wrong with this
    file, ``advice`` what a person can do about it."""

    def __init__(self, problem: str, advice: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.advice = advice


def tidy(markdown: str) -> str:
    """Markdown as the vault stores it: "\\n" line ends, no control characters (a NUL would make the parser
    call the text binary), no trailing spaces, at most one blank line in a row."""
    text = markdown.replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " ")
    text = _CONTROL.sub("", text)
    text = _TRAILING_SPACE.sub("", text)
    return _BLANK_RUNS.sub("\n\n", text).strip("\n")


def clean_metadata(value: object) -> str | None:
    """A metadata string worth keeping (a title, an author), or None for missing and blank ones."""
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def check_office_package(raw: bytes, format_label: str, advice: str) -> None:
    """Refuse a DOCX or XLSX file that is no zip package or would unpack to more than ``MAX_UNPACKED_BYTES``:
    a small file can hold a huge, or hostile, archive, and the vault's size limit only sees the packed bytes."""
    if not zipfile.is_zipfile(io.BytesIO(raw)):
        raise ConversionError(f"it is not a valid {format_label} package (not a zip archive)", advice)
    with zipfile.ZipFile(io.BytesIO(raw)) as package:
        unpacked = sum(info.file_size for info in package.infolist())
    if unpacked > MAX_UNPACKED_BYTES:
        raise ConversionError(
            f"it would unpack to {unpacked:,} bytes, over the converter's {MAX_UNPACKED_BYTES:,}-byte limit",
            "split it into smaller files",
        )
