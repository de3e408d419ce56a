"""The model proposer and the independent verifier of supersessions (issue 17), end to end: a small vault of dated
decisions built twice by ``run_build`` against a real chat server on 127.0.0.1 (``tests/llm_server.py``) that plays
both roles, told apart by their system prompts. The first build has the server configured but not the setting
(nothing may reach the server); the second turns on ``ENGRAM_LLM_SUPERSESSION``.

Pairs of the vault (each proposed by the machine from the titles, none declared except the alerts):

- catalog: the verifier confirms with a quote from each side (one across a line break): it counts, like a
  declared pair (``supersessions`` row, ``supersedes`` edge in the later note's analysis graph);
- latency: the verifier rejects it; its reason is kept and the pair waits for a person;
- dashboard: the verifier "confirms" with a later quote that is not in the text: not counted, ``quote-verbatim``;
- backups: the verifier confirms, but a person rejected the pair before the build: the person wins;
- alerts: declared by its author (a Supersedes field): applied as before and never sent to the model.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from dashboards.stores import OPERATOR_KEY
from engramrag.decisions.store import SUPERSESSION, DecisionsStore
from engramrag.extract.llm.config import LLMConfig
from engramrag.lifecycle.revision import apply_supersessions
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import PROV, analysis_graph_iri, document_iri
from engramrag.revise import proposer, verifier
from engramrag.revise.model_review import review_proposals
from engramrag.revise.model_review_config import ModelReviewConfig
from engramrag.revise.supersession import CURATED_BY, SUPERSEDES, VERDICT, DecisionSide, SupersessionProposal
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from pipelines.build import run_build
from pipelines.cli import main as engram
from tests.conftest import build_environment
from tests.llm_server import LLMServer, Reply, server_error

APP = Path(__file__).resolve().parents[1] / "dashboards" / "app.py"
MODEL = "fake-supersession-model"
REVIEWER = "Dana Reviewer"

DECISIONS = """---
title: Decision log
author: Minji Park
date: 2026-01-05
---

# Decision log

## 2026-01-10: Catalog storage engine DuckDB

Status: Accepted
Date: 2026-01-10

Decision: Store the catalog in a single DuckDB file on a persistent volume.

## 2026-01-15: Search latency target p95 300 ms

Status: Accepted
Date: 2026-01-15

Decision: The search API's SLO is p95 below 300 ms during business hours.

## 2026-01-20: Dashboard deployment method Compose

Status: Accepted
Date: 2026-01-20

Decision: The dashboard runs from a Docker Compose file on the build server.

## 2026-01-25: Nightly backup storage location NAS

Status: Accepted
Date: 2026-01-25

Decision: Nightly backups of the catalog are copied to the office NAS.

## 2026-02-01: Alert channel Slack

Status: Accepted
Date: 2026-02-01

Decision: Monitoring alerts go to the ops channel in Slack.

## 2026-03-01: Catalog storage engine PostgreSQL

Status: Accepted
Date: 2026-03-01

Decision: Move the catalog to PostgreSQL so that several workers
can write at once. The DuckDB file is retired.

## 2026-04-01: Search latency target p95 120 ms

Status: Accepted
Date: 2026-04-01

Decision: The ranking endpoint's SLO is p95 below 120 ms; the other endpoints keep their targets.

## 2026-05-01: Dashboard deployment method Helm

Status: Accepted
Date: 2026-05-01

Decision: The dashboard is deployed to the cluster with a Helm chart.

## 2026-05-10: Nightly backup storage location object store

Status: Accepted
Date: 2026-05-10

Decision: Nightly backups of the catalog go to object storage instead of the office NAS.

## 2026-06-01: Alert channel PagerDuty

Status: Accepted
Date: 2026-06-01
Supersedes: 2026-02-01: Alert channel Slack

