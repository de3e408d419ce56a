"""Checkpoints and rewind: exact bytes back, created files gone, a person's later edit protected."""

from __future__ import annotations

import pytest

from engramrag.agent import confirmations
from engramrag.agent.checkpoints import checkpoints, rewind
from engramrag.agent.confirmations import Refused
from engramrag.agent.writes import execute, propose_write
from engramrag.store import Home

ORIGINAL = "---\ntitle: 계획\n---\r\n# Plan\r\n\r\nbytes with CRLF and 한글\r\n".encode()


@pytest.fixture
def home(tmp_path):
    return Home.at(tmp_path / "home")


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "plan.md").write_bytes(ORIGINAL)
    return root


def write(home, vault, path, content):
    pending = propose_write(home, vault, path, content, "agent:test")
    confirmations.decide(home, pending.confirmation_id, True, "alice")
    return execute(home, vault, pending.confirmation_id)


def test_rewind_restores_exact_bytes_and_is_recorded(home, vault):
    done = write(home, vault, "notes/plan.md", "agent rewrite\n")
    assert (vault / "notes" / "plan.md").read_bytes() == b"agent rewrite\n"
    [checkpoint] = checkpoints(home)
    assert checkpoint["id"] == done.checkpoint_id and checkpoint["rewound_at"] is None
    assert checkpoint["files"][0]["path"] == "notes/plan.md"
    result = rewind(home, vault, done.checkpoint_id, "alice")
    assert (vault / "notes" / "plan.md").read_bytes() == ORIGINAL
    assert result["rewound_by"] == "alice"
    [after] = checkpoints(home)
    assert after["rewound_by"] == "alice" and after["rewound_at"] and after["rewind_forced"] is False
    with pytest.raises(Refused, match="was rewound"):
        rewind(home, vault, done.checkpoint_id, "alice")


def test_rewind_removes_a_file_the_agent_created(home, vault):
    done = write(home, vault, "drafts/new.md", "# New\n")
    assert (vault / "drafts" / "new.md").exists()
    rewind(home, vault, done.checkpoint_id, "alice")
    assert not (vault / "drafts" / "new.md").exists()
    assert (vault / "notes" / "plan.md").read_bytes() == ORIGINAL


def test_rewind_refuses_after_a_person_edited_the_file_unless_forced(home, vault):
    done = write(home, vault, "notes/plan.md", "agent rewrite\n")
    (vault / "notes" / "plan.md").write_text("agent rewrite\nplus a person's line\n")
    with pytest.raises(Refused) as refused:
        rewind(home, vault, done.checkpoint_id, "alice")
    assert refused.value.binding == "changed-since"
    assert (vault / "notes" / "plan.md").read_text() == "agent rewrite\nplus a person's line\n"
    assert checkpoints(home)[0]["rewound_at"] is None
    rewind(home, vault, done.checkpoint_id, "alice", force=True)
    assert (vault / "notes" / "plan.md").read_bytes() == ORIGINAL
    assert checkpoints(home)[0]["rewind_forced"] is True


def test_identical_prior_bytes_share_one_blob(home, vault):
    first = write(home, vault, "notes/a.md", "same\n")
    second = write(home, vault, "notes/a.md", "other\n")
    third = write(home, vault, "notes/b.md", "same\n")
    blobs = [path for path in (home.root / "checkpoints").rglob("*") if path.is_file()]
    assert len(blobs) == 1 and blobs[0].read_bytes() == b"same\n"
    assert {first.checkpoint_id, second.checkpoint_id, third.checkpoint_id} == {c["id"] for c in checkpoints(home)}
