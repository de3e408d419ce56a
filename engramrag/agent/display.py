"""Agent text made safe to show a person: one escaping rule for the CLI, the MCP confirmation text and the dashboard.

What an agent proposes (a diff, a summary, a note's title) reaches a person's terminal or browser. Raw control
characters there are instructions to the terminal, not text: an ANSI sequence can move the cursor up and erase
the diff lines above it, a carriage return can overprint a line, and a bidi override (U+202E) can make
``evil.md`` read as ``dm.live``. So every character that is not printable text is shown as a visible escape
(``\\x1b``, ``\\r``, ``\\u202e``) instead: the person sees that something odd is there, and the bytes on disk
are unchanged. Newlines and tabs stay, because a diff is lines. A literal backslash is not doubled, so normal
text reads as it is; an escape shown here is always a character that was really there.

The page of a long change is cut only with the count of lines left out and the command that shows them all.
"""

from __future__ import annotations

import unicodedata

# Bidi embeddings, overrides and isolates, plus marks that reorder or hide text without being visible.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_KEEP = "\n\t"


def _needs_escape(character: str) -> bool:
    if character in _KEEP:
        return False
    if character in _BIDI or character in _INVISIBLE:
        return True
    # Cc: C0 and C1 controls and DEL; Cs: lone surrogates; Zl/Zp: line and paragraph separators.
    return unicodedata.category(character) in ("Cc", "Cs", "Zl", "Zp")


def _visible(character: str) -> str:
    code = ord(character)
    if code == 0x0D:
        return "\\r"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def safe_text(text: object) -> str:
    """``text`` with every control, bidi and invisible formatting character shown as a visible escape."""
    value = "" if text is None else str(text)
    return "".join(_visible(character) if _needs_escape(character) else character for character in value)


def safe_json(text: str) -> str:
    """JSON text with the same characters written as ``\\uXXXX`` escapes: the same data for a program, and
    nothing a terminal acts on. (``json.dumps`` leaves C1 controls and bidi overrides raw.)"""
    return "".join(f"\\u{ord(character):04x}" if _needs_escape(character) else character for character in text)


def page_lines(text: str, max_lines: int, max_chars: int, see_all: str) -> tuple[str, int]:
    """The first lines of ``text`` that fit ``max_lines`` and ``max_chars`` (escaped), and how many were left out.

    When lines are left out, the page ends with a line saying how many and ``see_all`` (the command showing
    them all); it never ends silently in the middle of a change.
    """
    lines = safe_text(text).splitlines()
    shown: list[str] = []
    used = 0
    for line in lines:
        if len(shown) >= max_lines or used + len(line) + 1 > max_chars:
            break
        shown.append(line)
        used += len(line) + 1
    left = len(lines) - len(shown)
    if left:
        shown.append(f"[{left} more line(s) of this change are NOT shown here; see all of it with: {see_all}]")
    return "\n".join(shown), left


__all__ = ["page_lines", "safe_json", "safe_text"]
