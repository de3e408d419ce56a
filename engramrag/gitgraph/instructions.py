"""Agent instruction files and their versions as dated section spans.

An instruction file tells coding agents how to work: AGENTS.md (at any depth), CLAUDE.md, GEMINI.md,
.cursorrules, .cursor/rules/*.mdc, .github/copilot-instructions.md and .github/instructions/*.instructions.md.
One at folder D governs the files under D (``scope``; "" is the whole repository). Every version is split into
sections at its headings, each with its exact lines, so "what was the agent told when it wrote this commit?"
is answered by the sections of the versions in force then: the instruction files of the commit's tree (or its
first parent's, for what the agent read before writing), matched here by blob id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engramrag.vault.markdown import HEADING, normalised_text

PER_FOLDER = frozenset({"AGENTS.md", "AGENTS.override.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", ".cursorrules"})
REPOSITORY_WIDE = re.compile(r"^\.github/(?:copilot-instructions\.md|instructions/[^/]+\.instructions\.md)$")
TOOL_FOLDER = re.compile(r"^(?:(?P<parent>.+)/)?(?:\.cursor/rules/[^/]+\.mdc?|\.claude/CLAUDE\.md)$")
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
PREAMBLE = "(preamble)"


@dataclass(frozen=True)
class Section:
    section: str  # the heading path, "Agent guide > Testing"; PREAMBLE for text before the first heading
    line_start: int
    line_end: int
    text: str  # the exact lines, heading included


def is_instruction_file(path: str) -> bool:
    return instruction_scope(path) is not None


def instruction_scope(path: str) -> str | None:
    """The folder an instruction file governs ("" for the whole repository), or None for other files."""
    if REPOSITORY_WIDE.match(path):
        return ""
    tool = TOOL_FOLDER.match(path)
    if tool:
        return tool.group("parent") or ""
    folder, _, name = path.rpartition("/")
    return folder if name in PER_FOLDER else None


def governs(scope: str, path: str) -> bool:
    """Whether an instruction file of ``scope`` applies to ``path``."""
    return not scope or path == scope or path.startswith(scope.rstrip("/") + "/")


def sections(raw: bytes) -> list[Section]:
    """The sections of one version: split at every heading outside fenced code, trailing blank lines left
    out; a file without headings (a plain .cursorrules) is one preamble section."""
    text = normalised_text(raw.decode("utf-8", "replace"))
    lines = text.split("\n")
    masked = FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    starts: list[tuple[int, int, str]] = []  # (line, level, heading)
    for match in HEADING.finditer(masked):
        starts.append((masked.count("\n", 0, match.start()) + 1, len(match.group(1)), match.group(2).strip()))
    found: list[Section] = []
    first = starts[0][0] if starts else len(lines) + 1
    _append(found, PREAMBLE, 1, first - 1, lines)
    trail: list[tuple[int, str]] = []
    for index, (line, level, heading) in enumerate(starts):
        trail = [(lv, name) for lv, name in trail if lv < level] + [(level, heading)]
        end = starts[index + 1][0] - 1 if index + 1 < len(starts) else len(lines)
        _append(found, " > ".join(name for _, name in trail), line, end, lines)
    return found


def _append(found: list[Section], name: str, start: int, end: int, lines: list[str]) -> None:
    while end >= start and not lines[end - 1].strip():
        end -= 1
    while start <= end and not lines[start - 1].strip():
        start += 1
    if start <= end:
        found.append(Section(name, start, end, "\n".join(lines[start - 1 : end])))