Decision: Monitoring alerts page the on-call engineer through PagerDuty.
"""

CATALOG = ("DECISIONS.md#catalog storage engine duckdb", "DECISIONS.md#catalog storage engine postgresql")
LATENCY = ("DECISIONS.md#search latency target p95 300 ms", "DECISIONS.md#search latency target p95 120 ms")
DASHBOARD = ("DECISIONS.md#dashboard deployment method compose", "DECISIONS.md#dashboard deployment method helm")
BACKUPS = ("DECISIONS.md#nightly backup storage location nas",
           "DECISIONS.md#nightly backup storage location object store")  # fmt: skip
ALERTS = ("DECISIONS.md#alert channel slack", "DECISIONS.md#alert channel pagerduty")
INFERRED = {CATALOG, LATENCY, DASHBOARD, BACKUPS}

LATENCY_REASON = "The later target covers only the ranking endpoint; the earlier target still holds for the rest."
# Per later decision title: what the verifier answers (the proposer proposes every pair, quoting both sides).
VERIFIER_ANSWERS: dict[str, dict[str, Any]] = {
    "Catalog storage engine PostgreSQL": {
        "verdict": "confirm",
        "earlier_quote": "Store the catalog in a single DuckDB file",
        "later_quote": "Move the catalog to PostgreSQL so that several workers can write at once.",  # a line break
        "reason": "The catalog moves from DuckDB to PostgreSQL and the DuckDB file is retired.",
    },
    "Search latency target p95 120 ms": {
        "verdict": "reject",
        "earlier_quote": "The search API's SLO is p95 below 300 ms",
        "later_quote": "the other endpoints keep their targets",
        "reason": LATENCY_REASON,
    },
    "Dashboard deployment method Helm": {
        "verdict": "confirm",
        "earlier_quote": "The dashboard runs from a Docker Compose file",
        "later_quote": "The dashboard moved to Kubernetes for good.",  # not in the later text
        "reason": "Helm replaces Docker Compose.",
    },
    "Nightly backup storage location object store": {
        "verdict": "confirm",
        "earlier_quote": "copied to the office NAS",
        "later_quote": "go to object storage instead of the office NAS",
        "reason": "The backups move from the NAS to object storage.",
    },
}
PROPOSER_REASON = "PROPOSER-ONLY REASONING: the later one replaces the earlier one."


def first_sentence(text: str) -> str:
    """The decision line of a section, as the proposer quotes it."""
    line = next(line for line in text.splitlines() if line.startswith("Decision: "))
    return line.removeprefix("Decision: ").split(".")[0]


def play_model(request: dict[str, Any]) -> dict[str, Any]:
    """The proposer and the verifier, told apart by the system prompt."""
    system, user = request["messages"][0]["content"], request["messages"][1]["content"]
    document = json.loads(user)
    later_title = document["later"]["title"]
    if system == proposer.SYSTEM_PROMPT:
        return {"supersedes": True, "earlier_quote": first_sentence(document["earlier"]["text"]),
                "later_quote": first_sentence(document["later"]["text"]), "reason": PROPOSER_REASON}  # fmt: skip
    assert system == verifier.SYSTEM_PROMPT, system
    return VERIFIER_ANSWERS[later_title]


@dataclass
class Built:
    home: Home
    server: LLMServer
    requests_without_flag: int
    queue_without_flag: dict[str, Any]
    supersessions_without_flag: list[tuple]
    metadata_without_flag: dict[str, Any]
    metadata: dict[str, Any]  # what the revision asset recorded in the build with the setting


def catalog_rows(home: Home, query: str) -> list[tuple]:
    with home.reading():
        connection = duckdb.connect(str(home.catalog_path), read_only=True)
        try:
            return connection.execute(query).fetchall()
        finally:
            connection.close()


def review_list(capsys: pytest.CaptureFixture[str], home: Home, *extra: str) -> dict[str, Any]:
    """`engram review list supersession --json` (pending pairs only unless ``--all``)."""
    capsys.readouterr()
    assert engram(["review", "list", "supersession", "--home", str(home.root), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def review_text(capsys: pytest.CaptureFixture[str], home: Home) -> str:
    capsys.readouterr()
    assert engram(["review", "list", "supersession", "--home", str(home.root)]) == 0
    return capsys.readouterr().out


def applied_pairs(home: Home) -> set[tuple[str, str]]:
    return set(catalog_rows(home, "SELECT earlier_key, later_key FROM supersessions"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("verifier")
    vault = root / "vault"
    vault.mkdir()
    (vault / "DECISIONS.md").write_text(DECISIONS, encoding="utf-8")
    home = Home.at(root / "home")
    with LLMServer(responder=play_model) as server, build_environment(), pytest.MonkeyPatch.context() as patch:
        for name in ("ENGRAM_LLM_SUPERSESSION", "ENGRAM_LLM_JUDGE", "ENGRAM_LLM_API_KEY"):
            patch.delenv(name, raising=False)
        patch.setenv("ENGRAM_LLM_BASE_URL", server.url)  # a server is configured, the setting is not
        patch.setenv("ENGRAM_LLM_MODEL", MODEL)
        patch.setenv("ENGRAM_LLM_MAX_RETRIES", "0")
        patch.setenv("ENGRAM_LLM_TIMEOUT_S", "20")
        first = run_build(home, vault)
        assert first.success
        requests_without_flag = len(server.requests)
        queue_without_flag = _queue_json(home)
        supersessions_without_flag = catalog_rows(home, "SELECT earlier_key, later_key, reason FROM supersessions")
        # A person rejects the backups pair before the model ever sees it.
        DecisionsStore.for_home(home).decide(SUPERSESSION, *BACKUPS, "reject", REVIEWER, note="not the same backups")
        patch.setenv("ENGRAM_LLM_SUPERSESSION", "1")
        second = run_build(home, vault)  # the vault is unchanged: the setting alone makes the step run again
        assert second.success, second.errors
        yield Built(home, server, requests_without_flag, queue_without_flag, supersessions_without_flag,
                    first.asset_metadata["accepted_supersessions"], second.asset_metadata["accepted_supersessions"])


def _queue_json(home: Home) -> dict[str, Any]:
    """`engram review list supersession --all --json`, captured without capsys (in the module fixture)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert engram(["review", "list", "supersession", "--all", "--home", str(home.root), "--json"]) == 0
    return json.loads(out.getvalue())


