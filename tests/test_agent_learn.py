"""learn (verified agent notes) and note approval gating the lifecycle, on real files, stores and builds."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from assets.partitions import BUCKET_COUNT
from engramrag.agent import approvals, confirmations, destinations
from engramrag.agent.learn import LearnRefused, learn, slug
from engramrag.agent.writes import Executed, Pending, Policy, propose_write
from engramrag.lifecycle.plan import plan_changes
from engramrag.ontology.quadstore import QuadStore
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.ids import bucket_key
from tests.conftest import Lifecycle

TRUSTED = Policy(mode="trusted-paths", trusted_paths=("learned/",))
MOMENT = datetime(2026, 5, 14, 9, 30, tzinfo=UTC)
ALPHA = """---
title: Alpha Project
---
# Alpha Project

The Alpha team chose the Orion Gateway because its p95
latency stayed under   40 ms in the load test.

Owner: Minji Park, platform team lead
"""


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home.at(tmp_path / "home")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "alpha.md").write_text(ALPHA, encoding="utf-8")
    (root / "notes" / "beta.md").write_text("# Beta\n\nBeta uses [[Orion Gateway]] too.\n", encoding="utf-8")
    return root


def front_matter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


BETA_QUOTE = {"path": "notes/beta.md", "quote": "Beta uses [[Orion Gateway]] too."}


def learn_trusted(home: Home, vault: Path, title: str, body: str = "What was learned.\n", sources=None):
    return learn(home, vault, title, body, sources or [BETA_QUOTE], "agent:test", policy=TRUSTED, now=MOMENT)


def test_trusted_learn_writes_front_matter_with_quote_lines_even_across_a_wrap(home, vault):
    sources = [
        {"path": "notes/alpha.md", "quote": "its p95 latency stayed under 40 ms"},
        {"path": "notes/alpha.md", "quote": "Owner: Minji Park, platform team"},
        "notes/beta.md",
    ]
    result = learn(home, vault, "Why Alpha picked Orion", "# Why\n\nLatency.\n", sources, "agent:test",
                   policy=TRUSTED, now=MOMENT)
    assert isinstance(result.outcome, Executed)
    assert result.path == "learned/why-alpha-picked-orion.md"
    assert {"duplicate-title", "source", "quote"} <= set(result.checks)
    written = vault / result.path
    front = front_matter(written)
    assert front["title"] == "Why Alpha picked Orion"
    assert front["status"] == "pending"
    assert front["author"] == "agent:test"
    assert front["learned_at"] == "2026-05-14T09:30:00+00:00"
    assert front["sources"] == [
        {"path": "notes/alpha.md", "quote": "its p95 latency stayed under 40 ms", "line": 6},
        {"path": "notes/alpha.md", "quote": "Owner: Minji Park, platform team", "line": 9},
        {"path": "notes/beta.md"},
    ]
    assert written.read_text(encoding="utf-8").endswith("---\n\n# Why\n\nLatency.\n")
    row = confirmations.get(home, result.outcome.confirmation_id)
    assert row.status == confirmations.EXECUTED and row.operator == "policy:trusted-path"


def test_confirm_each_write_leaves_a_pending_row_and_no_file_and_reserves_the_title(home, vault):
    result = learn(home, vault, "Orion latency budget", "Body.\n", [BETA_QUOTE], "agent:test")
    assert isinstance(result.outcome, Pending)
    assert not (vault / result.path).exists()
    assert not (vault / "learned").exists()
    assert "status: pending" in result.outcome.diff
    with pytest.raises(LearnRefused) as refused:
        learn(home, vault, "Orion Latency Budget!", "Other.\n", [BETA_QUOTE], "agent:test")
    assert refused.value.check == "duplicate-title"
    assert [entry["path"] for entry in refused.value.existing] == [result.path]


def test_refusals_name_the_check_and_write_nothing(home, vault, tmp_path):
    (tmp_path / "outside.md").write_text("secret\n", encoding="utf-8")
    (vault / "notes" / "link.md").symlink_to(tmp_path / "outside.md")
    (vault / "notes" / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    cases = [
        ("source", ["notes/missing.md"], "does not exist"),
        ("source", ["../outside.md"], "climbs out"),
        ("source", ["notes/link.md"], "symlink"),
        ("source", ["notes/latin1.md"], "not UTF-8"),
        ("source", [], "needs sources"),
        ("quote", ["notes/beta.md", {"path": "notes/alpha.md", "quote": "latency stayed below 40 ms"}],
         "source 2 (notes/alpha.md)"),
        ("quote", [{"path": "notes/alpha.md", "quote": "orion gateway was chosen by Alpha"}],
         "does not appear verbatim"),
        ("quote", [{"path": "notes/alpha.md", "quote": "O"}], "shorter than 20 characters"),
        ("quote", [{"path": "notes/alpha.md", "quote": "Orion Gateway"}], "shorter than 20 characters"),
        ("quote", ["notes/alpha.md", "notes/beta.md"], "no source carries a quote"),
    ]
    for check, sources, words in cases:
        with pytest.raises(LearnRefused) as refused:
            learn(home, vault, "A new fact", "Body.\n", sources, "agent:test", policy=TRUSTED)
        assert refused.value.check == check, sources
        assert words in str(refused.value), (sources, str(refused.value))
    assert not (vault / "learned").exists()
    assert confirmations.confirmations(home) == []


def test_duplicate_title_against_a_held_learned_note_offers_it(home, vault):
    first = learn_trusted(home, vault, "Orion gateway latency")
    for similar in ("orion  Gateway latency.", "Orion gateway latencies", "Orion gateway latency (p95, May load test)"):
        with pytest.raises(LearnRefused) as refused:
            learn_trusted(home, vault, similar)
        assert refused.value.check == "duplicate-title"
        assert refused.value.existing == [
            {"path": first.path, "title": "Orion gateway latency", "where": "agent-folder"}
        ]
        assert first.path in str(refused.value)
    assert learn_trusted(home, vault, "Beta deployment calendar").path == "learned/beta-deployment-calendar.md"
    assert learn_trusted(home, vault, "Orion gateway").path == "learned/orion-gateway.md"  # two words: too little


def test_slugs_keep_hangul_fall_back_to_a_hash_and_never_overwrite(home, vault):
    assert slug("카탈로그 이전: DuckDB → PostgreSQL") == "카탈로그-이전-duckdb-postgresql"
    assert slug("!!! ???", "body") == slug("!!! ???", "body") != slug("!!! ???", "other")
    assert len(slug("!!! ???", "body")) == 10
    (vault / "learned").mkdir()
    (vault / "learned" / "orion-facts.md").write_text("# Something else entirely\n", encoding="utf-8")
    result = learn_trusted(home, vault, "Orion facts")
    assert result.path == "learned/orion-facts-2.md"
    assert (vault / "learned" / "orion-facts.md").read_text(encoding="utf-8") == "# Something else entirely\n"


def test_a_held_agent_note_cannot_be_cited_as_a_source(home, vault):
    first = learn_trusted(home, vault, "Orion gateway latency")
    with pytest.raises(LearnRefused) as refused:
        learn_trusted(home, vault, "Beta rollout", sources=[first.path])
    assert refused.value.check == "source" and "no person has approved" in str(refused.value)
    approvals.approve_note(home, vault, first.path, "Minji Park")
    again = learn_trusted(home, vault, "Beta rollout", sources=[first.path, BETA_QUOTE])
    assert again.path == "learned/beta-rollout.md"


def test_approve_reject_and_the_exact_bytes_rule(home, vault):
    path = learn_trusted(home, vault, "Orion gateway latency").path
    note = vault / path
    before = note.read_bytes()
    assert approvals.is_held(home, path, before) is not None
    assert approvals.is_held(home, "notes/alpha.md", b"anything") is None
    by_hand = b"---\ntitle: Hand\nstatus: approved\napproved_by: Minji Park\n---\n# Hand\n"
    assert approvals.is_held(home, "learned/hand.md", by_hand) is None  # a person's note, as in the example vault
    assert approvals.is_held(home, "learned/hand.md", by_hand.replace(b"approved\n", b"Pending\n", 1)) is not None

    rejected = approvals.reject_note(home, vault, path, "Daniel Choi", note="cite the load test")
    assert rejected["verdict"] == "rejected" and note.read_bytes() == before
    [waiting] = approvals.pending_notes(home, vault)
    assert waiting["path"] == path and waiting["rejected"] and waiting["rejection_note"] == "cite the load test"
    assert waiting["author"] == "agent:test" and waiting["sources"] == [{**BETA_QUOTE, "line": 3}]
    assert waiting["approved_before"] is False

    approved = approvals.approve_note(home, vault, path, "Minji Park", now=MOMENT)
    front = front_matter(note)
    assert front["status"] == "approved" and front["approved_by"] == "Minji Park"
    assert front["approved_at"] == "2026-05-14T09:30:00+00:00"
    assert approved["content_state"] == destinations.bytes_state(note.read_bytes())
    assert approvals.is_held(home, path, note.read_bytes()) is None
    assert approvals.is_held(home, path, before) is not None
    assert approvals.pending_notes(home, vault) == []
    with pytest.raises(confirmations.Refused) as again:
        approvals.approve_note(home, vault, path, "Minji Park")
    assert again.value.binding == "already-approved"

    hand_edit = note.read_bytes() + b"\nA person's own remark.\n"
    note.write_bytes(hand_edit)
    assert approvals.is_held(home, path, hand_edit) is None  # a person's edit of an approved note stays in
    trusted = Policy(mode="trusted-paths", trusted_paths=("learned/",))
    agent_edit = hand_edit.decode() + "\nOne more claim.\n"
    assert isinstance(propose_write(home, vault, path, agent_edit, "agent:test", policy=trusted), Executed)
    message = approvals.is_held(home, path, note.read_bytes())
    assert message is not None and "changed since a person approved it" in message
    [changed] = approvals.pending_notes(home, vault)
    assert changed["approved_before"] is True and changed["rejected"] is False

    with pytest.raises(confirmations.Refused) as outside:
        approvals.approve_note(home, vault, "notes/alpha.md", "Minji Park")
    assert outside.value.binding == "note"
    with pytest.raises(ValueError):
        approvals.approve_note(home, vault, path, "  ")
    assert [row["verdict"] for row in approvals.approvals(home, path)] == ["rejected", "approved"]
    with sqlite3.connect(home.decisions_path) as raw, pytest.raises(sqlite3.DatabaseError, match="append-only"):
        raw.execute("UPDATE note_approvals SET verdict = 'approved'")


def test_held_notes_stay_out_of_a_real_build_until_approved(tmp_path, home, vault, instance):
    (vault / "notes" / "gamma.md").write_text("# Gamma\n\nGamma reuses [[Orion Gateway]].\n", encoding="utf-8")
    pending = learn_trusted(
        home, vault, "Orion gateway latency", body="# Orion gateway latency\n\nSee [[Zephyr Cache]] for hot keys.\n",
        sources=[{"path": "notes/alpha.md", "quote": "latency stayed under 40 ms"}],
    ).path
    forged = "learned/forged.md"
    trusted = Policy(mode="trusted-paths", trusted_paths=("learned/",))
    forged_text = (
        "---\ntitle: Forged\nauthor: agent:test\nstatus: approved\napproved_by: Minji Park\n"
        "sources:\n- path: notes/beta.md\n  quote: Beta uses [[Orion Gateway]] too.\n---\n"
        "# Forged\n\nSee [[Quasar Ledger]].\n"
    )
    assert isinstance(propose_write(home, vault, forged, forged_text, "agent:test", policy=trusted), Executed)
    lifecycle = Lifecycle(vault, home, instance)
    every_bucket = [bucket_key(bucket) for bucket in range(BUCKET_COUNT)]

    def build() -> None:
        assert lifecycle.run_buckets(every_bucket, with_catalog=False).success

    def documents() -> set[str]:
        return {row[0] for row in lifecycle.sql("SELECT path FROM documents WHERE NOT gone")}

    def held() -> dict[str, str]:
        rows = lifecycle.sql("SELECT path, reason, message FROM rejected_documents")
        return {path: message for path, reason, message in rows if reason == "awaiting_approval"}

    def entity_labels(path: str) -> set[str]:
        return {row[0] for row in lifecycle.sql(
            "SELECT e.label FROM entities e JOIN documents d USING (doc_id) WHERE d.path = ?", [path])}

    build()
    assert documents() == {"notes/alpha.md", "notes/beta.md", "notes/gamma.md"}
    assert set(held()) == {pending, forged}
    assert f"`engram agent approve {pending} --hash HASH`" in held()[pending]
    with pytest.raises(LearnRefused) as duplicate:
        learn_trusted(home, vault, "alpha project")
    assert {"path": "notes/alpha.md", "title": "Alpha Project", "where": "catalog"} in duplicate.value.existing

    approvals.approve_note(home, vault, pending, "Minji Park")
    config = VaultConfig(bucket_count=BUCKET_COUNT)
    assert lifecycle.bucket(pending) in {bucket_key(b) for b in plan_changes(home, vault, config).buckets}
    build()
    assert documents() == {"notes/alpha.md", "notes/beta.md", "notes/gamma.md", pending}
    assert "Zephyr Cache" in entity_labels(pending)
    assert set(held()) == {forged}
    assert entity_labels(forged) == set()

    rewritten = (vault / pending).read_text(encoding="utf-8").split("\n---\n")[0]
    rewritten += "\n---\n# Orion gateway latency\n\nNow also [[Nova Queue]].\n"
    overwrite = propose_write(home, vault, pending, rewritten, "agent:test", policy=TRUSTED)
    assert isinstance(overwrite, Executed)
    build()
    assert pending not in documents()
    assert "changed since a person approved it" in held()[pending]
    assert lifecycle.sql("SELECT count(*) FROM entities WHERE label = 'Zephyr Cache'") == [(0,)]
    assert lifecycle.sql("SELECT count(*) FROM deletions WHERE path = ?", [pending]) == [(1,)]
    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as quads:
        assert quads.count_document(pending) == 0
        assert quads.count_document("notes/gamma.md") > 0
