"""The notes' terms and BM25 stems, kept with each index so the next build cuts only the changed notes.

Cutting every note into terms (``lexical.terms``) and stemming them (``note_bm25.stemmed``) was a fifth of an
index build and redone for every note on every build, though an edit changes one. The result depends only on
the note's text, so it is stored beside the index keyed by the catalog's hash of that text (``documents.body_hash``,
the SHA-256 of ``text``) and reused by the next build for every note whose text is the same; a changed note misses
and is cut again, and only the missing notes' texts are read from the catalog (``missing``). A term never holds a space
(``terms`` splits on whitespace), so each list is stored as one space-joined string, which reads back far faster
than a list column.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import duckdb
import pandas as pd

from engramrag.retrieve.lexical import terms
from engramrag.retrieve.note_bm25 import stemmed

FILE = "body_terms.parquet"


class BodyTerms:
    """Terms and stems per note text: those of the previous index, plus whatever this build cut."""

    def __init__(self, known: dict[str, tuple[str, str]] | None = None) -> None:
        self.known = known or {}
        self.cut = 0  # notes whose text was not in the previous index
        self.reused = 0

    @classmethod
    def load(cls, folder: Path | None) -> BodyTerms:
        """The previous index's terms (none when there is no index, or it predates this file)."""
        path = folder / FILE if folder is not None else None
        if path is None or not path.exists():
            return cls()
        with duckdb.connect() as db:
            rows = db.execute("SELECT hash, terms, stems FROM read_parquet(?)", [str(path)]).fetchall()
        return cls({digest: (listed, stems) for digest, listed, stems in rows})

    def missing(self, hashes: Iterable[str]) -> set[str]:
        """The text hashes whose terms are not known: the texts the caller must read."""
        return {digest for digest in hashes if digest not in self.known}

    def of(
        self, hashes: Sequence[str], texts: Sequence[str | None]
    ) -> tuple[list[list[str]], list[list[str]]]:
        """Per note (its text hash, and its text where the hash is ``missing``): its terms and its stems, cut only
        for texts not seen before."""
        all_terms, all_stems = [], []
        for digest, text in zip(hashes, texts, strict=True):
            stored = self.known.get(digest)
            if stored is None:
                if not isinstance(text, str):
                    raise ValueError(f"the terms of text {digest} are not known and its text was not given")
                listed = terms(text)
                stored = (" ".join(listed), " ".join(stemmed(listed)))
                self.known[digest] = stored
                self.cut += 1
            else:
                self.reused += 1
            all_terms.append(stored[0].split())
            all_stems.append(stored[1].split())
        return all_terms, all_stems

    def save(self, folder: Path, hashes: Sequence[str]) -> None:
        """Write the terms of the texts this index holds (``hashes``), dropping those of notes gone since."""
        wanted = sorted(set(hashes))
        frame = pd.DataFrame(
            {
                "hash": wanted,
                "terms": [self.known[h][0] for h in wanted],
                "stems": [self.known[h][1] for h in wanted],
            }
        )
        with duckdb.connect() as db:
            db.register("frame", frame)
            target = str(folder / FILE).replace("'", "''")
            db.execute(f"COPY (SELECT * FROM frame) TO '{target}' (FORMAT parquet)")
