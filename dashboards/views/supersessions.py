"""Supersession queue: proposals that a later dated decision replaces an earlier one, for a person to accept or
reject. Both decisions are quoted from their exact source lines side by side, because whether one replaces the
other is read in the decisions themselves. An accepted verdict goes to the decisions store; the next build writes
the ``supersedes`` edge into the later document's analysis graph and keeps the earlier decision, marked."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboards.stores import (
    NEXT_BUILD,
    confirm,
    dated_decisions,
    escape_markdown,
    nothing_built_message,
    operator_input,
    page_header,
    recent_verdicts,
    record_verdict,
    show_confirmation,
    supersession_proposals,
    undo_verdict,
)
from engramrag.decisions.store import SUPERSESSION, DecisionsStoreError, Verdict
from engramrag.store import Home, StoreBusy

PAGE_SIZE = 10
RECENT_SHOWN = 10
QUOTE_HEIGHT = 280
TIMELINE_LIMIT = 60
PHRASES = {"accept": "supersedes", "reject": "does not supersede"}
STATUS_COLOURS = {"accepted": "#dbeafe", "superseded": "#e5e7eb", "deprecated": "#e5e7eb", "proposed": "#fef3c7"}


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
    """A top-to-bottom DOT timeline: one row per date with the decisions of that date side by side, and an arrow
    from an earlier decision to the later one that (is proposed to) supersede it."""
    involved = set(proposals["earlier_key"]) | set(proposals["later_key"])
    if len(decisions) > TIMELINE_LIMIT:
        decisions = decisions[decisions["key"].isin(involved)].head(TIMELINE_LIMIT)
    dates = sorted(set(decisions["decided_on"]))
    lines = [
        "digraph timeline {",
        '  rankdir=TB; nodesep=0.3; ranksep=0.3; bgcolor="transparent";',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, color="#9ca3af"];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    for date in dates:
        lines.append(f'  {_id("date:" + date)} [label={_quote(date)}, shape=plaintext, style="", fontcolor="#6b7280"];')
    for earlier, later in itertools.pairwise(dates):
        axis = '[color="#d1d5db", arrowhead=none, weight=10]'
        lines.append(f"  {_id('date:' + earlier)} -> {_id('date:' + later)} {axis};")
    shown = set()
    for row in decisions.itertuples(index=False):
        shown.add(row.key)
        status = (row.status or "").lower()
        fill = next((colour for word, colour in STATUS_COLOURS.items() if word in status), "#ffffff")
        label = f"{textwrap.fill(row.title, 28)}\n{row.path.rsplit('/', 1)[-1]}" + (f" · {status}" if status else "")
        lines.append(f"  {_id(row.key)} [label={_quote(label)}, fillcolor={_quote(fill)}, "
                     f"tooltip={_quote(f'{row.decided_on} {row.title} ({row.path}:{row.line_start})')}];")
    for date in dates:
        members = " ".join(_id(key) for key in decisions.loc[decisions["decided_on"] == date, "key"])
        lines.append(f"  {{ rank=same; {_id('date:' + date)} {members} }}")
    for row in proposals.itertuples(index=False):
        if row.earlier_key not in shown or row.later_key not in shown or row.verdict == "reject":
            continue
        if row.verdict == "accept":
            style = f'color="#16a34a", penwidth=2, label={_quote("superseded by")}, fontcolor="#16a34a"'
        else:
            style = f'color="#9ca3af", style=dashed, tooltip={_quote(f"proposed, score {row.score:.2f}")}'
        lines.append(f"  {_id(row.earlier_key)} -> {_id(row.later_key)} [{style}, constraint=false];")
    lines.append("}")
    return "\n".join(lines)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _id(key: str) -> str:
    return _quote(key)


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
        reasons = list(row["reasons"] if row["reasons"] is not None else [])
        if reasons:
            st.caption("Why proposed: " + " · ".join(escape_markdown(str(reason)) for reason in reasons))
        sides = st.columns(2)
        for column, side, heading in ((sides[0], "earlier", "Earlier"), (sides[1], "later", "Later")):
            with column:
                status = row[f"{side}_status"] or "no status"
                st.markdown(f"**{heading}: {row[f'{side}_decided_on'] or 'undated'}** · {status}")
                st.caption(f"`{row[f'{side}_path']}` lines {row[f'{side}_line_start']}–{row[f'{side}_line_end']}")
                st.code(row[f"{side}_quote"] or "", language="markdown", wrap_lines=True, height=QUOTE_HEIGHT)
        with st.container(horizontal=True, gap="small"):
            pair = f"{row['earlier_key']}|{row['later_key']}"
            st.button("accept", key=f"supersession:accept:{pair}", icon=":material/check:",
                      help="The later decision replaces the earlier one (the earlier stays, marked superseded).",
                      disabled=not operator, on_click=_decide, args=(str(home.root), row, "accept", operator))
            st.button("reject", key=f"supersession:reject:{pair}", icon=":material/close:",
                      help="They do not replace each other; the proposal is not shown again.",
                      disabled=not operator, on_click=_decide, args=(str(home.root), row, "reject", operator))


def _decide(root: str, row: dict[str, Any], verdict: str, operator: str) -> None:
    context = {"source": "dashboard", "titles": {row["earlier_key"]: row["earlier_title"],
                                                 row["later_key"]: row["later_title"]},
               "score": float(row["score"]), "same_day": bool(row["same_day"])}
    try:
        record_verdict(Home(Path(root)), SUPERSESSION, row["earlier_key"], row["later_key"], verdict, operator,
                       context)
    except (ValueError, DecisionsStoreError, StoreBusy) as error:
        confirm(f"Nothing was recorded: {error}", ok=False)
        return
    confirm(f"Recorded: “{row['later_title']}” {PHRASES[verdict]} “{row['earlier_title']}” (by {operator}). "
            f"{NEXT_BUILD}")


def _titles(verdict: Verdict) -> tuple[str, str]:
    titles = (verdict.context or {}).get("titles") or {}
    return str(titles.get(verdict.left_key, verdict.left_key)), str(titles.get(verdict.right_key, verdict.right_key))


def _undo(root: str, verdict: Verdict, operator: str) -> None:
    try:
        undone = undo_verdict(Home(Path(root)), SUPERSESSION, verdict.left_key, verdict.right_key, operator)
    except (ValueError, DecisionsStoreError, StoreBusy) as error:
        confirm(f"Nothing was undone: {error}", ok=False)
        return
    if undone is None:
        confirm("That verdict was already undone.", ok=False)
        return
    earlier, later = _titles(undone)
    confirm(f"Undone: “{later}” {PHRASES[undone.verdict]} “{earlier}” (by {operator}); the history keeps it. "
            f"{NEXT_BUILD}")


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
                      on_click=_undo, args=(str(home.root), verdict, operator))


render()
