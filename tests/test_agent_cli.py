"""`engram agent ...` end to end on a real vault and home: a person confirms a proposed write from the CLI, the
build takes it into the graph, a rewind restores the bytes and the next build takes it out again; learned notes
wait for `engram agent approve`; read, query and edit answer as the MCP tools do."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from engramrag.store import Home
from pipelines.build import run_build
from pipelines.cli import main as engram
from tests.conftest import build_environment

PLAN = "---\ntitle: Plan\nstatus: draft\n---\n# Plan\n\nKestrel runs on Orion Gateway.\n\n## Risks\n\nNone yet.\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[tuple[Home, Path]]:
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "plan.md").write_text(PLAN, encoding="utf-8")
    with build_environment():
        home = Home.at(tmp_path / "home")
        assert run_build(home, vault).success
        yield home, vault


def cli(capsys: pytest.CaptureFixture, home: Home, vault: Path | None, *arguments: str) -> object:
    """Run `engram agent ARGS --json` and return its JSON output."""
    where = ["--home", str(home.root)] + (["--vault", str(vault)] if vault is not None else [])
    capsys.readouterr()
    assert engram(["agent", *arguments, *where, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def live_paths(home: Home) -> set[str]:
    with home.reading():
        connection = duckdb.connect(str(home.catalog_path), read_only=True)
        try:
            return {path for (path,) in connection.execute("SELECT path FROM documents WHERE NOT gone").fetchall()}
        finally:
            connection.close()


def test_confirm_build_rewind_build(workspace: tuple[Home, Path], capsys: pytest.CaptureFixture) -> None:
    home, vault = workspace
    content = "# Falcon\n\nFalcon replaces Kestrel in June.\n"
    pending = cli(capsys, home, vault, "write", "notes/falcon.md", content)
    assert pending["status"] == "pending" and not (vault / "notes" / "falcon.md").exists()
    shown = cli(capsys, home, None, "show", pending["confirmation_id"])
    assert shown["arguments"]["content"] == content and shown["prior_state"] == "absent"
    assert shown["domain_unconstrained"] is True and shown["expires_at"] != "unknown"

    done = cli(capsys, home, vault, "confirm", pending["confirmation_id"], "--by", "dana")
    assert done["status"] == "executed" and done["operator"] == "dana"
    assert (vault / "notes" / "falcon.md").read_text(encoding="utf-8") == content
    assert run_build(home, vault).success
    assert "notes/falcon.md" in live_paths(home)

    [point] = cli(capsys, home, None, "checkpoints")
    assert point["confirmation_id"] == pending["confirmation_id"] and point["rewound_at"] is None
    rewound = cli(capsys, home, vault, "rewind", point["id"], "--by", "dana")
    assert rewound["rewound_by"] == "dana" and not (vault / "notes" / "falcon.md").exists()
    assert run_build(home, vault).success
    assert "notes/falcon.md" not in live_paths(home) and "notes/plan.md" in live_paths(home)
    assert engram(["agent", "rewind", point["id"], "--home", str(home.root), "--vault", str(vault)]) == 1
    assert "was rewound" in capsys.readouterr().err


def test_edit_inside_and_outside_its_bound_change(workspace: tuple[Home, Path], capsys: pytest.CaptureFixture) -> None:
    home, vault = workspace
    proposal = cli(capsys, home, vault, "edit", "notes/plan.md", "--field", "status=active",
                   "--section", "Risks=Orion Gateway capacity.")
    assert "-status: draft" in proposal["diff"] and "+Orion Gateway capacity." in proposal["diff"]
    (vault / "notes" / "plan.md").write_text(PLAN + "\nA person's edit.\n", encoding="utf-8")
    assert engram(["agent", "confirm", proposal["confirmation_id"], "--home", str(home.root),
                   "--vault", str(vault)]) == 1
    assert "destination" in capsys.readouterr().err
    assert (vault / "notes" / "plan.md").read_text(encoding="utf-8").endswith("A person's edit.\n")
    [row] = cli(capsys, home, None, "confirmations")
    assert row["status"] == "failed" and "moved" in row["last_refusal"]


def test_learn_waits_for_approval_then_joins_the_graph(
    workspace: tuple[Home, Path], capsys: pytest.CaptureFixture
) -> None:
    home, vault = workspace
    learned = cli(capsys, home, vault, "learn", "Kestrel hosting", "Kestrel is hosted on Orion Gateway.\n",
                  "--source", "notes/plan.md::Kestrel runs on Orion Gateway.", "--permission", "trusted-paths")
    assert learned["status"] == "executed" and learned["path"] == "learned/kestrel-hosting.md"
    assert run_build(home, vault).success
    assert learned["path"] not in live_paths(home)
    [waiting] = cli(capsys, home, vault, "notes")
    assert waiting["path"] == learned["path"] and waiting["sources"][0]["line"] == 7

    assert "Kestrel is hosted on Orion Gateway." in waiting["body"] and waiting["sources"][0]["verbatim"] is True
    cli(capsys, home, vault, "approve", learned["path"], "--by", "dana", "--hash", waiting["hash"])
    assert cli(capsys, home, vault, "notes") == []
    assert run_build(home, vault).success
    assert learned["path"] in live_paths(home)

    lines = cli(capsys, home, vault, "read", "notes/plan.md", "--lines", "7-7")
    assert lines["lines"] == [{"line": 7, "text": "Kestrel runs on Orion Gateway."}]
    rows = cli(capsys, home, vault, "query", "ASK { ?s ?p ?o }")
    assert rows["boolean"] is True
