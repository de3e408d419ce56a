"""Time through the real lifecycle: document dates in the catalog and the graph, every declaration form applied
without review (and a person's rejection undoing it), a property's version chain across dated notes (one Korean,
one naming the subject by an alias), current-state and as-of questions through `engram search --json`, labels in
results and context, `engram history`, and a rebuild after the newest note goes back to an old value."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import duckdb
import pytest

from assets.partitions import BUCKET_COUNT
from engramrag.lifecycle.timeline import OUTCOME_KEY, refresh_timeline
from engramrag.ontology.quadstore import QuadStore, parse_nquads
from engramrag.ontology.vocab import document_graphs
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from pipelines.build import run_build
from pipelines.cli import main

VAULT = {
    "services/billing-service.md": """---
updated: 2024-01-10
author: Minji Park
aliases: [결제 서비스]
---
# Billing service

The billing service sends the monthly invoices.

Owner: Minji Park
Vendor: Stripe
""",
    "meetings/2024-03-04-billing-sync.md": """# Billing sync

- Billing service owner: Daniel Cho
- Notes: handover went fine.
""",
    "meetings/2024-06-10-결제-회의.md": """# 결제 회의

- 결제 서비스 담당자: 이서연
- Billing service vendor: Adyen
""",
    "adr/0007-use-kafka-for-events.md": """# ADR-7: Use Kafka for events

Date: 2024-02-01

## Status

Superseded by ADR-12

## Decision

We use Kafka for the event bus.
""",
    "adr/0012-use-nats-for-events.md": """# ADR-12: Use NATS for events

Date: 2024-05-01

## Status

Accepted

## Decision

We use NATS for the event bus.
""",
    "adr/0003-host-on-heroku.md": """---
status: superseded by [ADR-0004](0004-host-on-fly.md)
date: 2024-01-15
---
# Host the app on Heroku

## Context and Problem Statement

Where do we host the web app?

## Decision Outcome

Chosen option: Heroku.
""",
    "adr/0004-host-on-fly.md": """---
status: accepted
date: 2024-04-15
---
# Host the app on Fly

## Context and Problem Statement

Where do we host the web app?

## Decision Outcome

Chosen option: Fly, because Heroku's free tier ended.
""",
    "DECISIONS.md": """# Decisions

## D-3: Keep the nightly export in CSV (2024-02-01)
Status: accepted

## D-5: Move the nightly export to Parquet (2024-05-01)
Status: accepted
D-3을 대체

## D-6: Review exports weekly (2024-06-01)
Status: accepted
""",
    "runbooks/old-on-call-plan.md": """---
date: 2024-02-01
superseded_by: "[[On-call rota]]"
---
# Old on-call plan

Pager rotation by spreadsheet; Daniel Cho carries the pager.
""",
    "runbooks/on-call-rota.md": """---
date: 2024-05-05
---
# On-call rota

The rota lives in PagerDuty now; Seoyeon Lee carries the pager this month.
""",
    "notes/2024-06-20-escalation.md": """# Escalation

This replaces [[Escalation draft]]. Page the incident commander first.
""",
    "notes/escalation-draft.md": """---
date: 2024-03-01
---
# Escalation draft

