"""Decision supersession in the lifecycle: proposals into the catalog, accepted ones into the graphs.

Proposals are recomputed whole from the live decision records. A person's accepted verdict (decisions store,
topic ``supersession``) becomes, at the next build, a ``supersedes`` edge in the later document's analysis
graph and a row of ``supersessions``, which the retrieval index reads to label and rank the earlier decision.
The earlier decision is never deleted. The quads this step added last time are recorded, so an undone verdict
loses its edge; a re-extracted document loses it with its analysis graph and gets it back here.

With a model server and ``ENGRAM_LLM_SUPERSESSION=1``, the inferred proposals are also put to a model proposer and
an independent verifier (``revise.model_review``) before they are applied; a confirmed one is applied like an
author's declaration (reason ``verified``) unless a person rejected it, the others wait for a person with the
verifier's reason. A review is kept while its pair's texts, the model and the prompts stay the same, so a new verdict
or an unchanged proposal costs no call. Without them nothing is asked and the proposals wait for a person, as
before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from engramrag.catalog.connection import catalog_writer, has_column, has_table, refill_table
from engramrag.decisions.store import SUPERSESSION, DecisionsStore
from engramrag.lifecycle.step_quads import record_swap, swap_step_quads
from engramrag.revise.declarations import DOCUMENT_PAIR_PREFIXES, declared_by
from engramrag.revise.model_review import COLUMNS as REVIEW_COLUMNS
from engramrag.revise.model_review import CONFIRMED, ModelReview, ReviewSummary, model_agent, review_proposals
from engramrag.revise.model_review_config import ModelReviewConfig
from engramrag.revise.supersession import (
    DecisionSide,
    SupersessionConfig,
    SupersessionProposal,
    proposals_frame,
    propose_supersessions,
    supersedes_quads,
)
from engramrag.store import Home
from engramrag.vault.config import VaultConfig

PROPOSAL_COLUMNS = [
    "earlier_key", "later_key", "earlier_path", "later_path", "earlier_title", "later_title", "earlier_decided_on",
    "later_decided_on", "earlier_status", "later_status", "earlier_line_start", "earlier_line_end",
    "later_line_start", "later_line_end", "earlier_quote", "later_quote", "score", "same_day", "explicit",
    "title_similarity", "subject_similarity", "shared_subjects", "reasons", "declared_in", "earlier_doc_id",
    "later_doc_id", "earlier_entity_key", "later_entity_key",
]  # fmt: skip


@dataclass
class ProposalSummary:
    decisions: int
    proposals: int
    same_day: int


@dataclass
class AppliedSummary:
    accepted: int
    applied: int
    quads_added: int  # quads written to the store this run (new ones, and owned ones a re-extraction dropped)
    quads_removed: int
    dormant: list[str] = field(default_factory=list)  # accepted pairs whose decisions are not in the vault now
    declared: int = 0  # of ``applied``, the ones authors declared (no person's verdict)
    verified: int = 0  # of ``applied``, the ones a model proposed and an independent call confirmed
    model_review: ReviewSummary = field(default_factory=ReviewSummary)  # what the proposer and verifier did


def refresh_supersession_candidates(
    home: Home, config: VaultConfig, supersession_config: SupersessionConfig | None = None
) -> tuple[ProposalSummary, list[SupersessionProposal]]:
    """Recompute the proposals into ``supersession_candidates`` (defined in ``catalog/schema.py``)."""
    proposals, decisions = _proposals(home, config, supersession_config)
    frame = proposals_frame(proposals)
    rows = frame[PROPOSAL_COLUMNS] if len(frame) else pd.DataFrame(columns=PROPOSAL_COLUMNS)
    rows = rows.assign(
        shared_subjects=rows["shared_subjects"].map(list), reasons=rows["reasons"].map(list)
    ) if len(rows) else rows
    with catalog_writer(home, config.bucket_count) as catalog:
        catalog.execute("BEGIN")
        refill_table(catalog, "supersession_candidates", rows, PROPOSAL_COLUMNS)
        catalog.execute("COMMIT")
    summary = ProposalSummary(decisions, len(proposals), sum(p.same_day for p in proposals))
    return summary, proposals


def apply_supersessions(
    home: Home,
    config: VaultConfig,
    supersession_config: SupersessionConfig | None = None,
    review_config: ModelReviewConfig | None = None,
) -> AppliedSummary:
    """Write people's accepted supersessions, the ones authors declared (a record's own Supersedes or
    Superseded-by field naming the other) and the ones a model's verifier confirmed that no person rejected, as
    ``supersedes`` edges and ``supersessions`` rows. A declaration is attributed to the author of the record that
    states it, a confirmation to the model (``model:NAME``). The model review (by default configured from the
    environment, ``ModelReviewConfig.from_env``) runs first, outside the catalog's lock, into
    ``supersession_model_reviews``; with the review off that table is emptied."""
    proposals = None if supersession_config is not None else stored_proposals(home, config)
    if proposals is None:
        proposals, _ = _proposals(home, config, supersession_config)
    reviews, review_summary = _review(home, config, proposals, review_config)
    verdicts = {v.pair: v for v in DecisionsStore.for_home(home).current(SUPERSESSION)}
    accepted = [v for v in verdicts.values() if v.verdict == "accept"]
    by_pair = {(p.earlier.key, p.later.key): p for p in proposals}
    authors = _authors(home, config)
    applied: list[tuple[SupersessionProposal, str, str]] = []  # (proposal, reason, decided by)
    quads, dormant = [], []
    for verdict in accepted:
        proposal = by_pair.get(verdict.pair)
        if proposal is None:
            if not verdict.left_key.startswith(DOCUMENT_PAIR_PREFIXES):
                dormant.append(f"{verdict.left_key} -> {verdict.right_key}")
            continue
        applied.append((proposal, "accepted", verdict.operator))
        quads += supersedes_quads([proposal], verdict.operator, verdict.decided_at)
    for pair, proposal in by_pair.items():
        if proposal.declared_in is None or pair in verdicts:
            continue  # inferred, or a person decided it (accepted above, or rejected: the rejection wins)
        author = declared_by(proposal.declared_in, authors.get(proposal.declared_in))
        applied.append((proposal, "declared", author))
        quads += supersedes_quads([proposal], author, None, verdict="declared")
    for review in reviews:
        pair, proposal = review.pair, by_pair.get(review.pair)
        if review.outcome != CONFIRMED or proposal is None or proposal.declared_in is not None or pair in verdicts:
            continue  # not confirmed, gone, declared (applied above) or a person decided it: the person wins
        agent = model_agent(review.model)
        applied.append((proposal, "verified", agent))
        quads += supersedes_quads([proposal], agent, None, verdict="verified")
    quads = list(dict.fromkeys(quads))
    review_rows = pd.DataFrame([[getattr(r, c) for c in REVIEW_COLUMNS] for r in reviews], columns=REVIEW_COLUMNS)
    rows = pd.DataFrame(
        [
            (p.earlier.key, p.later.key, p.earlier.doc_id, p.later.doc_id, p.earlier.title, p.later.title,
             p.earlier.decided_on, p.later.decided_on, reason, by)
            for p, reason, by in applied
        ],
        columns=["earlier_key", "later_key", "earlier_doc_id", "later_doc_id", "earlier_title", "later_title",
                 "earlier_date", "later_date", "reason", "decided_by"],
    ).drop_duplicates(["earlier_key", "later_key"])
    with catalog_writer(home, config.bucket_count) as catalog:
        swap = swap_step_quads(home, catalog, "supersession_quads", quads)
        catalog.execute("BEGIN")
        refill_table(catalog, "supersessions", rows)
        record_swap(home, catalog, "supersession_quads", swap)
        refill_table(catalog, "supersession_model_reviews", review_rows, REVIEW_COLUMNS)
        catalog.execute("COMMIT")
    declared = sum(reason == "declared" for _, reason, _ in applied)
    verified = sum(reason == "verified" for _, reason, _ in applied)
    return AppliedSummary(
        len(accepted), len(applied), swap.inserted, len(swap.released), dormant, declared, verified, review_summary
    )


def stored_proposals(home: Home, config: VaultConfig) -> list[SupersessionProposal] | None:
    """The proposals ``refresh_supersession_candidates`` last wrote, in its order (it runs before this step in
    every build, or was skipped because its inputs were unchanged), or None when a row predates schema 10 and lacks
    its sides' document ids (the caller computes them again)."""
    with catalog_writer(home, config.bucket_count) as catalog:
        columns = ", ".join(PROPOSAL_COLUMNS)
        frame = catalog.execute(f"SELECT {columns} FROM supersession_candidates ORDER BY rowid").df()
    if frame[["earlier_doc_id", "later_doc_id", "earlier_entity_key", "later_entity_key"]].isna().any().any():
        return None
    frame = frame.astype(object).where(frame.notna(), None)
    return [_proposal(row) for row in frame.to_dict("records")]


