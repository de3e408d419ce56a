"""The supersession queue: proposed (earlier, later) pairs beside what people decided about them.

Four kinds (column ``kind``): ``decision`` (a pair of decision records the machine proposes; applied once a person
accepts it), ``declared`` (an author's own Supersedes / superseded_by / "this replaces [[X]]", already applied,
listed so a person can reject it), ``verified`` (a decision pair a model proposed and an independent call confirmed
with a verbatim quote from each side, already applied, listed so a person can reject it) and ``later_value`` (a
later note changed a single-valued property's value; search uses it on questions about the current state, and a
person can accept or reject it).

The model review of a decision pair (``revise.model_review``) is in the columns ``verification`` (its outcome:
confirmed, rejected, unverifiable, not_proposed, failed; empty when no model reviewed it), ``verification_check``
(the check that failed), ``verification_reason`` (the verifier's reason, or what failed), ``verified_by`` (the
model) and ``verifier_earlier_quote``/``verifier_later_quote``.
"""

from __future__ import annotations

import pandas as pd

from engramrag.catalog.connection import catalog_reader, has_table
from engramrag.decisions.store import SUPERSESSION, DecisionsStore
from engramrag.revise.model_review import CONFIRMED, review_reason
from engramrag.store import Home

VERIFICATION_COLUMNS = ["verification", "verification_stage", "verification_check", "verification_reason",
                        "verified_by", "verifier_earlier_quote", "verifier_later_quote"]  # fmt: skip


def supersession_queue(home: Home, include_decided: bool = False) -> pd.DataFrame:
    """Proposals, best first, with their current verdict (accept / reject; empty when undecided)."""
    with catalog_reader(home) as catalog:
        if catalog is None or not has_table(catalog, "supersession_candidates"):
            return pd.DataFrame()
        frame = catalog.execute(
            "SELECT * FROM supersession_candidates ORDER BY score DESC, earlier_key, later_key"
        ).df()
        documents = (
            catalog.execute(
                """
                SELECT left_key AS earlier_key, right_key AS later_key, earlier_path, later_path,
                       CASE WHEN form = 'property' THEN earlier_path || ' (' || subject || ' ' || property || ': '
                            || earlier_value || ')' ELSE earlier_path END AS earlier_title,
                       CASE WHEN form = 'property' THEN later_path || ' (' || subject || ' ' || property || ': '
                            || later_value || ')' ELSE later_path END AS later_title,
                       earlier_date AS earlier_decided_on, later_date AS later_decided_on, earlier_quote,
                       later_quote, CASE WHEN form = 'property' THEN 0.6 ELSE 1.0 END AS score,
                       form <> 'property' AS explicit,
                       [CASE WHEN form = 'property' THEN 'a later note changed the value' ELSE 'declared in the '
                        || form END] AS reasons,
                       CASE WHEN form = 'property' THEN 'later_value' ELSE 'declared' END AS kind
                FROM document_supersessions ORDER BY score DESC, left_key, right_key
                """
            ).df()
            if has_table(catalog, "document_supersessions")
            else pd.DataFrame()
        )
        reviews = (
            catalog.execute(
                """
                SELECT earlier_key, later_key, outcome AS verification, stage AS verification_stage,
                       failed_check AS verification_check, failure, proposer_reason, verifier_reason,
                       model AS verified_by, verifier_earlier_quote, verifier_later_quote
                FROM supersession_model_reviews
                """
            ).df()
            if has_table(catalog, "supersession_model_reviews")
            else pd.DataFrame()
        )
    if len(frame):
        declared = frame["declared_in"].notna() if "declared_in" in frame else False
        frame["kind"] = pd.Series(declared, index=frame.index).map({True: "declared", False: "decision"})
        frame = _with_reviews(frame, reviews)
    columns = list(dict.fromkeys([*frame.columns, *documents.columns, *VERIFICATION_COLUMNS]))
    frame = pd.concat([part for part in (frame, documents) if len(part)] or [frame], ignore_index=True)
    frame = frame.reindex(columns=columns)
    for column in ("same_day", "explicit"):
        if column in frame:
            frame[column] = frame[column].astype("boolean").fillna(False).astype(bool)
    for column in ("shared_subjects", "reasons"):
        if column in frame:
            frame[column] = [list(v) if isinstance(v, list | tuple) or hasattr(v, "tolist") else []
                             for v in frame[column]]
    verdicts = {v.pair: v for v in DecisionsStore.for_home(home).current(SUPERSESSION)}
    if frame.empty:
        return frame
    pairs = list(zip(frame["earlier_key"], frame["later_key"], strict=True))
    frame["verdict"] = [verdicts[p].verdict if p in verdicts else None for p in pairs]
    frame["decided_by"] = [verdicts[p].operator if p in verdicts else None for p in pairs]
    frame["decided_at"] = [verdicts[p].decided_at if p in verdicts else None for p in pairs]
    if not include_decided:
        frame = frame[frame["verdict"].isna()]
    return frame.reset_index(drop=True)


def _with_reviews(frame: pd.DataFrame, reviews: pd.DataFrame) -> pd.DataFrame:
    """The decision pairs with their model review (empty columns when none); a confirmed one is ``verified``."""
    if reviews.empty:
        return frame.assign(**{column: None for column in VERIFICATION_COLUMNS})
    reviews = reviews.astype(object).where(reviews.notna(), None)
    reviews["verification_reason"] = [
        review_reason(row["verification"], row["failure"], row["proposer_reason"], row["verifier_reason"])
        for row in reviews.to_dict("records")
    ]
    frame = frame.merge(reviews[["earlier_key", "later_key", *VERIFICATION_COLUMNS]], how="left",
                        on=["earlier_key", "later_key"])  # fmt: skip
    frame = frame.astype({column: object for column in VERIFICATION_COLUMNS})
    frame[VERIFICATION_COLUMNS] = frame[VERIFICATION_COLUMNS].where(frame[VERIFICATION_COLUMNS].notna(), None)
    frame.loc[(frame["kind"] == "decision") & (frame["verification"] == CONFIRMED), "kind"] = "verified"
    return frame