def pairs_of(listing: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(row["earlier_key"], row["later_key"]): row for row in listing["pairs"]}


def test_without_the_setting_nothing_reaches_the_server_and_proposals_wait_for_a_person(built: Built) -> None:
    assert built.requests_without_flag == 0
    server = {"ENGRAM_LLM_BASE_URL": "http://127.0.0.1:9/v1", "ENGRAM_LLM_MODEL": "m"}
    assert not ModelReviewConfig.from_env(server).active and ModelReviewConfig.from_env(server).settings() == "off"
    assert not ModelReviewConfig.from_env({"ENGRAM_LLM_SUPERSESSION": "1"}).active  # no server configured
    pairs = pairs_of(built.queue_without_flag)
    assert INFERRED | {ALERTS} <= set(pairs)
    for pair in INFERRED:
        assert pairs[pair]["kind"] == "decision" and pairs[pair]["verification"] is None
    assert pairs[ALERTS]["kind"] == "declared"
    assert built.supersessions_without_flag == [(*ALERTS, "declared")]  # only the author's declaration counts
    assert built.metadata_without_flag["model_enabled"] is False and built.metadata_without_flag["model_asked"] == 0


def test_the_model_is_asked_about_inferred_pairs_only_with_independent_calls(built: Built) -> None:
    proposals = [r for r in built.server.requests if r["messages"][0]["content"] == proposer.SYSTEM_PROMPT]
    verifications = [r for r in built.server.requests if r["messages"][0]["content"] == verifier.SYSTEM_PROMPT]
    assert len(built.server.requests) == len(proposals) + len(verifications)
    assert len(proposals) == len(verifications) == len(INFERRED)  # the declared alerts pair is never asked
    asked_about = {json.loads(r["messages"][1]["content"])["later"]["title"] for r in proposals}
    assert "Alert channel PagerDuty" not in asked_about
    for request in verifications:
        assert len(request["messages"]) == 2  # a fresh conversation: its own instructions and the pair
        document = json.loads(request["messages"][1]["content"])
        assert set(document) == {"claim", "earlier", "later"}
        assert "supersedes" in document["claim"] and PROPOSER_REASON not in request["messages"][1]["content"]
    assert proposer.SYSTEM_PROMPT != verifier.SYSTEM_PROMPT
    counts = {name: built.metadata[f"model_{name}"] for name in
              ("asked", "proposed", "confirmed", "rejected", "unverifiable", "not_proposed", "failed")}  # fmt: skip
    assert counts == {"asked": 4, "proposed": 4, "confirmed": 2, "rejected": 1, "unverifiable": 1, "not_proposed": 0,
                      "failed": 0}  # fmt: skip
    assert built.metadata["verified"] == 1  # the other confirmed pair was rejected by a person


