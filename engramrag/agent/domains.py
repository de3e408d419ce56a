"""The writable field domain of a confirmation, and the edits it constrains.

Exact arguments can only accept or refuse a call whole; a person usually means "the status may change this
time, the owner may not". The domain says that: which front-matter fields and which sections (by heading)
may change. An empty domain is unconstrained and says so. A write that changes anything outside a declared
domain is refused whole, never truncated to the allowed part, because a silently narrowed write reads later
as if the refused part had been approved. Cross-field rules ("B only when A") are out of its reach.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from engramrag.agent.confirmations import Refused
from engramrag.vault.markdown import FRONT_MATTER, HEADING, mask_code, normalised_text

PREAMBLE = "(before the first heading)"
ANY = "*"


@dataclass(frozen=True)
class FieldDomain:
    """Front-matter field names and section headings a write may change; both empty means unconstrained.

    ``*`` among the fields (or sections) allows any of them. ``confirmers`` (from the write policy) names the
    people who may approve; empty means any person.
    """

    fields: frozenset[str] = field(default_factory=frozenset)
    sections: frozenset[str] = field(default_factory=frozenset)
    confirmers: tuple[str, ...] = ()

    @property
    def unconstrained(self) -> bool:
        return not self.fields and not self.sections

    def as_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "fields": sorted(self.fields), "sections": sorted(self.sections), "unconstrained": self.unconstrained
        }
        if self.confirmers:
            row["confirmers"] = list(self.confirmers)
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> FieldDomain:
        return cls(
            frozenset(row.get("fields", ())), frozenset(row.get("sections", ())), tuple(row.get("confirmers", ()))
        )

    def check(self, changed_fields: set[str], changed_sections: set[str], path: str) -> None:
        """Refuse the whole write, naming every part outside the domain; an unconstrained domain allows all."""
        if self.unconstrained:
            return
        outside = [] if ANY in self.fields else [f"field {name!r}" for name in sorted(changed_fields - self.fields)]
        if ANY not in self.sections:
            outside += [f"section {name!r}" for name in sorted(changed_sections - self.sections)]
        if outside:
            raise Refused(
                "domain",
                f"the write to {path} changes {', '.join(outside)}, outside the confirmed domain (fields "
                f"{sorted(self.fields)}, sections {sorted(self.sections)}); nothing was written. Propose a write "
                "that stays inside the domain, or ask for a confirmation that covers these parts.",
            )


@dataclass(frozen=True)
class Edit:
    """Front-matter updates (None removes a field) and section body replacements keyed by heading text."""

    fields: Mapping[str, Any] = field(default_factory=dict)
    sections: Mapping[str, str] = field(default_factory=dict)

    def as_arguments(self) -> dict[str, Any]:
        return {"fields": dict(self.fields), "sections": dict(self.sections)}


def split_document(text: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The front matter and each section's text (heading to the next heading of any level) of a note."""
    text = normalised_text(text)
    front, body_start = _front_matter(text)
    sections: dict[str, str] = {}
    for title, start, end in _sections(text, body_start):
        sections[title] = text[start:end]
    return front, sections


def changed_parts(old: str | None, new: str) -> tuple[set[str], set[str]]:
    """Which front-matter fields and sections differ between two versions (every part when ``old`` is None)."""
    old_front, old_sections = split_document(old) if old is not None else ({}, {})
    new_front, new_sections = split_document(new)
    fields = {name for name in old_front.keys() | new_front.keys() if old_front.get(name) != new_front.get(name)}
    fields |= {name for name in old_front.keys() ^ new_front.keys()}
    every_section = old_sections.keys() | new_sections.keys()
    sections = {name for name in every_section if old_sections.get(name) != new_sections.get(name)}
    return fields, sections


def apply_edit(text: str, edit: Edit, path: str) -> str:
    """The note with the edit applied; a section that does not exist is an error, never appended silently."""
    text = normalised_text(text)
    _, body_start = _front_matter(text)
    body = text[body_start:]
    if edit.sections:
        spans = {title: (start - body_start, end - body_start) for title, start, end in _sections(text, body_start)}
        for title, replacement in sorted(edit.sections.items(), key=lambda item: -spans.get(item[0], (0, 0))[0]):
            if title not in spans or title == PREAMBLE:
                raise ValueError(f"{path} has no section headed {title!r}; its sections are {sorted(spans)}")
            start, end = spans[title]
            heading_end = body.index("\n", start) + 1 if "\n" in body[start:end] else end
            content = replacement.rstrip("\n") + "\n"
            if end < len(body):
                content += "\n"
            body = body[:heading_end] + ("\n" if content.strip() else "") + content + body[end:]
    if edit.fields:
        match = FRONT_MATTER.match(text)
        dumped = _edited_front_matter(match.group(1) or "" if match else "", edit.fields)
        return (f"---\n{dumped}---\n" if dumped.strip() else "") + body
    return text[:body_start] + body


def _edited_front_matter(block: str, fields: Mapping[str, Any]) -> str:
    """The front-matter block with ``fields`` set (None: removed), every other line as the person wrote it.

    ruamel.yaml's round trip keeps comments, key order, quoting and flow lists (``tags: [a, b]``), so the
    diff a person approves shows only the fields that change.
    """
    document = YAML(typ="rt")
    document.preserve_quotes = True
    document.width = 4096
    loaded = document.load(block) if block.strip() else None
    data = loaded if isinstance(loaded, CommentedMap) else CommentedMap()
    for name, value in fields.items():
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value
    if not data:
        return ""
    stream = io.StringIO()
    document.dump(data, stream)
    return stream.getvalue()


def _front_matter(text: str) -> tuple[dict[str, Any], int]:
    match = FRONT_MATTER.match(text)
    if not match:
        return {}, 0
    try:
        loaded = yaml.safe_load(match.group(1) or "") or {}
    except yaml.YAMLError as error:
        raise ValueError(f"the front matter is not valid YAML: {error}") from None
    if not isinstance(loaded, dict):
        raise ValueError("the front matter must be a YAML mapping")
    return {str(key): value for key, value in loaded.items()}, match.end()


def _sections(text: str, body_start: int) -> list[tuple[str, int, int]]:
    """(title, start, end) of the preamble and every heading's section; repeated titles get " (2)" etc."""
    masked = mask_code(text, body_start)
    starts = [(match.group(2).strip(), match.start()) for match in HEADING.finditer(masked, body_start)]
    found: list[tuple[str, int, int]] = []
    first = starts[0][1] if starts else len(text)
    if text[body_start:first].strip():
        found.append((PREAMBLE, body_start, first))
    seen: dict[str, int] = {}
    for index, (title, start) in enumerate(starts):
        seen[title] = seen.get(title, 0) + 1
        key = title if seen[title] == 1 else f"{title} ({seen[title]})"
        end = starts[index + 1][1] if index + 1 < len(starts) else len(text)
        found.append((key, start, end))
    return found


__all__ = ["ANY", "PREAMBLE", "Edit", "FieldDomain", "apply_edit", "changed_parts", "split_document"]
