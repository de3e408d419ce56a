"""Which kinds may name the same thing: the one kind-compatibility table of the project.

A merge between entities whose kinds cannot be one thing (a Person and a Place, a Quantity and anything
else) is vetoed. The table is conservative in the other direction too: the rules extractor guesses kinds from
the shape of a label (CamelCase and acronyms become Artifact, "… Team" an Organization), so kinds that are
routinely used for one real thing stay compatible, and only pairs that cannot be the same thing however
loosely the kind was guessed are vetoed:

- every kind is compatible with itself;
- Concept, the extractor's "I do not know", is compatible with every kind except Quantity;
- Quantity (dates, amounts, measures) is compatible only with Quantity;
- Person only with Person and Concept; Place only with Place and Concept;
- the loose pairs listed in ``LOOSE_PAIRS`` below, each with the reason people name both kinds alike.

Custom kinds from configuration are declared under a core kind and behave exactly like it. The declaration
travels with the extraction (the catalog's ``entities.core_kind``, the document graph's ``rdfs:subClassOf``), so
resolution does not need the configuration that extracted them.

``core_kind`` and ``compatible`` are strict: an unknown kind is a clear error, for configuration and callers that
must not guess. Resolution of a vault must never stop on a kind it was not told about (a catalog row written before
``core_kind`` existed, a replayed extraction, a configuration since changed), so its paths use
``core_kind_or_concept``: such a kind is compared as Concept, the kind that claims nothing, and reported.
"""

from __future__ import annotations

from collections.abc import Mapping

from engramrag.extract.base import CORE_KINDS

LOOSE_PAIRS: tuple[tuple[str, str, str], ...] = (
    ("Organization", "Project", "teams are named after their projects"),
    ("Organization", "Artifact", "companies are named after their products"),
    ("Project", "Artifact", "a project is often the software it builds"),
    ("Project", "Document", "a project page stands for the project"),
    ("Project", "Task", "a large task is a small project"),
    ("Project", "Event", "a launch or migration is both a project and an event"),
    ("Artifact", "Document", "a file is an artifact"),
    ("Document", "Decision", "an ADR file is the decision it records"),
    ("Task", "Event", "a scheduled review is both a task and an event"),
)

COMPATIBLE: frozenset[frozenset[str]] = frozenset(
    {frozenset((kind,)) for kind in CORE_KINDS}
    | {frozenset(("Concept", kind)) for kind in CORE_KINDS if kind != "Quantity"}
    | {frozenset((a, b)) for a, b, _ in LOOSE_PAIRS}
)


def core_kind(kind: str, custom_kinds: Mapping[str, str] | None = None) -> str:
    """The core kind a kind stands for: itself when core, its declared parent when custom."""
    if kind in CORE_KINDS:
        return kind
    if custom_kinds and kind in custom_kinds:
        parent = custom_kinds[kind]
        if parent not in CORE_KINDS:
            raise ValueError(
                f"custom kind {kind!r} is declared under {parent!r}, which is not a core kind; "
                f"declare it under one of {', '.join(CORE_KINDS)}"
            )
        return parent
    custom = f"; custom kinds: {', '.join(sorted(custom_kinds))}" if custom_kinds else ""
    raise ValueError(f"unknown kind {kind!r}; the core kinds are {', '.join(CORE_KINDS)}{custom}")


def is_known(kind: str, custom_kinds: Mapping[str, str] | None = None) -> bool:
    """Whether ``kind`` is a core kind or a custom kind declared under one."""
    return kind in CORE_KINDS or bool(custom_kinds and custom_kinds.get(kind) in CORE_KINDS)


def core_kind_or_concept(kind: str, custom_kinds: Mapping[str, str] | None = None) -> str:
    """The core kind ``kind`` stands for, or Concept when it is unknown (see ``is_known``); never raises."""
    return core_kind(kind, custom_kinds) if is_known(kind, custom_kinds) else "Concept"


def compatible(kind_a: str, kind_b: str, custom_kinds: Mapping[str, str] | None = None) -> bool:
    """Whether entities of these two kinds may be the same thing, so that a merge of them is allowed."""
    return frozenset((core_kind(kind_a, custom_kinds), core_kind(kind_b, custom_kinds))) in COMPATIBLE


__all__ = ["COMPATIBLE", "CORE_KINDS", "LOOSE_PAIRS", "compatible", "core_kind", "core_kind_or_concept", "is_known"]