def test_a_confirmed_proposal_with_verbatim_quotes_counts_like_a_declared_one(
    built: Built, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = catalog_rows(built.home, "SELECT earlier_key, later_key, reason, decided_by FROM supersessions")
    assert sorted(rows) == sorted([(*ALERTS, "declared", "Minji Park"), (*CATALOG, "verified", f"model:{MODEL}")])
    # The edge is in the later note's analysis graph (a machine's proposal), curated by the model as a software
    # agent; the declared one is in the note's own graph (what its author wrote).
    sparql = (f"SELECT ?g ?verdict ?type WHERE {{ GRAPH ?g {{ ?later {SUPERSEDES} ?earlier . "
              f"?node {VERDICT} ?verdict ; {CURATED_BY} ?curator . ?curator a ?type }} }}")  # fmt: skip
    with built.home.reading(), QuadStore.opened(built.home.quads_path, read_only=True) as store:
        edges = {(s["g"].value, s["verdict"].value, s["type"].value) for s in store.query(sparql)}
    analysis, own = str(analysis_graph_iri("DECISIONS.md")), str(document_iri("DECISIONS.md"))
    assert (analysis, "verified", str(PROV.SoftwareAgent)) in edges
    assert (own, "declared", str(PROV.Person)) in edges
    listing = review_list(capsys, built.home)
    catalog = pairs_of(listing)[CATALOG]
    assert catalog["kind"] == "verified" and catalog["verification"] == "confirmed"
    assert catalog["verification_check"] is None and catalog["verified_by"] == MODEL
    assert catalog["verification_reason"] == VERIFIER_ANSWERS["Catalog storage engine PostgreSQL"]["reason"]
    assert "confirmed by an independent call: applied unless you reject it" in review_text(capsys, built.home)


def test_a_verifier_rejection_keeps_its_reason_and_the_pair_waits_for_a_person(
    built: Built, capsys: pytest.CaptureFixture[str]
) -> None:
    latency = pairs_of(review_list(capsys, built.home))[LATENCY]  # pending: listed without --all
    assert latency["verdict"] is None and latency["kind"] == "decision"
    assert latency["verification"] == "rejected" and latency["verification_check"] == "verifier-confirms"
    assert latency["verification_reason"] == LATENCY_REASON
    assert LATENCY not in applied_pairs(built.home)
    assert catalog_rows(
        built.home, "SELECT stage, outcome, verifier_verdict, verifier_reason FROM supersession_model_reviews "
        f"WHERE later_key = '{LATENCY[1]}'"
    ) == [("verifier", "rejected", "reject", LATENCY_REASON)]
    assert f"rejected (verifier-confirms): {LATENCY_REASON}" in review_text(capsys, built.home)


def test_a_confirmation_with_a_quote_not_in_the_text_is_not_counted(
    built: Built, capsys: pytest.CaptureFixture[str]
) -> None:
    dashboard = pairs_of(review_list(capsys, built.home))[DASHBOARD]
    assert dashboard["verdict"] is None and dashboard["kind"] == "decision"
    assert dashboard["verification"] == "unverifiable" and dashboard["verification_check"] == "quote-verbatim"
    assert "The dashboard moved to Kubernetes for good." in dashboard["verification_reason"]
    assert "the verifier's later quote" in dashboard["verification_reason"]
    assert "earlier quote" not in dashboard["verification_reason"]  # the earlier one is verbatim
    assert DASHBOARD not in applied_pairs(built.home)


def test_a_persons_reject_wins_over_a_confirmation(built: Built) -> None:
    reviews = dict(catalog_rows(built.home, "SELECT later_key, outcome FROM supersession_model_reviews"))
    assert reviews[BACKUPS[1]] == "confirmed"  # the model confirmed it...
    assert BACKUPS not in applied_pairs(built.home)  # ...but the person rejected it first
    # A reject recorded after the model confirmed a pair removes it at the next application.
    store = DecisionsStore.for_home(built.home)
    store.decide(SUPERSESSION, *CATALOG, "reject", REVIEWER)
    requests = len(built.server.requests)
    try:
        summary = apply_supersessions(built.home, VaultConfig())
        assert summary.verified == 0 and summary.model_review.confirmed == 2
        assert CATALOG not in applied_pairs(built.home) and ALERTS in applied_pairs(built.home)
        assert pairs_of(_queue_json(built.home))[CATALOG]["verdict"] == "reject"
    finally:
        store.undo(SUPERSESSION, *CATALOG, REVIEWER)
        summary = apply_supersessions(built.home, VaultConfig())
    assert summary.verified == 1 and CATALOG in applied_pairs(built.home)  # the undo brings the confirmation back
    assert summary.model_review.reused == len(INFERRED) and len(built.server.requests) == requests  # no new call


def side(title: str, decided_on: str, text: str) -> DecisionSide:
    return DecisionSide(key=f"DECISIONS.md#{title.lower()}", doc_id="d", path="DECISIONS.md", entity_key=title,
                        title=title, decided_on=decided_on, status="Accepted", line_start=1, line_end=2, quote=text)


def proposal(earlier: DecisionSide, later: DecisionSide, score: float) -> SupersessionProposal:
    return SupersessionProposal(earlier, later, score, False, False, 0.5, 0.0, (), ("titles share words",))


PAIRS = [
    proposal(side("Catalog storage engine DuckDB", "2026-01-10",
                  "Decision: Store the catalog in a single DuckDB file on a persistent volume."),
             side("Catalog storage engine PostgreSQL", "2026-03-01",
                  "Decision: Move the catalog to PostgreSQL so that several workers\ncan write at once."), 0.9),
    proposal(side("Search latency target p95 300 ms", "2026-01-15",
                  "Decision: The search API's SLO is p95 below 300 ms during business hours."),
             side("Search latency target p95 120 ms", "2026-04-01",
                  "Decision: The ranking endpoint's SLO is p95 below 120 ms."), 0.8),
    proposal(side("Nightly backup storage location NAS", "2026-01-25",
                  "Decision: Nightly backups of the catalog are copied to the office NAS."),
             side("Nightly backup storage location object store", "2026-05-10",
                  "Decision: Nightly backups of the catalog go to object storage instead of the office NAS."), 0.7),
]  # fmt: skip


def review_config(url: str, **settings: int) -> ModelReviewConfig:
    server = LLMConfig(base_url=url, model=MODEL, max_retries=0, timeout_s=10, concurrency=1)  # in score order
    return ModelReviewConfig(enabled=True, server=server, **settings)


def test_one_pairs_failure_does_not_stop_the_batch_and_is_asked_again() -> None:
    with LLMServer(responder=play_model) as server:
        server.script(server_error(500), Reply("I think so, yes."))  # the first two proposer calls
        reviews, summary = review_proposals(PAIRS, review_config(server.url))
        assert [(r.outcome, r.failed_check) for r in reviews] == [
            ("failed", "server-answered"), ("unverifiable", "answer-format"), ("confirmed", None)
        ]  # fmt: skip
        assert "HTTP 500" in (reviews[0].failure or "") and reviews[1].stage == "proposer"
        assert (summary.asked, summary.failed, summary.unverifiable, summary.confirmed) == (3, 1, 1, 1)
        before = len(server.requests)
        again, summary = review_proposals(PAIRS, review_config(server.url), {r.pair: r for r in reviews})
        assert [r.outcome for r in again] == ["confirmed", "unverifiable", "confirmed"]
        assert summary.reused == 2 and len(server.requests) == before + 2  # only the failed pair, both calls


def test_an_unreachable_server_stops_the_batch_after_a_few_pairs() -> None:
    with LLMServer() as server:
        url = server.url
    reviews, summary = review_proposals(PAIRS, review_config(url, unreachable_after=2))  # nothing listens now
    assert [r.outcome for r in reviews] == ["failed", "failed"] and summary.not_asked == 1
    assert all("no answer from" in (r.failure or "") for r in reviews)


def test_the_supersession_page_shows_the_verifiers_reason(built: Built, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_HOME", str(built.home.root))
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.switch_page("views/supersessions.py")
    app.run()
    app.sidebar.text_input(key=OPERATOR_KEY).set_value(REVIEWER).run()
    assert not app.exception, [e.value for e in app.exception]
    warnings = [warning.value.replace("\\", "") for warning in app.warning]  # without Markdown escapes
    assert any("rejected by the verifier" in text and LATENCY_REASON in text and "verifier-confirms" in text
               for text in warnings), warnings  # fmt: skip
    assert any("not verified" in text and "quote-verbatim" in text for text in warnings), warnings
    captions = [caption.value.replace("\\", "") for caption in app.caption]
    confirmed = VERIFIER_ANSWERS["Catalog storage engine PostgreSQL"]["reason"]
    assert any(f"Verifier ({MODEL})" in text and confirmed in text for text in captions), captions
