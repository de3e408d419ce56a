"""Learned notes under attack (issue 18): every write into the agent folder passes learn's checks, an approval binds
the bytes the person was shown and re-checks the quotes, near-duplicate titles are caught, and an agent's note
naming a person as author records a claim. Through `engram agent ...` on a vault in tmp_path; title folding and
the claimed-author rule are tested as pure functions, and one small build checks what the catalog records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from engramrag.agent import confirmations, note_review
from engramrag.agent.titles import similar_titles, title_key
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.markdown import parse_document
from pipelines.build import run_build
from pipelines.cli import main as engram
from tests.conftest import build_environment

PLAN = "# Plan\n\nKestrel runs on Orion Gateway since the May load test.\n"
QUOTE = "Kestrel runs on Orion Gateway"
TRUSTED = ("--permission", "trusted-paths")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "plan.md").write_text(PLAN, encoding="utf-8")
    return root


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home.at(tmp_path / "home")


def run(capsys: pytest.CaptureFixture, home: Home, vault: Path, *arguments: str, as_json: bool = True) -> tuple[
    int, Any, str
]:
    capsys.readouterr()
    flags = ["--json"] if as_json else []
    code = engram(["agent", *arguments, "--home", str(home.root), "--vault", str(vault), *flags])
    captured = capsys.readouterr()
    out = json.loads(captured.out) if code == 0 and as_json else captured.out
    return code, out, captured.err


def note(title: str, sources: list[Any], author: str | None = "agent:test", body: str = "What was learned.") -> str:
    front: dict[str, Any] = {"title": title, "status": "pending"}
    if author is not None:
        front["author"] = author
    front["sources"] = sources
    return f"---\n{yaml.safe_dump(front, sort_keys=False, allow_unicode=True)}---\n\n{body}\n"


def learned(capsys, home, vault, title: str = "Kestrel hosting") -> str:
    code, result, error = run(capsys, home, vault, "learn", title, "Kestrel is hosted on Orion.\n",
                              "--source", f"notes/plan.md::{QUOTE}", "--agent", "agent:test", *TRUSTED)
    assert code == 0, error
    return result["path"]


# pure functions ----------------------------------------------------------------------------------------------


def test_titles_fold_case_articles_stems_homoglyphs_and_korean_particles() -> None:
    for left, right in [
        ("The Tern", "Tern"), ("TERNS", "tern"), ("An Orion gateway", "orion gateways"),
        ("T\u0435rn", "Tern"),  # Cyrillic е
        ("Te\u200brn", "Tern"),  # zero-width space
        ("ＴＥＲＮ", "tern"),  # full-width, NFKC
        ("테른은", "테른"), ("테른의 이동", "테른 이동"), ("카탈로그를 이전", "카탈로그 이전"),
        ("Orion gateway latency", "Orion gateway latency (p95, May load test)"),
    ]:
        assert similar_titles(left, right), (left, right)
    for left, right in [("Tern migration", "How the Tern moved"), ("Alpha project", "Beta project"),
                        ("Orion gateway", "Orion gateway latency")]:
        assert not similar_titles(left, right), (left, right)
    assert title_key("The Running Terns") == "runn tern"


def test_an_agents_note_naming_a_person_as_author_records_a_claim() -> None:
    text = b"---\ntitle: X\nauthor: Alice Kim\n---\n# X\n\nBody.\n"
    agents = parse_document(text, "learned/x.md", VaultConfig())
    assert agents.author is None and agents.agent_authored
    assert agents.front_matter["claimed_author"] == "Alice Kim" and "author" not in agents.front_matter
    persons = parse_document(text, "notes/x.md", VaultConfig())
    assert persons.author == "Alice Kim" and not persons.agent_authored
    own = parse_document(text.replace(b"Alice Kim", b"agent:claude"), "learned/x.md", VaultConfig())
    assert own.author == "agent:claude"


# writes into the agent folder ----------------------------------------------------------------------------------


def test_write_into_the_agent_folder_passes_learns_checks_in_trusted_mode(home, vault, capsys) -> None:
    attacks = {
        "invented-quote": (note("Kestrel facts", [{"path": "notes/plan.md",
                                                   "quote": "Kestrel was retired in 2020 by the board"}]), "quote"),
        "missing-source": (note("Kestrel facts", [{"path": "notes/gone.md", "quote": QUOTE}]), "source"),
        "no-quote": (note("Kestrel facts", ["notes/plan.md"]), "quote"),
        "one-char-quote": (note("Kestrel facts", [{"path": "notes/plan.md", "quote": "K"}]), "quote"),
        "person-author": (note("Kestrel facts", [{"path": "notes/plan.md", "quote": QUOTE}], author="Alice"),
                          "author"),
        "no-sources": ("# Kestrel facts\n\nKestrel was retired.\n", "author"),
    }
    for name, (content, binding) in attacks.items():
        code, _, error = run(capsys, home, vault, "write", f"learned/{name}.md", content, "--agent", "agent:test",
                             *TRUSTED)
        assert code == 1, name
        assert not (vault / "learned" / f"{name}.md").exists(), name
        row = [row for row in confirmations.confirmations(home) if row["relative_path"] == f"learned/{name}.md"]
        assert [(r["status"], r["operator"]) for r in row] == [("refused", f"policy:{binding}")], name
        assert row[0]["last_refusal"].startswith(f"{binding}: "), (name, row[0]["last_refusal"])
    good = note("Kestrel facts", [{"path": "notes/plan.md", "quote": QUOTE, "line": 3}])
    code, done, _ = run(capsys, home, vault, "write", "learned/good.md", good, "--agent", "agent:test", *TRUSTED)
    assert code == 0 and done["status"] == "executed"
    wrong_line = note("Kestrel dates", [{"path": "notes/plan.md", "quote": QUOTE, "line": 1}])
    code, _, error = run(capsys, home, vault, "write", "learned/wrong.md", wrong_line, "--agent", "agent:test",
                         *TRUSTED)
    assert code == 1 and "starts on line 3, not on line 1" in error


def test_an_edit_of_a_learned_note_cannot_slip_in_an_invented_quote(home, vault, capsys) -> None:
    path = learned(capsys, home, vault)
    before = (vault / path).read_bytes()
    invented = "[{path: notes/plan.md, quote: 'Kestrel moves to Nova Cloud next quarter'}]"
    code, _, error = run(capsys, home, vault, "edit", path, "--field", f"sources={invented}", "--agent",
                         "agent:test", *TRUSTED)
    assert code == 1 and "does not appear verbatim" in error
    assert (vault / path).read_bytes() == before
    refused = confirmations.confirmations(home)[-1]
    assert refused["tool"] == "edit" and refused["last_refusal"].startswith("quote: ")
    code, _, error = run(capsys, home, vault, "edit", path, "--field", "author=Minji Park", "--agent", "agent:test",
                         *TRUSTED)
    assert code == 1 and "claimed_author" in error
    assert confirmations.confirmations(home)[-1]["last_refusal"].startswith("author: ")


def test_near_duplicate_titles_are_refused_through_the_cli(home, vault, capsys) -> None:
    first = learned(capsys, home, vault, "Tern")
    for title in ("The Tern", "TERNS", "T\u0435rn", "Te\u200brn"):
        code, _, error = run(capsys, home, vault, "learn", title, "Body.\n", "--source", f"notes/plan.md::{QUOTE}",
                             *TRUSTED)
        assert code == 1 and "similar title already exists" in error and first in error, title
    copy = note("the terns", [{"path": "notes/plan.md", "quote": QUOTE}])
    code, _, error = run(capsys, home, vault, "write", "learned/copy.md", copy, "--agent", "agent:test", *TRUSTED)
    assert code == 1 and "similar title" in error
    assert confirmations.confirmations(home)[-1]["last_refusal"].startswith("duplicate-title: ")
    code, _, error = run(capsys, home, vault, "learn", "Quotes", "Body.\n", "--source", "notes/plan.md::Kestrel",
                         *TRUSTED)
    assert code == 1 and "shorter than 20 characters" in error
    code, _, error = run(capsys, home, vault, "learn", "Quotes", "Body.\n", "--source", "notes/plan.md", *TRUSTED)
    assert code == 1 and "no source carries a quote" in error


# approving what was shown --------------------------------------------------------------------------------------


def test_an_approval_binds_the_bytes_shown_not_the_bytes_on_disk(home, vault, capsys) -> None:
    path = learned(capsys, home, vault)
    code, [shown], _ = run(capsys, home, vault, "notes")
    assert shown["body"] == (vault / path).read_text(encoding="utf-8")
    assert shown["sources"][0]["verbatim"] is True and shown["quotes_ok"] is True
    code, text, _ = run(capsys, home, vault, "notes", as_json=False)
    assert f"hash {shown['hash']}" in text and "| Kestrel is hosted on Orion." in text
    assert "verbatim in the source now" in text and f"--hash {shown['hash']}" in text

    rewritten = (vault / path).read_text(encoding="utf-8").replace("hosted on Orion", "hosted on Nova Cloud")
    code, done, error = run(capsys, home, vault, "write", path, rewritten, "--agent", "agent:test", *TRUSTED)
    assert code == 0 and done["status"] == "executed", error  # the agent rewrites it after it was listed

    code, _, error = run(capsys, home, vault, "approve", path, "--by", "dana", "--hash", shown["hash"])
    assert code == 1 and "changed since it was shown" in error and "look at it again" in error
    assert "status: pending" in (vault / path).read_text(encoding="utf-8")
    [refusal] = note_review.refusals(home, path)
    assert refusal["reason"].startswith("changed-since: ") and refusal["shown_state"] == shown["hash"]
    assert refusal["operator"] == "dana" and refusal["current_state"] != shown["hash"]

    code, _, error = run(capsys, home, vault, "approve", path, "--by", "dana", "--hash", "")
    assert code == 1 and "pass --hash" in error
    with pytest.raises(SystemExit):
        engram(["agent", "approve", path, "--by", "dana", "--home", str(home.root), "--vault", str(vault)])

    code, [again], _ = run(capsys, home, vault, "notes")
    assert "Nova Cloud" in again["body"]
    code, approved, _ = run(capsys, home, vault, "approve", path, "--by", "dana", "--hash", again["hash"][:20])
    assert code == 0 and approved["prior_state"] == again["hash"]


def test_an_approval_rechecks_the_quotes_against_the_sources_now(home, vault, capsys) -> None:
    path = learned(capsys, home, vault)
    (vault / "notes" / "plan.md").write_text("# Plan\n\nKestrel moved to Nova Cloud.\n", encoding="utf-8")
    code, [shown], _ = run(capsys, home, vault, "notes")
    assert shown["sources"][0]["verbatim"] is False and shown["quotes_ok"] is False
    code, text, _ = run(capsys, home, vault, "notes", as_json=False)
    assert "NOT verbatim in the source now" in text and "cannot be approved" in text
    code, _, error = run(capsys, home, vault, "approve", path, "--by", "dana", "--hash", shown["hash"])
    assert code == 1 and "not verbatim in the source now" in error
    [refusal] = note_review.refusals(home, path)
    assert refusal["reason"].startswith("quote: ")


def test_an_agent_cannot_name_a_person_as_author_anywhere(home, vault, capsys) -> None:
    plan = vault / "notes" / "plan.md"
    code, _, error = run(capsys, home, vault, "write", "notes/claim.md", "---\nauthor: Minji Park\n---\n# Claim\n",
                         "--agent", "agent:test")
    assert code == 1 and "claimed_author" in error and not (vault / "notes" / "claim.md").exists()
    code, _, error = run(capsys, home, vault, "edit", "notes/plan.md", "--field", "author=Minji Park")
    assert code == 1 and plan.read_text(encoding="utf-8") == PLAN
    rows = confirmations.confirmations(home)
    assert [(row["status"], row["operator"]) for row in rows] == [("refused", "policy:author")] * 2
    assert all(row["last_refusal"].startswith("author: ") for row in rows)
    code, pending, _ = run(capsys, home, vault, "edit", "notes/plan.md", "--field", "claimed_author=Minji Park")
    assert code == 0 and pending["status"] == "pending"


def test_the_build_records_a_claimed_author_not_the_persons_authorship(home, vault) -> None:
    (vault / "learned").mkdir()
    (vault / "learned" / "kestrel.md").write_text(
        "---\ntitle: Kestrel notes\nauthor: Minji Park\n---\n# Kestrel notes\n\nKestrel runs on Orion.\n",
        encoding="utf-8",
    )
    with build_environment():
        assert run_build(home, vault).success
    with home.reading():
        connection = duckdb.connect(str(home.catalog_path), read_only=True)
        try:
            author, agent_authored, front = connection.execute(
                "SELECT author, agent_authored, front_matter FROM documents WHERE path = 'learned/kestrel.md'"
            ).fetchone()
        finally:
            connection.close()
    assert author is None and agent_authored is True
    assert json.loads(front)["claimed_author"] == "Minji Park"