def _proposal(row: Mapping[str, object]) -> SupersessionProposal:
    def side(name: str) -> DecisionSide:
        def value(field_name: str) -> object:
            return row[f"{name}_{field_name}"]

        line_start, line_end = value("line_start"), value("line_end")
        return DecisionSide(
            key=str(value("key")), doc_id=str(value("doc_id")), path=str(value("path")),
            entity_key=str(value("entity_key")), title=str(value("title")), decided_on=value("decided_on"),
            status=value("status"), line_start=None if line_start is None else int(line_start),
            line_end=None if line_end is None else int(line_end), quote=str(value("quote") or ""),
        )  # fmt: skip

    return SupersessionProposal(
        earlier=side("earlier"), later=side("later"), score=float(row["score"]), same_day=bool(row["same_day"]),
        explicit=bool(row["explicit"]), title_similarity=float(row["title_similarity"]),
        subject_similarity=float(row["subject_similarity"]), shared_subjects=_strings(row["shared_subjects"]),
        reasons=_strings(row["reasons"]), declared_in=row["declared_in"],
    )  # fmt: skip


def _strings(value: object) -> tuple[str, ...]:
    return () if value is None else tuple(str(item) for item in value)  # a list column reads as an array


def _review(
    home: Home, config: VaultConfig, proposals: list[SupersessionProposal], review_config: ModelReviewConfig | None
) -> tuple[list[ModelReview], ReviewSummary]:
    """The model reviews of the inferred proposals (none when the review is off), reusing those whose inputs are
    unchanged."""
    review_config = ModelReviewConfig.from_env() if review_config is None else review_config
    previous = _model_reviews(home, config) if review_config.active else {}
    return review_proposals(proposals, review_config, previous)


