"""A link in the vault that leads out of it is refused by name, never read (issue 19): `outside-link.md ->
/etc/passwd` must not become a document an agent's search can print. Links that stay inside the vault and
lead to a document are read once, under the document's real path. Through the real command line: `engram
build`, `engram status --json`, `engram search --json`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engramrag.lifecycle.scan import scan_vault
from engramrag.vault.config import VaultConfig
from tests.conftest import build_environment
from tests.test_llm_lifecycle import run_cli

SECRET = "zanzibarquokka secret token 7f3e"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("links")
    vault = root / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "kept.md").write_text("# Kept\n\nThe ledger service runs nightly.\n", encoding="utf-8")
    outside = root / "private" / "secret.md"
    outside.parent.mkdir()
    outside.write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    os.symlink(outside, vault / "outside-link.md")
    os.symlink(vault / "notes" / "kept.md", vault / "alias.md")  # a link to a document: read once, as kept.md
    home = root / "home"
    with build_environment():
        code, out = run_cli("build", "--vault", str(vault), "--home", str(home), "--extractor", "rules",
                            "--embedder", "hash")
    assert code == 0, out
    return vault, home, out


def test_the_scan_names_where_an_outside_link_leads(built) -> None:
    vault, _, _ = built
    files = {file.path: file for file in scan_vault(vault, VaultConfig())}
    assert files["outside-link.md"].outside == str((vault.parent / "private" / "secret.md").resolve())
    assert "alias.md" not in files and files["notes/kept.md"].outside is None


def test_an_outside_link_is_refused_with_what_to_do(built) -> None:
    _, home, out = built
    with build_environment():
        code, status = run_cli("status", "--home", str(home), "--json")
    assert code == 0
    refused = {item["path"]: item for item in json.loads(status)["rejected_documents"]}
    assert set(refused) == {"outside-link.md"}
    message = refused["outside-link.md"]["message"]
    assert "outside the vault, so it is not read" in message and "remove the link" in message
    assert "1 rejected" in out or "rejected" in out


def test_an_agent_search_cannot_reach_the_linked_file(built) -> None:
    _, home, _ = built
    with build_environment():
        code, out = run_cli("search", SECRET, "--home", str(home), "--json")
    assert code == 0
    found = json.loads(out)
    assert "outside-link.md" not in [hit["doc"] for hit in found["results"]]
    assert SECRET not in json.dumps(found["results"])  # (the query and the context's heading echo it)
    assert found["no_relevant_memory"] is True
    with build_environment():
        code, out = run_cli("search", "ledger service nightly", "--home", str(home), "--json")
    assert [hit["doc"] for hit in json.loads(out)["results"]] == ["notes/kept.md"]
