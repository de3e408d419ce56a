"""Binding confirmation records: every binding refuses when it moves between issue and execution."""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from engramrag.agent import confirmations
from engramrag.agent.confirmations import Refused
from engramrag.agent.domains import Edit, FieldDomain, apply_edit
from engramrag.agent.writes import Executed, Pending, Policy, execute, propose_edit, propose_write
from engramrag.store import Home

NOTE = "---\nstatus: draft\nowner: kim\n---\n# Plan\n\nFirst draft.\n\n## Risks\n\nNone yet.\n"


@pytest.fixture
def home(tmp_path):
    return Home.at(tmp_path / "home")


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "plan.md").write_text(NOTE, encoding="utf-8")
    return root


def approved(home, vault, path="notes/new.md", content="# New\n\nbody\n", **kwargs):
    pending = propose_write(home, vault, path, content, "agent:test", **kwargs)
    assert isinstance(pending, Pending)
    confirmations.decide(home, pending.confirmation_id, True, "alice")
    return pending


def test_pending_touches_nothing_and_approved_write_lands(home, vault):
    pending = propose_write(home, vault, "notes/new.md", "# New\n", "agent:test")
    assert not (vault / "notes" / "new.md").exists()
    assert "+# New" in pending.diff
    confirmations.decide(home, pending.confirmation_id, True, "alice")
    done = execute(home, vault, pending.confirmation_id)
    assert (vault / "notes" / "new.md").read_bytes() == b"# New\n"
    assert done.operator == "alice"


def test_changed_argument_refuses(home, vault):
    pending = approved(home, vault, content="# New\n\nbody\n")
    call = {"tool": "write", "path": "notes/new.md", "content": "# New\n\nbody!\n", "agent": "agent:test"}
    with pytest.raises(Refused) as refused:
        execute(home, vault, pending.confirmation_id, arguments=call)
    assert refused.value.binding == "arguments" and "content" in str(refused.value)
    assert not (vault / "notes" / "new.md").exists()
    row = confirmations.get(home, pending.confirmation_id)
    assert row.status == confirmations.FAILED and row.last_refusal.startswith("arguments:")
    call["content"] = "# New\n\nbody\n"  # a refused execution spends the approval: no silent retry
    with pytest.raises(Refused, match="failed when it was executed"):
        execute(home, vault, pending.confirmation_id, arguments=call)
    assert not (vault / "notes" / "new.md").exists()


def test_tampered_row_arguments_refuse(home, vault):
    pending = approved(home, vault)
    with sqlite3.connect(home.decisions_path) as connection:
        connection.execute(
            "UPDATE agent_confirmations SET arguments_text = replace(arguments_text, 'body', 'evil') WHERE id = ?",
            (pending.confirmation_id,),
        )
    with pytest.raises(Refused, match="no longer match their hash"):
        execute(home, vault, pending.confirmation_id)
    assert not (vault / "notes" / "new.md").exists()


