"""What a written reference names: the one parser for "Supersedes ADR-7", "superseded by [[0012-use-stripe]]",
"D-3을 대체", "replaces [link](old.md)" and the like, shared by the vault's supersession (``revise/supersession``,
``revise/declarations``) and the decision graph over git (``gitgraph``).

A reference names, in this order: a linked file (Markdown link or wiki link, relative to the referring file,
then by file name), a record identifier written at the start of a title (``D-3``, ``ADR-7``, ``RFC 12``), a
dated title (``2024-03-04: Use Kafka``), an ADR number (``ADR-0007``, ``#7``), or a title.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable

from engramrag.extract.decision_fields import MARKDOWN_LINK, WIKI_LINK
from engramrag.extract.textutil import iso_date, normalise_label

DATED_REFERENCE = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})\s*[:\-–—]?\s*(.*)$")
ADR_NUMBER = re.compile(r"^\s*(?:ADR|RFC|DR)?[\s#\-_.]*0*(\d+)\b", re.IGNORECASE)
LINKED_FILE = re.compile(
    r"\(([^()\s]+\.(?:md|markdown))\)|\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]|([^\s()\[\]]+\.(?:md|markdown))\b",
    re.IGNORECASE,
)
# What names a record by its number: "ADR-7", "#7", "7", and a number before its title ("0002: Use gRPC").
NUMBERED_REFERENCE = re.compile(r"^\s*(ADR|RFC|DR)\b|^\s*#?\d+\s*(?:[:.)\-–—]\s*\S.*)?$", re.IGNORECASE)
LEADING_NUMBER = re.compile(r"^0*(\d+)(?=[\-_. ])")
# "D-3", "ADR-7", "RFC 12", "DR#4" at the start of a title or a reference: a record's own identifier.
RECORD_ID = re.compile(r"^\s*([A-Za-z]{1,6})[\s#\-_]+0*(\d+)(?![\d.])")


def record_id(text: str) -> str | None:
    """The identifier a title or reference starts with, normalised (``"D-03: Use Kafka"`` -> ``"d-3"``)."""
    found = RECORD_ID.match(text)
    return f"{found.group(1).lower()}-{int(found.group(2))}" if found else None


def linked_file(match: re.Match[str]) -> str:
    """The file a LINKED_FILE match names (a wiki link's note name gains no suffix)."""
    return next(group for group in match.groups() if group)


def linked_targets(text: str) -> list[str]:
    """The targets of the Markdown and wiki links in a record's text, web addresses left out."""
    targets = [m.group("target") for m in MARKDOWN_LINK.finditer(text)]
    targets += [m.group("target").strip() for m in WIKI_LINK.finditer(text)]
    return [t for t in targets if "://" not in t and not t.startswith(("mailto:", "#"))]


class ReferenceIndex:
    """Every record seen (decision records of a vault or of any version of a repository, or whole notes), to
    resolve the references records write.

    A file name names a record only when the file held exactly one record in its latest version read (an ADR);
    old file names keep naming what they last held, so a link written before a rename still resolves. A number
    ("ADR-0002") names the file that has it now: after ``git mv 0002-x.md 0003-x.md`` and a new 0002, it names
    the new one (``retire`` the paths that left the tree)."""

    def __init__(self) -> None:
        self._files: dict[str, frozenset[str]] = {}
        self._by_title: dict[str, set[str]] = defaultdict(set)
        self._by_date: dict[str, set[str]] = defaultdict(set)
        self._by_stem: dict[str, set[str]] = defaultdict(set)
        self._by_number: dict[int, set[str]] = defaultdict(set)
        self._by_id: dict[str, set[str]] = defaultdict(set)
        self._retired: set[str] = set()  # paths no longer in the tree (renamed away or deleted)

    def add_version(self, path: str, records: Iterable[tuple[str, str, str | None]]) -> None:
        """The records ``(id, title, decided_on)`` of one version of ``path``."""
        ids = []
        self._retired.discard(path)
        for decision_id, title, decided_on in records:
            ids.append(decision_id)
            self._by_title[normalise_label(title)].add(decision_id)
            if identifier := record_id(title):
                self._by_id[identifier].add(decision_id)
            if decided_on:
                self._by_date[decided_on].add(decision_id)
        self._files[path] = frozenset(ids)
        stem = _stem(path)
        self._by_stem[stem].add(path)
        number = LEADING_NUMBER.match(stem)
        if number:
            self._by_number[int(number.group(1))].add(path)

    def retire(self, path: str) -> None:
        """``path`` left the tree: a number or a name resolves to it only when no file in the tree has it."""
        if path in self._files:
            self._retired.add(path)

    @property
    def paths(self) -> set[str]:
        return set(self._files)

    def resolve(self, reference: str, from_path: str) -> set[str]:
        """The records a reference names: a linked file (relative to the referring file, then by file name), a
        dated title, an ADR number, or a title; nothing when it names nothing known."""
        folder = posixpath.dirname(from_path)
        for link in LINKED_FILE.finditer(reference):
            target = linked_file(link).split("#", 1)[0]
            exact = posixpath.normpath(posixpath.join(folder, target)) if not target.startswith("/") else target[1:]
            if one := self._single(exact):
                return {one}
            by_stem = self._singles(self._present(self._by_stem.get(_stem(target), ())))
            if len(by_stem) == 1:
                return by_stem
        identifier = record_id(reference)
        if identifier and (named := self._by_id.get(identifier)):
            return set(named)
        dated = DATED_REFERENCE.match(reference)
        if dated and iso_date(dated.group(1)):
            title = normalise_label(dated.group(2))
            titled = self._titled(title) if title else None
            found = {i for i in self._by_date.get(dated.group(1), ()) if titled is None or i in titled}
            if found:
                return found
        number = ADR_NUMBER.match(reference)
        if number and not dated and NUMBERED_REFERENCE.match(reference):
            paths = self._present(self._by_number.get(int(number.group(1)), set()))
            found = self._singles(paths)
            near = self._singles(p for p in paths if posixpath.dirname(p) == folder)
            if found:
                return near or found
        title = normalise_label(reference)
        return self._titled(title) if title else set()

    def related(self, decision_id: str, path: str, text: str, references: Iterable[str] = ()) -> set[str]:
        """The other records a record names: through its supersession references, and through its links
        (``ADR: [ADR-0004](adr/0004-....md)`` in a DECISIONS.md entry is the same decision recorded twice)."""
        found: set[str] = set()
        for written in (*references, *linked_targets(text)):
            found |= self.resolve(written, path)
        return found - {decision_id}

    def _titled(self, title: str) -> set[str]:
        """Records with this title, or held alone by a file of this name."""
        found = self._by_title.get(title, set()) | self._by_title.get(re.sub(r"^\d+\.\s*", "", title), set())
        return found | self._singles(self._by_stem.get(title, ()))

    def _present(self, paths: Iterable[str]) -> list[str]:
        """The paths still in the tree, or all of them when none is (a reference to a record since removed)."""
        paths = list(paths)
        present = [path for path in paths if path not in self._retired]
        return present or paths

    def _single(self, path: str) -> str | None:
        ids = self._files.get(path)
        return next(iter(ids)) if ids and len(ids) == 1 else None

    def _singles(self, paths: Iterable[str]) -> set[str]:
        return {one for path in paths if (one := self._single(path))}


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return normalise_label(name.rsplit(".", 1)[0] if "." in name else name)
