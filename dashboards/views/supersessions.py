"""Supersession queue: proposals that a later dated decision replaces an earlier one, for a person to accept or
reject. Both decisions are quoted from their exact source lines side by side, because whether one replaces the
other is read in the decisions themselves. An accepted verdict goes to the decisions store; the next build writes
the ``supersedes`` edge into the later document's analysis graph and keeps the earlier decision, marked. When a
model reviewed a pair (``ENGRAM_LLM_SUPERSESSION=1``), its card says what the proposer and the independent verifier
concluded: a confirmed pair is applied unless rejected here; for the others the verifier's reason and the failed
check are shown."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboards import locations, timeline
from dashboards.stores import (
    dated_decisions,
    escape_markdown,
    nothing_built_message,
    operator_input,
    page_header,
    recent_verdicts,
    show_confirmation,
    supersession_proposals,
)
from dashboards.verdicts import record_and_confirm, undo_and_confirm
from engramrag.decisions.store import SUPERSESSION, DecisionsStoreError, Verdict
from engramrag.store import Home, StoreBusy

PAGE_SIZE = 10
RECENT_SHOWN = 10
QUOTE_HEIGHT = 280
TIMELINE_LIMIT = 60
PHRASES = {"accept": "supersedes", "reject": "does not supersede"}
STATUS_COLOURS = {"accepted": "#dbeafe", "superseded": "#e5e7eb", "deprecated": "#e5e7eb", "proposed": "#fef3c7"}
MODEL_OUTCOMES = {
    "rejected": "rejected by the verifier",
    "unverifiable": "not verified",
    "not_proposed": "not proposed by the model",
    "failed": "no answer from the model server",
}


def render() -> None:
    path, home = page_header("Supersession queue")
    if home is None:
        return
    operator = operator_input()
    show_confirmation()
    try:
        with st.spinner(f"Reading the supersession proposals of {path} (waits while a build is writing)…"):
            proposals = supersession_proposals(home)
            decisions = dated_decisions(home)
    except (StoreBusy, DecisionsStoreError) as error:
        st.warning(str(error))
        return
    if proposals.columns.empty:
        st.info(nothing_built_message(path) + " Proposals are computed by the build's revision step.")
        return
    if not operator:
        st.warning("Type your name in the sidebar: every verdict records who made it.")
    pending = proposals[proposals["verdict"].isna()]
    _headline(proposals, pending)
    _timeline(decisions, proposals)
    _pending(home, pending, operator)
    _recent(home, operator)


def _headline(proposals: pd.DataFrame, pending: pd.DataFrame) -> None:
    columns = st.columns(4)
    columns[0].metric("Pending proposals", len(pending))
    columns[1].metric("Accepted", int((proposals["verdict"] == "accept").sum()))
    columns[2].metric("Rejected", int((proposals["verdict"] == "reject").sum()))
    columns[3].metric("Same-day pending", int(pending["same_day"].sum()) if len(pending) else 0,
                      help="Decided on the same day: which came later is not known from the dates.")


def _timeline(decisions: pd.DataFrame, proposals: pd.DataFrame) -> None:
    st.subheader("Timeline")
    dated = decisions.dropna(subset=["decided_on"])
    if dated.empty:
        st.caption("No dated decision records in this vault.")
        return
    st.graphviz_chart(timeline_dot(dated, proposals))
    st.caption("Dated decisions from top (earliest) to bottom, one row per date. Solid green arrows: "
               "supersessions people accepted (applied at the next build if recent); dashed grey arrows: proposals "
               "waiting for a verdict. Rejected proposals are not drawn.")


def timeline_dot(decisions: pd.DataFrame, proposals: pd.DataFrame) -> str:
    """The vault's timeline (see ``dashboards.timeline``): its dated decisions, at most ``TIMELINE_LIMIT`` of those
    in a proposal when there are more, and an arrow from an earlier decision to the later one that (is proposed
    to) supersede it; rejected proposals are not drawn."""
    involved = set(proposals["earlier_key"]) | set(proposals["later_key"])
    if len(decisions) > TIMELINE_LIMIT:
        decisions = decisions[decisions["key"].isin(involved)].head(TIMELINE_LIMIT)
    nodes = [
        timeline.TimelineNode(row.key, row.decided_on, row.title, row.path, row.status,
                              f"{row.decided_on} {row.title} ({locations.where(row.path, row.line_start)})")
        for row in decisions.itertuples(index=False)
    ]
    arrows = [timeline.TimelineArrow(row.earlier_key, row.later_key, _arrow_style(row))
              for row in proposals.itertuples(index=False) if row.verdict != "reject"]
    return timeline.timeline_dot(nodes, arrows, STATUS_COLOURS)


def _arrow_style(proposal: Any) -> str:
    if proposal.verdict == "accept":
        return timeline.SUPERSEDED_STYLE
    return f'color="#9ca3af", style=dashed, tooltip={timeline.quote(f"proposed, score {proposal.score:.2f}")}'


def _pending(home: Home, pending: pd.DataFrame, operator: str) -> None:
    st.subheader("Pending proposals")
    if pending.empty:
        st.success("Nothing to review: every proposal has a verdict. New ones appear after the next build.")
        return
    pages = max(1, -(-len(pending) // PAGE_SIZE))
    page = st.pagination(pages, key="supersession_page") if pages > 1 else 1
    first = (min(page, pages) - 1) * PAGE_SIZE
    st.caption(f"Proposals {first + 1}–{min(first + PAGE_SIZE, len(pending))} of {len(pending)}, best first.")
    for row in pending.iloc[first : first + PAGE_SIZE].to_dict("records"):
        _card(home, row, operator)


def _card(home: Home, row: dict[str, Any], operator: str) -> None:
    with st.container(border=True):
        head, score = st.columns([5, 1])
        head.markdown(f"#### {escape_markdown(row['later_title'])}  \n:gray[supersedes]  "
                      f"{escape_markdown(row['earlier_title'])}?")
        score.metric("score", f"{row['score']:.2f}")
        with head.container(horizontal=True, gap="small"):
            if row["same_day"]:
                st.badge("same day: which came later is not known", color="orange", icon=":material/warning:",
                         help="Both were decided on the same date; earlier/later follow the keys unless an explicit "
                         "Supersedes field gives the order. Check before accepting.")
            if row["explicit"]:
                st.badge("named in a Supersedes / Superseded by field", color="green", icon=":material/link:")
            subjects = list(row["shared_subjects"] if row["shared_subjects"] is not None else [])
            if subjects:
                st.badge("both about " + ", ".join(subjects[:6]), color="gray", icon=":material/sell:")
            if row.get("verification") == "confirmed":
                st.badge("confirmed by a model's independent verifier: applied unless you reject it", color="blue",
                         icon=":material/verified:")
        reasons = list(row["reasons"] if row["reasons"] is not None else [])
        if reasons:
            st.caption("Why proposed: " + " · ".join(escape_markdown(str(reason)) for reason in reasons))
        _model_review(row)
        sides = st.columns(2)
        for column, side, heading in ((sides[0], "earlier", "Earlier"), (sides[1], "later", "Later")):
            with column:
                status = row[f"{side}_status"] or "no status"
                st.markdown(f"**{heading}: {row[f'{side}_decided_on'] or 'undated'}** · {status}")
                lines = (row[f"{side}_line_start"], row[f"{side}_line_end"])
                st.caption(locations.lines_caption(row[f"{side}_path"], *lines))
                st.code(row[f"{side}_quote"] or "", language="markdown", wrap_lines=True, height=QUOTE_HEIGHT)
        with st.container(horizontal=True, gap="small"):
            pair = f"{row['earlier_key']}|{row['later_key']}"
            st.button("accept", key=f"supersession:accept:{pair}", icon=":material/check:",
                      help="The later decision replaces the earlier one (the earlier stays, marked superseded).",
                      disabled=not operator, on_click=_decide, args=(str(home.root), row, "accept", operator))
            st.button("reject", key=f"supersession:reject:{pair}", icon=":material/close:",
                      help="They do not replace each other; the proposal is not shown again.",
                      disabled=not operator, on_click=_decide, args=(str(home.root), row, "reject", operator))


def _model_review(row: dict[str, Any]) -> None:
    """What the model proposer and verifier concluded about the pair, when a model reviewed it."""
    outcome = row.get("verification")
    if not isinstance(outcome, str):
        return
    reason = escape_markdown(" ".join(str(row.get("verification_reason") or "").split()))
    model = escape_markdown(str(row.get("verified_by") or "the model"))
    if outcome == "confirmed":
        quotes = [f"{side}: “{escape_markdown(str(row[f'verifier_{side}_quote']))}”" for side in ("earlier", "later")
                  if isinstance(row.get(f"verifier_{side}_quote"), str)]  # fmt: skip
        st.caption(f"Verifier ({model}): {reason} · " + " · ".join(quotes))
        return
    check = row.get("verification_check")
    failed = f" (failed check: `{check}`)" if isinstance(check, str) and check else ""
    text = f"Model review ({model}): {MODEL_OUTCOMES.get(outcome, outcome)}{failed}. {reason}"
    if outcome in ("rejected", "unverifiable"):
        st.warning(text, icon=":material/gpp_maybe:")
    else:
        st.caption(text)


def _decide(root: str, row: dict[str, Any], verdict: str, operator: str) -> None:
    context = {"source": "dashboard", "titles": {row["earlier_key"]: row["earlier_title"],
                                                 row["later_key"]: row["later_title"]},
               "score": float(row["score"]), "same_day": bool(row["same_day"])}
    record_and_confirm(root, SUPERSESSION, row["earlier_key"], row["later_key"], verdict, operator, context,
                       f"“{row['later_title']}” {PHRASES[verdict]} “{row['earlier_title']}”")


def _titles(verdict: Verdict) -> tuple[str, str]:
    titles = (verdict.context or {}).get("titles") or {}
    return str(titles.get(verdict.left_key, verdict.left_key)), str(titles.get(verdict.right_key, verdict.right_key))


def _reads(verdict: Verdict) -> str:
    earlier, later = _titles(verdict)
    return f"“{later}” {PHRASES[verdict.verdict]} “{earlier}”"


def _recent(home: Home, operator: str) -> None:
    st.subheader("Recently decided")
    recent = recent_verdicts(home, SUPERSESSION, RECENT_SHOWN)
    if not recent:
        st.caption("No verdicts yet. Proposals you decide move here, where you can undo them.")
        return
    for verdict in recent:
        text, button = st.columns([6, 1], vertical_alignment="center")
        earlier, later = _titles(verdict)
        icon = ":green[:material/check:]" if verdict.verdict == "accept" else ":red[:material/close:]"
        said = f"**{escape_markdown(later)}** {PHRASES[verdict.verdict]} **{escape_markdown(earlier)}**"
        text.markdown(f"{icon} {said}  \n"
                      f":gray[{escape_markdown(verdict.operator)} · {verdict.decided_at[:19].replace('T', ' ')} UTC]")
        button.button("Undo", key=f"undo-supersession:{verdict.id}", icon=":material/undo:", disabled=not operator,
                      on_click=undo_and_confirm, args=(str(home.root), SUPERSESSION, verdict, operator, _reads))


render()
