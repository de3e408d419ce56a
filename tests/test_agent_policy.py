"""The write policy (issue 18): field domains and confirmers per path, read from a policy file, bound on every row
with the policy's content hash, and enforced through the real CLI and a real MCP client session. The matching and
narrowing rules are tested as pure functions; everything else runs `engram agent ...` on a vault in tmp_path
(no build is needed: proposing and confirming read only the vault and the decisions store)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from engramrag.agent import confirmations
from engramrag.agent import policy as write_policy
from engramrag.agent.confirmations import Refused
from engramrag.agent.domains import FieldDomain
from engramrag.store import Home
from pipelines.cli import main as engram

PLAN = (
    "---\ntitle: Plan\nstatus: draft\nowner: Minji Park\n---\n# Plan\n\nKestrel runs on Orion.\n\n## Risks\n\nNone.\n"
)
POLICY = """\
confirmers: any
rules:
  - paths: ["projects/**"]
    fields: [status]
    sections: [Risks]
    confirmers: [dana]
  - paths: ["notes/*.md"]
    fields: ["*"]
    sections: ["*"]
"""


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "projects" / "kestrel").mkdir(parents=True)
    (root / "projects" / "kestrel" / "plan.md").write_text(PLAN, encoding="utf-8")
    (root / "notes").mkdir()
    (root / ".engram").mkdir()
    (root / ".engram" / "policy.yaml").write_text(POLICY, encoding="utf-8")
    return root


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home.at(tmp_path / "home")


def run(capsys: pytest.CaptureFixture, home: Home, vault: Path, *arguments: str) -> tuple[int, Any, str]:
    """`engram agent ARGS --json`: exit code, parsed output (None on failure) and stderr."""
    capsys.readouterr()
    code = engram(["agent", *arguments, "--home", str(home.root), "--vault", str(vault), "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else None, captured.err


def only_row(home: Home) -> dict[str, Any]:
    [row] = confirmations.confirmations(home)
    return row


# pure functions -------------------------------------------------------------------------------------------------


def test_rules_match_by_pattern_first_rule_wins_and_unmatched_paths_are_not_writable() -> None:
    rules = write_policy.parse(POLICY)
    domain = rules.domain_for("projects/kestrel/plan.md")
    assert (domain.fields, domain.sections, domain.confirmers) == ({"status"}, {"Risks"}, ("dana",))
    assert rules.domain_for("notes/a.md").fields == {"*"}
    with pytest.raises(Refused, match=r"no rule for notes/deep/a\.md"):
        rules.domain_for("notes/deep/a.md")  # * stays inside one folder
    with pytest.raises(Refused, match="no rule"):
        rules.domain_for("people/minji.md")
    nothing = write_policy.parse("rules:\n  - paths: ['**']\n")
    with pytest.raises(Refused, match="change nothing"):
        nothing.domain_for("a.md")
    assert write_policy.WritePolicy().domain_for("anything.md").unconstrained  # no file: as before, unconstrained
    with pytest.raises(ValueError, match="needs 'paths'"):
        write_policy.parse("rules:\n  - fields: [status]\n")


def test_a_call_narrows_the_policy_never_widens_it() -> None:
    allowed = FieldDomain(frozenset({"status", "tags"}), frozenset({"Risks"}), ("dana",))
    narrowed = write_policy.narrow(allowed, FieldDomain(frozenset({"status"})), "p.md")
    assert (narrowed.fields, narrowed.sections, narrowed.confirmers) == ({"status"}, frozenset(), ("dana",))
    with pytest.raises(Refused, match=r"field 'owner'.*never widen"):
        write_policy.narrow(allowed, FieldDomain(frozenset({"status", "owner"})), "p.md")
    with pytest.raises(Refused, match="section 'Plan'"):
        write_policy.narrow(allowed, FieldDomain(sections=frozenset({"Plan"})), "p.md")
    unconstrained = write_policy.narrow(FieldDomain(), FieldDomain(frozenset({"owner"})), "p.md")
    assert unconstrained.fields == {"owner"}


def test_the_version_names_the_policy_text_and_the_settings_beside_it() -> None:
    built_in = write_policy.WritePolicy()
    texts = {
        write_policy.policy_text(built_in, "confirm-each-write", ("learned/",), 900.0),
        write_policy.policy_text(built_in, "trusted-paths", ("learned/",), 900.0),
        write_policy.policy_text(built_in, "confirm-each-write", ("learned/",), 60.0),
        write_policy.policy_text(write_policy.parse(POLICY), "confirm-each-write", ("learned/",), 900.0),
    }
    assert len({write_policy.version_of(text) for text in texts}) == 4
    assert all(write_policy.version_of(text).startswith("policy:blake2b:") for text in texts)


# through the CLI --------------------------------------------------------------------------------------------------


def test_an_edit_outside_the_policy_domain_is_refused_and_recorded(home, vault, capsys) -> None:
    plan = vault / "projects" / "kestrel" / "plan.md"
    code, _, error = run(capsys, home, vault, "edit", "projects/kestrel/plan.md", "--field", "owner=Mallory")
    assert code == 1 and "field 'owner'" in error and "nothing was written" in error
    assert plan.read_text(encoding="utf-8") == PLAN
    refused = only_row(home)
    assert refused["status"] == "refused" and refused["operator"] == "policy:domain"
    assert refused["last_refusal"].startswith("domain: ") and "field 'owner'" in refused["last_refusal"]
    assert refused["domain"]["fields"] == ["status"] and refused["domain"]["confirmers"] == ["dana"]

    code, pending, _ = run(capsys, home, vault, "edit", "projects/kestrel/plan.md", "--field", "status=active")
    assert code == 0 and pending["status"] == "pending"
    row = confirmations.get(home, pending["confirmation_id"]).audit()
    assert row["domain"]["fields"] == ["status"] and row["domain_unconstrained"] is False
    assert row["policy_version"] == refused["policy_version"] != "agent-writes/1"
    kept = write_policy.recorded(home, row["policy_version"])
    assert kept is not None and kept["policy"]["text"] == POLICY and kept["policy"]["source"] == "vault"

    (vault / ".engram" / "policy.yaml").write_text(POLICY.replace("[status]", "[status, owner]"), encoding="utf-8")
    assert write_policy.recorded(home, row["policy_version"])["policy"]["text"] == POLICY  # reads the same later
    code, shown, _ = run(capsys, home, vault, "policy", "--version", row["policy_version"])
    assert code == 0 and shown["policy"]["text"] == POLICY


def test_narrowing_on_the_command_line(home, vault, capsys) -> None:
    code, _, error = run(capsys, home, vault, "edit", "projects/kestrel/plan.md", "--field", "status=active",
                         "--allow-field", "owner")
    assert code == 1 and "more than the write policy allows" in error
    code, _, error = run(capsys, home, vault, "edit", "notes/../projects/kestrel/plan.md", "--field", "status=x")
    assert code == 1
    (vault / "notes" / "a.md").write_text("---\nstatus: draft\nowner: Minji\n---\n# A\n", encoding="utf-8")
    code, _, error = run(capsys, home, vault, "edit", "notes/a.md", "--field", "owner=Mallory",
                         "--allow-field", "status")
    assert code == 1 and "field 'owner'" in error
    rows = [row for row in confirmations.confirmations(home) if row["relative_path"] == "notes/a.md"]
    assert [(row["status"], row["domain"]["fields"]) for row in rows] == [("refused", ["status"])]
    assert rows[0]["last_refusal"].startswith("domain: ")
    code, pending, _ = run(capsys, home, vault, "edit", "notes/a.md", "--field", "status=done",
                           "--allow-field", "status")
    assert code == 0 and pending["status"] == "pending"


def test_only_the_policys_confirmers_may_approve(home, vault, capsys) -> None:
    code, pending, _ = run(capsys, home, vault, "edit", "projects/kestrel/plan.md", "--field", "status=active")
    confirmation = pending["confirmation_id"]
    code, _, error = run(capsys, home, vault, "confirm", confirmation, "--by", "mallory")
    assert code == 1 and "only dana" in error
    assert only_row(home)["status"] == "pending"
    code, done, _ = run(capsys, home, vault, "confirm", confirmation, "--by", "dana")
    assert code == 0 and done["status"] == "executed"
    assert "status: active" in (vault / "projects" / "kestrel" / "plan.md").read_text(encoding="utf-8")


def test_trusted_paths_do_not_skip_named_confirmers(home, vault, capsys) -> None:
    code, pending, _ = run(capsys, home, vault, "edit", "projects/kestrel/plan.md", "--field", "status=active",
                           "--permission", "trusted-paths", "--trusted", "projects/")
    assert code == 0 and pending["status"] == "pending"


def test_a_policy_tightened_after_the_proposal_refuses_the_execution(home, vault, capsys) -> None:
    (vault / "notes" / "a.md").write_text("---\nstatus: draft\nowner: Minji\n---\n# A\n", encoding="utf-8")
    code, pending, _ = run(capsys, home, vault, "edit", "notes/a.md", "--field", "owner=Mallory")
    assert code == 0 and pending["status"] == "pending"
    (vault / ".engram" / "policy.yaml").write_text(POLICY.replace('fields: ["*"]', "fields: [status]"),
                                                   encoding="utf-8")
    code, _, error = run(capsys, home, vault, "confirm", pending["confirmation_id"], "--by", "dana")
    assert code == 1 and "policy changed since this was proposed" in error
    row = only_row(home)
    assert row["status"] == "failed" and row["last_refusal"].startswith("policy: ")  # the approval is spent
    assert "owner: Minji" in (vault / "notes" / "a.md").read_text(encoding="utf-8")


def test_the_homes_policy_wins_over_the_vaults(home, vault, capsys) -> None:
    home.root.mkdir(parents=True, exist_ok=True)
    (home.root / "policy.yaml").write_text("rules:\n  - paths: ['**']\n    fields: [tags]\n", encoding="utf-8")
    code, _, error = run(capsys, home, vault, "edit", "projects/kestrel/plan.md", "--field", "status=active")
    assert code == 1 and "field 'status'" in error
    code, shown, _ = run(capsys, home, vault, "policy")
    assert shown["source"] == "home" and shown["rules"][0]["fields"] == ["tags"]


def test_without_a_policy_file_rows_say_unconstrained_and_name_the_built_in_policy(home, tmp_path, capsys) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.md").write_text("---\nowner: Minji\n---\n# A\n", encoding="utf-8")
    code, first, _ = run(capsys, home, plain, "edit", "a.md", "--field", "owner=Mallory")
    code, _, _ = run(capsys, home, plain, "edit", "a.md", "--field", "owner=Mallory", "--permission",
                          "read-only")
    assert code == 1
    rows = {row["id"]: row for row in confirmations.confirmations(home)}
    pending = rows[first["confirmation_id"]]
    assert pending["domain_unconstrained"] is True
    versions = {row["policy_version"] for row in rows.values()}
    assert len(versions) == 2  # the mode is part of the policy in force
    kept = write_policy.recorded(home, pending["policy_version"])
    assert kept["policy"]["source"] == "built-in" and kept["policy"]["mode"] == "confirm-each-write"


# through a real MCP client session -----------------------------------------------------------------------------


def test_mcp_edit_is_held_to_the_policy_and_its_narrowing(home, vault) -> None:
    command = "from pipelines.cli import main; raise SystemExit(main())"
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-c", command, "mcp", "--home", str(home.root), "--vault", str(vault), "--agent", "agent:test"],
        cwd=str(Path(__file__).resolve().parents[1]),
    )

    async def session() -> None:
        async with Client(parameters) as client:
            owner = await client.call_tool("edit", {"path": "projects/kestrel/plan.md", "fields": {"owner": "X"}})
            assert owner.is_error and "refused (domain)" in owner.content[0].text
            wider = await client.call_tool("edit", {"path": "projects/kestrel/plan.md", "fields": {"status": "a"},
                                                    "allow_fields": ["status", "owner"]})
            assert wider.is_error and "never widen" in wider.content[0].text
            fine = await client.call_tool("edit", {"path": "projects/kestrel/plan.md", "fields": {"status": "a"},
                                                   "allow_fields": ["status"]})
            assert not fine.is_error

    anyio.run(session)
    rows = confirmations.confirmations(home)
    assert [row["status"] for row in rows] == ["refused", "refused", "pending"]
    assert all(row["last_refusal"].startswith("domain: ") for row in rows[:2])
    assert rows[2]["domain"]["fields"] == ["status"] and rows[2]["domain"]["sections"] == []
