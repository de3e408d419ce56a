"""When two note titles name the same thing: the comparison key that ``learn`` and agent-folder writes use.

An agent that wants a second note on a topic only has to make its title differ from the first one's by a
detail a person reads past: case, an article ("The Tern" and "Tern"), a plural, a Cyrillic "а" for a Latin
"a", a zero-width space, or in Korean a particle ("테른은" and "테른"). The key folds all of those, so two
titles with the same key, or keys that are nearly the same, are one topic. It is a cheap, explainable rule,
not a semantic match: "Tern migration" and "How the Tern moved" still pass as different.
"""

from __future__ import annotations

import difflib
import re
import unicodedata

SIMILAR_RATIO = 0.85
MIN_CONTAINED_WORDS = 3
ARTICLES = frozenset({"the", "a", "an"})
# Longest first, so "에서" is stripped before "에"; only these common case/topic particles, which a title
# rarely ends a word with otherwise.
KOREAN_PARTICLES = ("에서", "으로", "은", "는", "이", "가", "을", "를", "의", "에", "와", "과", "로", "도")
# Letters of other scripts drawn like Latin ones (after casefolding), from Unicode's confusables list:
# enough for the look-alikes a keyboard or a homoglyph generator produces.
CONFUSABLES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w",
    "һ": "h", "ӏ": "l", "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ɡ": "g", "ı": "i", "ȷ": "j", "ℓ": "l",
})
_WORD = re.compile(r"[^\W_]+")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")


def fold(text: str) -> str:
    """NFKC, casefold, confusables folded to Latin, invisible format characters and accents' marks dropped."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(CONFUSABLES)
    decomposed = unicodedata.normalize("NFD", text)
    kept = "".join(ch for ch in decomposed if unicodedata.category(ch) not in ("Cf", "Mn"))
    return unicodedata.normalize("NFC", kept)


def stem(word: str) -> str:
    """A light English stem (plurals, -ing, -ed) or a Korean word without its trailing particle."""
    if _HANGUL.search(word):
        for particle in KOREAN_PARTICLES:
            if word.endswith(particle) and len(word) > len(particle):
                return word[: -len(particle)]
        return word
    if len(word) <= 3:
        return word
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ches", "ch"), ("shes", "sh"), ("xes", "x")):
        if word.endswith(suffix):
            return word[: -len(suffix)] + replacement
    if word.endswith("ing") and len(word) > 5:
        return word[:-3]
    if word.endswith("ed") and len(word) > 4:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def title_words(title: str) -> list[str]:
    """The title's comparison words: folded, articles left out, each stemmed."""
    return [stem(word) for word in _WORD.findall(fold(title)) if word not in ARTICLES]


def title_key(title: str) -> str:
    return " ".join(title_words(title))


def similar_titles(left: str, right: str) -> bool:
    """Same key, keys at least ``SIMILAR_RATIO`` alike, or every word of the shorter title (three or more) in the
    longer one, which catches a title that only adds a parenthesis or a subtitle."""
    a, b = title_key(left), title_key(right)
    if not a or not b:
        return a == b
    if a == b or difflib.SequenceMatcher(None, a, b).ratio() >= SIMILAR_RATIO:
        return True
    shorter, longer = sorted((set(a.split()), set(b.split())), key=len)
    return len(shorter) >= MIN_CONTAINED_WORDS and shorter <= longer


__all__ = ["ARTICLES", "KOREAN_PARTICLES", "SIMILAR_RATIO", "fold", "similar_titles", "stem", "title_key",
           "title_words"]
