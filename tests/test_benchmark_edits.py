"""The edits the build benchmarks make (``eval.build_benchmark``): pure, on a copy of the example vault."""

from __future__ import annotations

import shutil

from engramrag.extract.rules import RulesExtractor
from engramrag.resolve.keytable import normalise_label
from engramrag.vault.config import VaultConfig
from engramrag.vault.markdown import parse_document
from eval.build_benchmark import name_something_new
from tests.conftest import EXAMPLE_VAULT


def _labels(vault, path: str) -> set[str]:
    document = parse_document((vault / path).read_bytes(), path, VaultConfig())
    return {normalise_label(entity.label) for entity in RulesExtractor().extract(document).entities}


def test_naming_something_new_adds_labels_no_note_had(tmp_path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    before = {path.relative_to(vault).as_posix(): path.read_text(encoding="utf-8") for path in vault.rglob("*.md")}
    known = set().union(*(_labels(vault, path) for path in before))
    first = name_something_new(vault, 7)
    second = name_something_new(vault, 8)
    assert first["appended"] != second["appended"]
    edited = (vault / first["path"]).read_text(encoding="utf-8")
    assert edited.startswith(before[first["path"]].rstrip("\n")) and first["appended"] in edited
    new = _labels(vault, first["path"]) - known
    assert new, "the sentence names nothing the extractor finds new"
    word = first["appended"].split()[0].lower()
    assert any(word in label for label in new)
