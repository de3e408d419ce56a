"""Surface forms of entity labels and how alike two of them are, character by character.

One job: everything the merge candidates read from the label text alone, with no table of keys around it. The
compact form (spaces and punctuation dropped) decides the *variant* feature and is the form aliases are compared
in; initials and numeronyms decide the *acronym* feature; word containment and the Levenshtein similarity of
compact forms are the two string similarities; the script test marks a Korean/English pair of names. Front-matter
aliases are read here too, because they arrive as loosely typed YAML-turned-JSON values.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from rapidfuzz.distance import Levenshtein

from engramrag.extract.textutil import normalise_label

COMPACT_DROP = re.compile(r"[\s\-_./·]+")
WORD = re.compile(r"\w+")
DIGITS = re.compile(r"\d+")
HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
LATIN = re.compile(r"[a-z]")
INITIALS_SKIP = frozenset({"of", "the", "and", "for", "a", "an", "to", "in", "on", "&"})


def compact_form(text: str) -> str:
    """The normalised label without spaces, hyphens, dots, slashes and underscores."""
    return COMPACT_DROP.sub("", normalise_label(text))


def front_matter_aliases(front_matter: Any) -> list[str]:
    """The ``aliases`` (or ``alias``) of a note's front matter, given as the catalog's JSON text or a dict."""
    if isinstance(front_matter, str):
        try:
            front_matter = json.loads(front_matter)
        except ValueError:
            return []
    if not isinstance(front_matter, dict):
        return []
    return strings(front_matter.get("aliases", front_matter.get("alias")))


def strings(value: Any) -> list[str]:
    """The non-blank strings of a value that may be None, NaN, one string or any iterable (a DuckDB list arrives
    as a numpy array, a front-matter alias as a bare string)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    try:
        return [str(item) for item in value if item is not None and str(item).strip()]
    except TypeError:
        return [str(value)]


def acronyms_of(words: tuple[str, ...], compact: str) -> set[str]:
    """Initials, with and without small words ("bill of lading" -> "bol", "bl"), and the numeronym
    ("kubernetes" -> "k8s") of a key."""
    forms = set()
    latin = [w for w in words if LATIN.match(w[0]) or w[0].isdigit()]
    if len(latin) == len(words) >= 2:
        forms.add("".join(w[0] for w in words))
        content = [w for w in words if w not in INITIALS_SKIP]
        if len(content) >= 2:
            forms.add("".join(w[0] for w in content))
    if len(compact) >= 5 and compact.isascii() and compact.isalpha():
        forms.add(f"{compact[0]}{len(compact) - 2}{compact[-1]}")
    forms.discard(compact)
    return forms


def word_containment(a: frozenset[str], b: frozenset[str]) -> float:
    """The share of the longer key's words that the shorter covers when all its words are among them, else 0."""
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    if a < b:
        return round(len(a) / len(b), 6)
    if b < a:
        return round(len(b) / len(a), 6)
    return 0.0


def edit_similarity(a: str, b: str, floor: float) -> float:
    """Levenshtein similarity of two compact forms, or 0 below ``floor`` (computed only up to the distance the
    floor allows) and for equal forms, which are the variant feature instead."""
    longest = max(len(a), len(b))
    if not longest or a == b:
        return 0.0
    budget = int((1 - floor) * longest + 1e-9)
    distance = levenshtein(a, b, budget)
    if distance > budget:
        return 0.0
    similarity = 1.0 - distance / longest
    return round(similarity, 6) if similarity >= floor else 0.0


def levenshtein(a: str, b: str, budget: int) -> int:
    """Edit distance, or ``budget + 1`` as soon as it must exceed ``budget`` (rapidfuzz's banded Levenshtein)."""
    return int(Levenshtein.distance(a, b, score_cutoff=budget))


def scripts_differ(a: str, b: str) -> bool:
    """One key is written in Hangul only and the other in Latin letters only."""

    def script(text: str) -> str:
        hangul, latin = bool(HANGUL.search(text)), bool(LATIN.search(text))
        return "hangul" if hangul and not latin else "latin" if latin and not hangul else "mixed"

    return {script(a), script(b)} == {"hangul", "latin"}