def test_symlink_swapped_refuses(home, vault, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    pending = approved(home, vault, path="notes/plan.md", content="replaced\n")
    (vault / "notes" / "plan.md").unlink()
    os.symlink(outside / "target.md", vault / "notes" / "plan.md")
    with pytest.raises(Refused) as refused:
        execute(home, vault, pending.confirmation_id)
    assert refused.value.binding == "destination"
    assert not (outside / "target.md").exists()


def test_symlinked_folder_swapped_refuses(home, vault, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    pending = approved(home, vault, path="drafts/x.md", content="x\n")
    os.symlink(outside, vault / "drafts")
    with pytest.raises(Refused, match="symlink"):
        execute(home, vault, pending.confirmation_id)
    assert list(outside.iterdir()) == []


def test_file_replaced_between_issue_and_execution_refuses(home, vault):
    pending = approved(home, vault, path="notes/plan.md", content="agent version\n")
    (vault / "notes" / "plan.md").write_text(NOTE + "a person's line\n")
    with pytest.raises(Refused, match="state was blake2b"):
        execute(home, vault, pending.confirmation_id)
    assert (vault / "notes" / "plan.md").read_text() == NOTE + "a person's line\n"


def test_file_created_where_absent_refuses(home, vault):
    pending = approved(home, vault, path="notes/new.md", content="agent\n")
    (vault / "notes" / "new.md").write_text("person\n")
    with pytest.raises(Refused) as refused:
        execute(home, vault, pending.confirmation_id)
    assert "absent" in str(refused.value)
    assert (vault / "notes" / "new.md").read_text() == "person\n"


@pytest.mark.parametrize("path", ["../escape.md", "notes/../../escape.md", "/tmp/h6-escape.md"])
def test_paths_outside_the_vault_refuse(home, vault, tmp_path, path):
    with pytest.raises(Refused) as refused:
        propose_write(home, vault, path, "x\n", "agent:test")
    assert refused.value.binding == "destination"
    assert not (tmp_path / "escape.md").exists() and not os.path.exists("/tmp/h6-escape.md")


def test_field_outside_domain_refuses_whole_write(home, vault):
    before = (vault / "notes" / "plan.md").read_bytes()
    domain = FieldDomain(fields=frozenset({"status"}))
    with pytest.raises(Refused) as refused:
        propose_edit(home, vault, "notes/plan.md", Edit(fields={"status": "done", "owner": "lee"}), "a", domain=domain)
    assert refused.value.binding == "domain" and "'owner'" in str(refused.value)
    assert (vault / "notes" / "plan.md").read_bytes() == before
    pending = propose_edit(home, vault, "notes/plan.md", Edit(fields={"status": "done"}), "a", domain=domain)
    confirmations.decide(home, pending.confirmation_id, True, "alice")
    execute(home, vault, pending.confirmation_id)
    text = (vault / "notes" / "plan.md").read_text()
    assert "status: done" in text and "owner: kim" in text and "None yet." in text


def test_section_edit_inside_domain_replaces_only_that_section(home, vault):
    domain = FieldDomain(sections=frozenset({"Risks"}))
    pending = propose_edit(home, vault, "notes/plan.md", Edit(sections={"Risks": "Budget."}), "a", domain=domain)
    confirmations.decide(home, pending.confirmation_id, True, "alice")
    execute(home, vault, pending.confirmation_id)
    assert (vault / "notes" / "plan.md").read_text() == NOTE.replace("None yet.", "Budget.")
    with pytest.raises(Refused, match="section 'Plan'"):
        propose_edit(home, vault, "notes/plan.md", Edit(sections={"Plan": "other"}), "a", domain=domain)


def test_expired_window_refuses(home, vault):
    issued = datetime.now(UTC) - timedelta(hours=2)
    pending = propose_write(home, vault, "notes/new.md", "x\n", "a", policy=Policy(window_s=60), now=issued)
    confirmations.decide(home, pending.confirmation_id, True, "alice", now=issued + timedelta(seconds=10))
    with pytest.raises(Refused) as refused:
        execute(home, vault, pending.confirmation_id)
    assert refused.value.binding == "window"
    assert not (vault / "notes" / "new.md").exists()
    assert confirmations.get(home, pending.confirmation_id).last_refusal.startswith("window:")


def test_used_confirmation_refuses_reuse(home, vault):
    pending = approved(home, vault)
    execute(home, vault, pending.confirmation_id)
    (vault / "notes" / "new.md").unlink()
    with pytest.raises(Refused) as refused:
        execute(home, vault, pending.confirmation_id)
    assert refused.value.binding == "single-use"
    assert not (vault / "notes" / "new.md").exists()


def test_refusal_is_recorded_and_cannot_execute(home, vault):
    pending = propose_write(home, vault, "notes/new.md", "x\n", "a")
    row = confirmations.decide(home, pending.confirmation_id, False, "bob")
    assert (row.status, row.operator) == ("refused", "bob") and row.decided_at
    with pytest.raises(Refused, match="refused by bob"):
        execute(home, vault, pending.confirmation_id)
    with pytest.raises(Refused, match="already decided"):
        confirmations.decide(home, pending.confirmation_id, True, "mallory")
    assert not (vault / "notes" / "new.md").exists()


def test_pending_confirmation_cannot_execute(home, vault):
    pending = propose_write(home, vault, "notes/new.md", "x\n", "a")
    with pytest.raises(Refused, match="pending"):
        execute(home, vault, pending.confirmation_id)


def test_read_only_refuses_every_write_and_records_it(home, vault):
    before = (vault / "notes" / "plan.md").read_bytes()
    policy = Policy(mode="read-only")
    with pytest.raises(Refused) as refused:
        propose_write(home, vault, "learned/x.md", "x\n", "a", policy=policy)
    assert refused.value.binding == "mode"
    with pytest.raises(Refused):
        propose_edit(home, vault, "notes/plan.md", Edit(fields={"status": "x"}), "a", policy=policy)
    assert (vault / "notes" / "plan.md").read_bytes() == before and not (vault / "learned").exists()
    rows = confirmations.confirmations(home)
    assert [(row["status"], row["operator"]) for row in rows] == [("refused", "policy:read-only")] * 2


def test_trusted_path_writes_at_once_recorded_and_checkpointed(home, vault):
    from engramrag.agent.checkpoints import checkpoints

    policy = Policy(mode="trusted-paths", trusted_paths=("drafts/",))
    done = propose_write(home, vault, "drafts/fact.md", "# Fact\n", "agent:test", policy=policy)
    assert isinstance(done, Executed)
    assert (vault / "drafts" / "fact.md").read_text() == "# Fact\n"
    [row] = confirmations.confirmations(home)
    assert (row["status"], row["operator"], row["checkpoint_id"]) == (
        "executed",
        "policy:trusted-path",
        done.checkpoint_id,
    )
    assert [c["id"] for c in checkpoints(home)] == [done.checkpoint_id]
    outside = propose_write(home, vault, "notes/other.md", "x\n", "agent:test", policy=policy)
    assert isinstance(outside, Pending) and not (vault / "notes" / "other.md").exists()


def test_audit_lists_every_bound_field_and_each_rows_own_window(home, vault):
    old = propose_write(home, vault, "notes/a.md", "a\n", "a", policy=Policy(window_s=3600, version="v1"))
    new = propose_write(
        home,
        vault,
        "notes/b.md",
        "---\nstatus: new\n---\n",
        "a",
        policy=Policy(window_s=60, version="v2"),
        domain=FieldDomain(fields=frozenset({"status"})),
    )
    confirmations.decide(home, old.confirmation_id, True, "alice")
    with sqlite3.connect(home.decisions_path) as connection:
        connection.execute(
            "INSERT INTO agent_confirmations (id, tool, agent, mode, arguments_text, arguments_hash, vault_id, "
            "relative_path, real_path, prior_state, domain, status) VALUES "
            "('legacy', 'write', 'a', 'confirm-each-write', '{}', 'h', 'v', 'p.md', '/p.md', 'absent', '{}', 'pending')"
        )
    rows = {row["id"]: row for row in confirmations.confirmations(home)}
    first, second = rows[old.confirmation_id], rows[new.confirmation_id]
    for key in (
        "arguments",
        "arguments_hash",
        "vault_id",
        "real_path",
        "prior_state",
        "domain",
        "issued_at",
        "expires_at",
        "policy_version",
        "operator",
        "decided_at",
        "status",
    ):
        assert key in first
    assert first["policy_version"] == "v1" and second["policy_version"] == "v2"
    span = datetime.fromisoformat(first["expires_at"]) - datetime.fromisoformat(first["issued_at"])
    assert span == timedelta(hours=1)
    assert first["domain_unconstrained"] is True and second["domain"]["fields"] == ["status"]
    assert second["domain_unconstrained"] is False
    assert (first["operator"], first["status"]) == ("alice", "approved") and first["decided_at"]
    assert first["arguments"]["content"] == "a\n" and first["prior_state"] == "absent"
    legacy = rows["legacy"]
    assert (legacy["issued_at"], legacy["expires_at"], legacy["policy_version"]) == ("unknown",) * 3


def test_a_field_edit_changes_only_that_line_of_the_front_matter():
    text = "---\ntitle: Plan  # the working title\ntags: [a, b]\nstatus: draft\n---\n# Plan\n\nBody.\n"
    assert apply_edit(text, Edit(fields={"status": "done"}), "p.md") == text.replace("draft", "done")
    removed = apply_edit(text, Edit(fields={"tags": None, "owner": "kim"}), "p.md")
    assert removed == "---\ntitle: Plan  # the working title\nstatus: draft\nowner: kim\n---\n# Plan\n\nBody.\n"