Page whoever is around.
""",
}


def _write(vault: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        target = vault / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _build(home: Home, vault: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        for name in ("ENGRAM_HOME", "ENGRAM_VAULT", "ENGRAM_EXTRACTOR", "ENGRAM_EMBEDDER", "DAGSTER_HOME"):
            patch.delenv(name, raising=False)
        outcome = run_build(home, vault)
    assert outcome.success, outcome.errors


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Home, Path]]:
    root = tmp_path_factory.mktemp("timeline")
    _write(root / "vault", VAULT)
    home = Home.at(root / "home")
    _build(home, root / "vault")
    yield home, root / "vault"


def rows(home: Home, sql: str, parameters: list | None = None) -> list[tuple]:
    with duckdb.connect(str(home.catalog_path), read_only=True) as catalog:
        return catalog.execute(sql, parameters or []).fetchall()


def cli(*args: str) -> tuple[int, str]:
    output = io.StringIO()
    with redirect_stdout(output):
        code = main(list(args))
    return code, output.getvalue()


def search_json(home: Home, question: str, *extra: str) -> dict:
    code, output = cli("search", question, "--home", str(home.root), "--json", *extra)
    assert code == 0
    return json.loads(output)


def test_every_document_has_a_date_and_its_source_in_the_catalog_and_the_graph(built) -> None:
    home, _ = built
    dates = dict((path, (day, source)) for path, day, source in rows(
        home, "SELECT path, doc_date, date_source FROM documents WHERE NOT gone"))  # fmt: skip
    assert dates["services/billing-service.md"] == ("2024-01-10", "front_matter:updated")
    assert dates["meetings/2024-03-04-billing-sync.md"] == ("2024-03-04", "file_name")
    assert dates["adr/0007-use-kafka-for-events.md"] == ("2024-02-01", "date_field")
    assert dates["notes/2024-06-20-escalation.md"] == ("2024-06-20", "file_name")
    with QuadStore.opened(home.quads_path, read_only=True) as store:
        found = {
            (str(row["path"].value), str(row["date"].value), str(row["source"].value))
            for row in store.query(
                "PREFIX dcterms: <http://purl.org/dc/terms/> PREFIX engram: <https://engramrag.org/ns#> "
                "SELECT ?path ?date ?source WHERE { GRAPH ?g { ?doc engram:path ?path ; dcterms:date ?date ; "
                "engram:dateSource ?source } }"
            )
        }
    assert ("services/billing-service.md", "2024-01-10", "front_matter:updated") in found
    assert len(found) == len(VAULT)


def test_each_declaration_form_is_applied_without_review_attributed_to_its_author(built) -> None:
    home, _ = built
    decisions = {(earlier, later): (reason, by) for earlier, later, reason, by in rows(
        home, "SELECT earlier_title, later_title, reason, decided_by FROM supersessions")}  # fmt: skip
    assert decisions[("Use Kafka for events", "Use NATS for events")][0] == "declared"  # Nygard status section
    assert decisions[("Host the app on Heroku", "Host the app on Fly")][0] == "declared"  # MADR front matter
    assert decisions[("D-3: Keep the nightly export in CSV", "D-5: Move the nightly export to Parquet")][0] == (
        "declared"
    )  # DECISIONS.md, in Korean
    notes = {(earlier, later): (reason, form, by) for earlier, later, reason, form, by in rows(
        home, "SELECT earlier_path, later_path, reason, form, decided_by FROM document_supersessions "
        "WHERE form <> 'property'")}  # fmt: skip
    assert notes[("runbooks/old-on-call-plan.md", "runbooks/on-call-rota.md")][:2] == ("declared", "front_matter")
    assert notes[("notes/escalation-draft.md", "notes/2024-06-20-escalation.md")][:2] == ("declared", "in_text")
    _, output = cli("review", "list", "supersession", "--home", str(home.root), "--json")
    kinds = {(pair["earlier_key"], pair["kind"]) for pair in json.loads(output)["pairs"]}
    assert ("document:runbooks/old-on-call-plan.md", "declared") in kinds


def test_a_property_version_chain_runs_across_three_dated_notes_one_korean_one_by_alias(built) -> None:
    home, _ = built
    code, output = cli("history", "결제 서비스", "--property", "owner", "--home", str(home.root), "--json")
    assert code == 0
    values = json.loads(output)["values"]
    assert [(v["value"], v["date"], v["current"]) for v in values] == [
        ("Minji Park", "2024-01-10", False), ("Daniel Cho", "2024-03-04", False), ("이서연", "2024-06-10", True),
    ]
    assert values[0]["quote"] == "Owner: Minji Park" and values[0]["why"] == "replaced on 2024-03-04"
    code, output = cli("history", "Nothing Such", "--home", str(home.root))
    assert code == 1


def test_current_state_questions_put_the_latest_note_first_in_both_languages(built) -> None:
    home, _ = built
    for question in ("Who owns the billing service now?", "지금 결제 서비스 담당자는?"):
        answer = search_json(home, question)
        assert answer["temporal"]["intent"] == "current"
        ranked = [hit["doc"] for hit in answer["results"]]
        assert ranked[0] == "meetings/2024-06-10-결제-회의.md", (question, ranked)
        stale = next(hit for hit in answer["results"] if hit["doc"] == "services/billing-service.md")
        assert any(label["reason"] == "later_value" and label["by_doc"] == "meetings/2024-06-10-결제-회의.md"
                   for label in stale["superseded_by"])  # fmt: skip
        assert stale["valid_from"] == {"date": "2024-01-10", "source": "front_matter:updated"}


def test_as_of_questions_get_the_state_as_it_stood_then(built) -> None:
    home, _ = built
    answer = search_json(home, "Who owned the billing service in March 2024?")
    assert answer["temporal"] == {"intent": "as_of", "as_of": "2024-03-31", "cue": "March 2024"}
    assert answer["results"][0]["doc"] == "meetings/2024-03-04-billing-sync.md"
    answer = search_json(home, "Who owns the billing service?", "--as-of", "2024-02-15")
    assert answer["results"][0]["doc"] == "services/billing-service.md"
    assert not answer["results"][0]["superseded_by"]  # nothing had replaced it by then


def test_a_replaced_note_is_labelled_in_results_and_context_and_stays_below_its_successor(built) -> None:
    home, _ = built
    answer = search_json(home, "What replaced ADR-7?")
    ranked = [hit["doc"] for hit in answer["results"]]
    assert ranked.index("adr/0012-use-nats-for-events.md") < ranked.index("adr/0007-use-kafka-for-events.md")
    assert "SUPERSEDED by adr/0012-use-nats-for-events.md (2024-05-01)" in answer["context"]
    _, output = cli("search", "Who carries the pager?", "--home", str(home.root))
    assert "SUPERSEDED by runbooks/on-call-rota.md (2024-05-05)" in output


def test_a_rejection_wins_and_editing_the_newest_note_back_flips_what_is_current(built, tmp_path: Path) -> None:
    _, vault = built
    copy = tmp_path / "vault"
    shutil.copytree(vault, copy)
    home = Home.at(tmp_path / "home")
    _build(home, copy)
    for left, right in (
        ("document:runbooks/old-on-call-plan.md", "document:runbooks/on-call-rota.md"),
        ("adr/0007-use-kafka-for-events.md#use kafka for events",
         "adr/0012-use-nats-for-events.md#use nats for events"),
    ):
        code, _ = cli("review", "decide", "supersession", left, right, "reject", "--by", "tester",
                      "--home", str(home.root))  # fmt: skip
        assert code == 0
    meeting = copy / "meetings/2024-06-10-결제-회의.md"
    meeting.write_text(meeting.read_text(encoding="utf-8").replace("이서연", "Minji Park"), encoding="utf-8")
    _build(home, copy)
    # The edited note was extracted again (its graphs rewritten): the timeline's quads in them were written back.
    recorded = [row[0] for row in rows(home, "SELECT nquad FROM timeline_quads")]
    meeting_graphs = {str(graph) for graph in document_graphs("meetings/2024-06-10-결제-회의.md")}
    with QuadStore.opened(home.quads_path, read_only=True) as store:
        quads = parse_nquads(recorded)
        assert [quad for quad in quads if not store.contains(quad)] == []
        assert any(quad.graph_name.value in meeting_graphs for quad in quads)
    pairs = {(earlier, later) for earlier, later in rows(
        home, "SELECT earlier_path, later_path FROM document_supersessions")}  # fmt: skip
    assert ("runbooks/old-on-call-plan.md", "runbooks/on-call-rota.md") not in pairs
    assert rows(home, "SELECT count(*) FROM supersessions WHERE earlier_title = 'Use Kafka for events'") == [(0,)]
    code, output = cli("history", "billing service", "--property", "owner", "--home", str(home.root), "--json")
    current = {(v["doc"], v["value"]) for v in json.loads(output)["values"] if v["current"]}
    assert current == {
        ("services/billing-service.md", "Minji Park"), ("meetings/2024-06-10-결제-회의.md", "Minji Park")
    }
    answer = search_json(home, "Who owns the billing service now?")
    page = next(hit for hit in answer["results"] if hit["doc"] == "services/billing-service.md")
    assert not [label for label in page["superseded_by"] if label.get("property") == "owner"]
    assert "SUPERSEDED by adr/0012" not in search_json(home, "What replaced ADR-7?")["context"]
    # The rebuild read again only the edited note; reading every note again (the consistency pass) changes nothing.
    tables = "SELECT * FROM property_values ORDER BY ALL", "SELECT * FROM document_supersessions ORDER BY ALL"
    before = [rows(home, sql) for sql in tables]
    config = VaultConfig(bucket_count=BUCKET_COUNT)
    everything = refresh_timeline(home, config, derive_all=True)
    assert everything.notes_derived == len(VAULT) and everything.notes_kept == 0
    assert [rows(home, sql) for sql in tables] == before
    kept = refresh_timeline(home, config)
    assert kept.notes_derived == 0 and kept.notes_kept == len(VAULT)
    assert [rows(home, sql) for sql in tables] == before
    # Nothing read changed: this process's last outcome is taken, and only while the catalog holds what it wrote.
    assert kept.outcome_reused and kept.quads_added == 0
    with duckdb.connect(str(home.catalog_path)) as catalog:  # as another process writing the tables would
        catalog.execute("UPDATE meta SET value = 'another writer' WHERE key = ?", [OUTCOME_KEY])
    again = refresh_timeline(home, config)
    assert not again.outcome_reused and again.notes_derived == 0
    assert [rows(home, sql) for sql in tables] == before
    assert refresh_timeline(home, config).outcome_reused
