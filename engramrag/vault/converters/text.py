"""Plain text files: the encoding is detected, the text is kept as it is written.

Notes saved by older Windows tools are often UTF-16 or a legacy code page such as CP949 (Korean), so a file is
tried as UTF-8 first (the common case, and never a wrong guess for valid UTF-8), then by its byte-order mark,
and only then handed to charset-normalizer. A file none of these can read is rejected rather than decoded
into mojibake that would end up as entities in the graph.
"""

from __future__ import annotations

import codecs

from engramrag.vault.converters.base import Body, ConversionError

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(raw: bytes) -> tuple[str, str]:
    """The text of ``raw`` and the name of the encoding it was read with; ConversionError when undecodable."""
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(encoding), encoding.removesuffix("-sig")
            except UnicodeDecodeError:
                break
    if b"\x00" not in raw:  # NUL bytes are valid UTF-8, but in text they mean UTF-16/32 without a mark
        try:
            return raw.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            pass
    from charset_normalizer import from_bytes

    best = from_bytes(raw).best()
    if best is None:
        raise ConversionError(
            "the text encoding could not be detected (the file may be binary, or mixes encodings)",
            "re-save it as UTF-8 text",
        )
    return str(best), best.encoding.replace("_", "-")


def convert_text(raw: bytes, name: str) -> Body:
    """The file's text as the Markdown body (lines starting with ``#`` become headings, as in any note)."""
    text, encoding = decode_text(raw)
    return Body(text, extra={"source_encoding": encoding})
