"""The numbered padded trigrams and the characters of the keys' compact forms, as integer ids kept for the process.

The edit leg of blocking (``blocking._edit_pairs``) indexes every compact form by its padded trigrams (a repeated
trigram numbered, so a form's trigrams are a set) and compares the character bags of the pairs it finds. Cutting
37,000 forms into trigrams and characters in Python, and numbering them in a dict, took most of its 1.1 s at 10,000
notes, each time a run's keys differed from the last run's (an edit that names something new). A form's trigrams and
characters are a function of the form alone, so a process keeps them as arrays of ids that stay the same from one
run to the next (``FormGrams``), and a run only cuts the forms it has not seen.

Ids are given in the order grams are first met, which says nothing about them: what the edit leg orders trigrams by
(rarest first, then by the trigram and its number) is ``gram_rank``, each id's place among every trigram met so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class FormIds:
    """One form's trigram ids (numbered trigrams, each once) and character ids (one per character, repeats kept)."""

    grams: np.ndarray  # int64
    characters: np.ndarray  # int64


@dataclass
class FormGrams:
    """Trigram and character ids given by this process, and the forms cut into them by its last run."""

    gram_ids: dict[tuple[str, int], int] = field(default_factory=dict)
    grams: list[tuple[str, int]] = field(default_factory=list)
    character_ids: dict[str, int] = field(default_factory=dict)
    _rank: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _forms: dict[str, FormIds] = field(default_factory=dict)  # the last call's forms (a plain dict: 37,000 lookups)

    def of(self, forms: list[str]) -> list[FormIds]:
        """Each form's ids, cut only for forms the last call did not have."""
        last, kept = self._forms, {}
        for form in forms:
            found = kept.get(form) or last.get(form)
            kept[form] = found if found is not None else self._cut(form)
        self._forms = kept
        return [kept[form] for form in forms]

    def gram_rank(self) -> np.ndarray:
        """Per trigram id, its place among all trigrams given an id, ordered by (trigram, number)."""
        if len(self._rank) != len(self.grams):
            order = sorted(range(len(self.grams)), key=self.grams.__getitem__)
            rank = np.empty(len(order), dtype=np.int64)
            rank[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int64)
            self._rank = rank
        return self._rank

    def _cut(self, form: str) -> FormIds:
        ids = self.gram_ids
        grams = []
        for gram in numbered_trigrams(form):
            found = ids.get(gram)
            if found is None:
                found = ids[gram] = len(self.grams)
                self.grams.append(gram)
            grams.append(found)
        characters = [self.character_ids.setdefault(char, len(self.character_ids)) for char in form]
        return FormIds(np.asarray(grams, dtype=np.int64), np.asarray(characters, dtype=np.int64))


def numbered_trigrams(text: str) -> list[tuple[str, int]]:
    """Padded trigrams, repeated ones numbered so that the multiset becomes a set."""
    padded = f"\x02\x02{text}\x03\x03"
    seen: dict[str, int] = {}
    out = []
    for k in range(len(padded) - 2):
        gram = padded[k : k + 3]
        seen[gram] = count = seen.get(gram, 0) + 1
        out.append((gram, count))
    return out