def _model_reviews(home: Home, config: VaultConfig) -> Mapping[tuple[str, str], ModelReview]:
    """The model reviews of the last recomputation, by (earlier, later) key."""
    with catalog_writer(home, config.bucket_count) as catalog:
        if not has_table(catalog, "supersession_model_reviews"):
            return {}
        frame = catalog.execute(f"SELECT {', '.join(REVIEW_COLUMNS)} FROM supersession_model_reviews").df()
    frame = frame.astype(object).where(frame.notna(), None)
    return {(str(row["earlier_key"]), str(row["later_key"])): ModelReview.from_row(row)
            for row in frame.to_dict("records")}  # fmt: skip


def _proposals(
    home: Home, config: VaultConfig, supersession_config: SupersessionConfig | None
) -> tuple[list[SupersessionProposal], int]:
    with catalog_writer(home, config.bucket_count) as catalog:
        # Only the documents that record decisions are read: the records are built from them alone.
        holders = "SELECT DISTINCT d.doc_id FROM decisions d JOIN documents USING (doc_id) WHERE NOT gone"
        decisions = catalog.execute(f"SELECT * FROM decisions WHERE doc_id IN ({holders})").df()
        documents = catalog.execute(f"SELECT doc_id, path, text FROM documents WHERE doc_id IN ({holders})").df()
        statements = catalog.execute(
            "SELECT doc_id, subject, predicate, object, object_is_entity, line_start FROM statements "
            f"WHERE doc_id IN ({holders})"
        ).df()
        # A custom kind is judged as the core kind it was declared under (a "Researcher" is a Person).
        kind = "coalesce(core_kind, kind) AS kind" if has_column(catalog, "entities", "core_kind") else "kind"
        entities = catalog.execute(
            f"SELECT doc_id, entity_key, label, {kind} FROM entities WHERE doc_id IN ({holders})"
        ).df()
    return propose_supersessions(decisions, documents, statements, entities, supersession_config), len(decisions)


def _authors(home: Home, config: VaultConfig) -> dict[str, str]:
    """Live document path -> its author, where one is known."""
    with catalog_writer(home, config.bucket_count) as catalog:
        rows = catalog.execute("SELECT path, author FROM documents WHERE NOT gone AND author IS NOT NULL").fetchall()
    return dict(rows)

