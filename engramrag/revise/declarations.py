"""Whole notes their authors declared replaced: front matter ``superseded_by: "[[New note]]"`` /
``supersedes:`` / ``replaces:``, and in the text "This replaces [[Old note]]", "superseded by [[X]]",
"[[X]]를 대체", "[[X]]로 대체됨". An in-text declaration must name its note by a link, so a sentence that merely
uses the word names nothing. Decision records (ADR status lines, DECISIONS.md "Supersedes D-3") are read by
``revise.supersession``; both resolve references with the one parser, ``revise.references``.

A declaration is what a person wrote, so it is applied on build without review, attributed to the author; a
person's ``reject`` verdict on the pair (topic ``supersession``, keys :func:`document_pair`) still wins.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pandas as pd

from engramrag.extract.decision_fields import references
from engramrag.revise.references import ReferenceIndex
from engramrag.run_memo import RunMemo
from engramrag.vault.document import span_of
from engramrag.vault.markdown import FRONT_MATTER

FRONT_MATTER_KEYS = {
    "superseded_by": "superseded_by", "supersededby": "superseded_by", "replaced_by": "superseded_by",
    "supersedes": "supersedes", "replaces": "supersedes",
}  # fmt: skip
# The decisions store keys of a pair of whole notes and of a pair of property values (``revise.versions``),
# beside the decision keys (``path#title``) of ``revise.supersession`` in the one topic ``supersession``.
DOCUMENT_PREFIX = "document:"
VALUE_PREFIX = "value:"
DOCUMENT_PAIR_PREFIXES = (DOCUMENT_PREFIX, VALUE_PREFIX)


@dataclass(frozen=True)
class Declaration:
    earlier_doc_id: str
    later_doc_id: str
    declared_in: str  # path of the note that says so
    form: str  # "front_matter" or "in_text"
    quote: str  # the line (or front matter entry) as written
    line: int | None


class DeclaredReference(NamedTuple):
    kind: str  # "supersedes" or "superseded_by"
    reference: str  # as written: a link target, a title, an identifier
    quote: str
    line: int | None  # None for front matter


def declared_by(path: str, author: object) -> str:
    """Who a declaration is attributed to: the note's author, or, when the note names none, "author of PATH"."""
    return str(author) if isinstance(author, str) and author else f"author of {path}"


def document_pair(earlier_path: str, later_path: str) -> tuple[str, str]:
    """The decisions store keys (left, right) of "the later note replaces the earlier one"."""
    return DOCUMENT_PREFIX + earlier_path, DOCUMENT_PREFIX + later_path


def find_declarations(
    documents: pd.DataFrame, declared: Mapping[str, Sequence[DeclaredReference]] | None = None
) -> list[Declaration]:
    """Every declaration in ``documents`` (doc_id, path, title, doc_date, and text, front_matter as JSON unless
    ``declared`` gives each doc id's :func:`declared_references`) whose reference names another live note."""
    index = _note_index(documents)
    if declared is None:
        declared = {str(doc_id): declared_references(str(text), matter) for doc_id, text, matter in zip(
            documents["doc_id"], documents["text"], documents["front_matter"], strict=True)}  # fmt: skip
    found: list[Declaration] = []
    for doc_id, path in zip(documents["doc_id"].astype(str), documents["path"].astype(str), strict=True):
        for kind, reference, quote, line in declared.get(doc_id, ()):
            for other in sorted(index.resolve(reference, path) - {doc_id}):
                earlier, later = (other, doc_id) if kind == "supersedes" else (doc_id, other)
                form = "front_matter" if line is None else "in_text"
                found.append(Declaration(earlier, later, path, form, quote, line))
    unique: dict[tuple[str, str], Declaration] = {}
    for declaration in found:  # the first statement of a pair is kept (front matter before the text)
        unique.setdefault((declaration.earlier_doc_id, declaration.later_doc_id), declaration)
    return list(unique.values())


def _note_index(documents: pd.DataFrame) -> ReferenceIndex:
    """The live notes as records to resolve references against: the one this process built last while the notes'
    ids, paths, titles and dates are the same (a resolution only reads the index; building it took 2.3 s of every
    timeline run at 100,000 notes)."""
    notes = tuple(
        (str(doc_id), str(path), str(title or path), day if isinstance(day, str) else None)
        for doc_id, path, title, day in zip(
            documents["doc_id"], documents["path"], documents["title"], documents["doc_date"], strict=True
        )
    )
    with _NOTE_INDEX.run() as made:
        return made(notes, lambda: _indexed(notes))


def _indexed(notes: tuple[tuple[str, str, str, str | None], ...]) -> ReferenceIndex:
    index = ReferenceIndex()
    for doc_id, path, title, day in notes:
        index.add_version(path, [(doc_id, title, day)])
    return index


_NOTE_INDEX: RunMemo[tuple[tuple[str, str, str, str | None], ...], ReferenceIndex] = RunMemo()


def declared_references(text: str, front_matter: object) -> list[DeclaredReference]:
    """What one note (``text``, ``front_matter`` as JSON) declares it replaces or is replaced by, unresolved."""
    front = json.loads(front_matter) if isinstance(front_matter, str) and front_matter else {}
    return [DeclaredReference(*found) for found in _declared(text, front if isinstance(front, dict) else {})]


def _declared(text: str, front_matter: dict[str, Any]) -> Iterable[tuple[str, str, str, int | None]]:
    """(``supersedes`` | ``superseded_by``, reference, quote, line or None for front matter)."""
    for key, value in front_matter.items():
        kind = FRONT_MATTER_KEYS.get(str(key).casefold().replace("-", "_"))
        if kind is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item.strip():
                reference = item.strip()
                reference = reference[2:-2] if reference.startswith("[[") and reference.endswith("]]") else reference
                yield kind, reference.split("|", 1)[0], f"{key}: {item}", None
    found = FRONT_MATTER.match(text)
    body_start = found.end() if found else 0
    for kind, reference in references(text, body_start, len(text)):
        before = text[max(0, reference.start - 2) : reference.start]
        if not (before == "[[" or before.endswith("(")):
            continue  # in running text only a link names a note
        span = span_of(text, reference.start, reference.end)
        line = text.splitlines()[span.line_start - 1] if text else ""
        yield kind, reference.value, line.strip(), span.line_start

