"""What a file that cannot be a note is told (no build): the reason and what to do, in the words a person needs."""

from __future__ import annotations

import pytest

from engramrag.vault.config import VaultConfig
from engramrag.vault.errors import DocumentRejected
from engramrag.vault.markdown import parse_document


def rejection(raw: bytes, config: VaultConfig | None = None) -> DocumentRejected:
    with pytest.raises(DocumentRejected) as refused:
        parse_document(raw, "notes/n.md", config or VaultConfig())
    return refused.value


def test_a_note_with_a_stray_nul_byte_is_told_where_and_how_to_remove_it() -> None:
    refused = rejection(b"# Note\n\nline two\x00here\n")
    assert refused.reason == "binary"
    assert "1 NUL byte(s), the first on line 3 (byte 16)" in refused.message
    assert "tr -d '\\000' < notes/n.md" in refused.message and "keep only" not in refused.message


def test_a_binary_file_is_told_it_is_not_a_note() -> None:
    refused = rejection(bytes(range(256)) * 4)
    assert refused.reason == "binary" and "not a Markdown note" in refused.message
    assert "sources folder" in refused.message


def test_other_refusals_keep_their_reasons() -> None:
    assert rejection("é".encode("latin-1")).reason == "not_utf8"
    assert rejection(b"x" * 20, VaultConfig(max_file_bytes=10)).reason == "too_large"


@pytest.mark.parametrize(("raw", "said"), [(b"", "0 bytes"), (b"\xef\xbb\xbf \n\r\n\t\n", "only whitespace")])
def test_an_empty_file_is_told_it_has_nothing_to_read(raw: bytes, said: str) -> None:
    refused = rejection(raw)
    assert refused.reason == "empty" and said in refused.message
    assert "write the note" in refused.message and "delete the file" in refused.message


def test_a_note_of_front_matter_only_is_still_a_note() -> None:
    document = parse_document(b"---\ntitle: Placeholder\n---\n", "notes/n.md", VaultConfig())
    assert document.title == "Placeholder"
