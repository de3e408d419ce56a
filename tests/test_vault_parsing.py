import os
from pathlib import Path

import pytest

from engramrag.lifecycle.scan import scan_vault
from engramrag.vault.config import VaultConfig
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.markdown import content_hash, parse_document

NOTE = """---
title: Minji Park
aliases: [박민지, Park Minji]
author: Jihoon Kim
date: 2026-02-01
tags: [people, team]
---
# Minji Park

Minji works on [[Project Falcon|Falcon]] and [the pipeline](../projects/ingest.md). #lead

## Notes
Owner: Minji Park
```python
# not a heading [[NotALink]] #notatag
```
박민지는 "Project Falcon"의 리드이다.
"""


def parse(text: str | bytes, path: str = "people/minji-park.md", **config):
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return parse_document(raw, path, VaultConfig(**config))


def test_front_matter_headings_links_and_tags_with_exact_spans():
    document = parse(NOTE)
    assert document.title == "Minji Park"
    assert document.author == "Jihoon Kim"
    assert document.front_matter["date"] == "2026-02-01"  # YAML dates become strings
    assert [h.text for h in document.headings] == ["Minji Park", "Notes"]
    assert [(link.target, link.alias, link.style) for link in document.links] == [
        ("Project Falcon", "Falcon", "wiki"),
        ("../projects/ingest.md", "the pipeline", "markdown"),
    ]
    for link in document.links:
        assert document.text[link.span.start : link.span.end].startswith("[")
        assert link.span.line_start == 10
    assert {tag.name for tag in document.tags} == {"people", "team", "lead"}
    assert "NotALink" not in {link.target for link in document.links}


def test_chunks_cover_sections_with_line_spans():
    document = parse(NOTE)
    assert [chunk.heading_path for chunk in document.chunks] == [("Minji Park",), ("Minji Park", "Notes")]
    for chunk in document.chunks:
        assert document.text[chunk.span.start : chunk.span.end] == chunk.text
        first_line = document.text.splitlines()[chunk.span.line_start - 1]
        assert chunk.text.startswith(first_line.strip())


def test_long_sections_split_at_paragraphs_without_losing_text():
    body = "# Long\n\n" + "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(12))
    document = parse(body, "long.md", chunk_chars=600)
    assert len(document.chunks) > 3
    joined = "".join(chunk.text for chunk in document.chunks)
    for i in range(12):
        assert f"Paragraph {i} " in joined
    assert all(len(chunk.text) <= 1200 for chunk in document.chunks)


def test_agent_authored_notes_are_flagged():
    assert parse("# Note\n", "learned/fact.md").agent_authored
    assert parse("---\nauthor: agent:claude\n---\n# Note\n", "notes/x.md").agent_authored
    assert not parse(NOTE).agent_authored


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"---\ntitle: [unclosed\n---\n# x\n", "broken_front_matter"),
        (b"---\ntitle: x\n# never closed\n", "broken_front_matter"),
        (b"---\n- a list\n---\n", "broken_front_matter"),
        ("caf\u00e9".encode("latin-1"), "not_utf8"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00", "binary"),
        (b"x" * 5000, "too_large"),
    ],
)
def test_bad_files_are_rejected_with_a_reason_and_advice(raw: bytes, reason: str):
    with pytest.raises(DocumentRejected) as caught:
        parse(raw, "bad.md", max_file_bytes=4096)
    assert caught.value.reason == reason
    assert "bad.md" in caught.value.message


def test_crlf_and_bom_hash_like_lf():
    lf = parse("# Title\n\nbody\n")
    crlf = parse("\ufeff# Title\r\n\r\nbody\r\n".encode())
    assert lf.body_hash == crlf.body_hash == content_hash(b"# Title\r\n\r\nbody\r\n")


def test_scan_skips_hidden_folders_and_non_markdown(tmp_path: Path):
    for relative in ["a.md", "sub/b.md", ".git/c.md", ".obsidian/d.md", "sub/.hidden.md", "image.png", "e.markdown"]:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# x\n")
    found = [file.path for file in scan_vault(tmp_path, VaultConfig())]
    assert found == ["a.md", "e.markdown", "sub/b.md"]
    assert all(0 <= file.bucket < 16 for file in scan_vault(tmp_path, VaultConfig()))


def test_scan_lists_nested_notes_and_skips_linked_folders_broken_links_and_folders_that_vanish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    vault, elsewhere = tmp_path / "vault", tmp_path / "elsewhere"
    for relative in ["a.md", "deep/er/b.md", "gone/c.md", "kept/d.md"]:
        (vault / relative).parent.mkdir(parents=True, exist_ok=True)
        (vault / relative).write_text("# x\n")
    (elsewhere / "e.md").parent.mkdir(parents=True)
    (elsewhere / "e.md").write_text("# e\n")
    (vault / "linked").symlink_to(elsewhere, target_is_directory=True)  # a linked folder is not followed
    (vault / "broken.md").symlink_to(tmp_path / "missing.md")  # a link to nothing is not a document
    found = scan_vault(vault, VaultConfig())
    assert [file.path for file in found] == ["a.md", "deep/er/b.md", "gone/c.md", "kept/d.md"]
    assert [file.absolute for file in found] == [vault / file.path for file in found]
    assert [file.size_bytes for file in found] == [4, 4, 4, 4]

    listing = os.scandir

    def vanishing(folder: str):  # the folder is deleted while the vault is being listed
        if folder.endswith("gone"):
            raise FileNotFoundError(folder)
        return listing(folder)

    monkeypatch.setattr(os, "scandir", vanishing)
    assert [file.path for file in scan_vault(vault, VaultConfig())] == ["a.md", "deep/er/b.md", "kept/d.md"]
