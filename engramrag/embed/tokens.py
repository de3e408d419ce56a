"""Word runs shared by the hash embedder and the full-text analyzer.

Text is NFKC-normalised and lower-cased, then split into runs of word characters. A run never mixes
CJK (Hangul, Han, Kana) with other scripts, so "Dagster로" yields "dagster" and "로": a Korean particle
glued to a Latin name does not hide the name.
"""

from __future__ import annotations

import re
import unicodedata

# Hangul Jamo, Kana, Hangul compatibility Jamo, CJK ideographs (with extension A), Hangul syllables,
# CJK compatibility ideographs.
CJK_RANGES = "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_CHAR = f"[{CJK_RANGES}]"
_OTHER_RUN = f"[^\\W{CJK_RANGES}]+"
_RUN = re.compile(f"{_CJK_CHAR}+|{_OTHER_RUN}")
# The same runs, CJK runs of two or more characters in the first group and every other run in the second.
_RUN_BY_SCRIPT = re.compile(f"({_CJK_CHAR}{{2,}})|({_CJK_CHAR}|{_OTHER_RUN})")
_CJK = re.compile(_CJK_CHAR)


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def word_runs(text: str) -> list[str]:
    """The words of ``text`` (normalised), CJK and non-CJK runs apart."""
    return _RUN.findall(normalise(text))


def runs_by_script(text: str) -> list[tuple[str, str]]:
    """The runs of :func:`word_runs`, each as ``(cjk_run, "")`` for a CJK run of two or more characters and
    ``("", run)`` for any other, so a caller needs no script test per word."""
    return _RUN_BY_SCRIPT.findall(normalise(text))


def is_cjk(word: str) -> bool:
    """Whether a run from :func:`word_runs` is a CJK run (runs are single-script, so the first char decides)."""
    return bool(word) and _CJK.match(word) is not None
