"""Merge queue: the machine's candidate pairs of entity keys, for a person to say same / broader / narrower /
related / distinct. The evidence sentences of both sides stand side by side, because a pair is judged by how each
label is used, not by how alike the labels look. A verdict goes to the decisions store only; the clusters change
at the next build, which reads it."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from dashboards.stores import (
    blocked_merges,
    escape_markdown,
    nothing_built_message,
    operator_input,
    page_header,
    pending_merges,
    recent_verdicts,
    show_confirmation,
)
from dashboards.verdicts import record_and_confirm, undo_and_confirm
from engramrag.decisions.store import MERGE, MERGE_VERDICTS, DecisionsStoreError, Verdict
from engramrag.resolve.queue import needing_person
from engramrag.store import Home, StoreBusy

PAGE_SIZE = 10
EVIDENCE_SHOWN = 3
RECENT_SHOWN = 10
SHOW_ALL, SHOW_AUTOMATIC, SHOW_PERSON = "All pending", "Merged automatically", "Needs a person"
ORDER = {
    SHOW_PERSON: "most uncertain and most documents reached first (uncertainty × documents a merge joins)",
    SHOW_AUTOMATIC: "best score first",
}
# How a verdict reads between the two labels: "left <phrase> right".
PHRASES = {
    "same": "is the same as",
    "broader": "is broader than",
    "narrower": "is narrower than",
    "related": "is related to",
    "distinct": "is distinct from",
}
HELP = {
    "same": "Both labels name one thing: their mentions are joined into one node.",
    "broader": "The left label is the broader notion; the right one is a kind or a part of it.",
    "narrower": "The left label is the narrower notion: a kind or a part of the right one.",
    "related": "Two different things that belong together (kept apart, linked).",
    "distinct": "Different things: never merged, not even automatically or through a third label.",
}
MARK = "background: rgba(255, 196, 0, 0.45); padding: 0 2px; border-radius: 3px"


def render() -> None:
    path, home = page_header("Merge queue")
    if home is None:
        return
    operator = operator_input()
    show_confirmation()
    try:
        with st.spinner(f"Reading the merge candidates of {path} (waits while a build is writing)…"):
            queue = pending_merges(home)
            blocked = blocked_merges(home)
    except (StoreBusy, DecisionsStoreError) as error:
        st.warning(str(error))
        return
    if queue.columns.empty:
        st.info(nothing_built_message(path) + " The merge candidates are computed by the build's resolution step.")
        return
    if not operator:
        st.warning("Type your name in the sidebar: every verdict records who made it.")
    _headline(home, queue, blocked)
    _pending(home, queue, operator)
    _recent(home, operator)
    _blocked(blocked)


def _headline(home: Home, queue: pd.DataFrame, blocked: pd.DataFrame) -> None:
    columns = st.columns(4)
    columns[0].metric("Pending pairs", len(queue))
    columns[1].metric("Merged automatically", int(queue["auto_merge"].sum()) if len(queue) else 0,
                      help="Pairs the build merges on its own (a declared alias or a spelling variant) unless "
                      "someone objects here.")
    columns[2].metric("Decided by people", len(recent_verdicts(home, MERGE, limit=None)))
    columns[3].metric("Blocked joins", len(blocked), help="Joins the last build refused; see the bottom of the page.")


def _pending(home: Home, queue: pd.DataFrame, operator: str) -> None:
    st.subheader("Pending pairs")
    if queue.empty:
        st.success("Nothing to review: every candidate pair has a verdict. New pairs appear after the next build.")
        return
    left, right = st.columns([3, 2])
    needle = left.text_input("Filter", key="merge_filter", placeholder="a label or key, e.g. postgres",
                             persist_state="session")
    show = right.segmented_control("Show", [SHOW_PERSON, SHOW_AUTOMATIC, SHOW_ALL], default=SHOW_PERSON,
                                   key="merge_show", persist_state="session") or SHOW_PERSON
    shown = _filtered(queue, needle or "", show)
    if shown.empty:
        st.info("No pending pair matches the filter.")
        return
    pages = max(1, -(-len(shown) // PAGE_SIZE))
    page = st.pagination(pages, key="merge_page") if pages > 1 else 1
    first = (min(page, pages) - 1) * PAGE_SIZE
    order = ORDER.get(show, "best score first")
    st.caption(f"Pairs {first + 1}–{min(first + PAGE_SIZE, len(shown))} of {len(shown)}, {order}.")
    for row in shown.iloc[first : first + PAGE_SIZE].to_dict("records"):
        _card(home, row, operator)


def _filtered(queue: pd.DataFrame, needle: str, show: str) -> pd.DataFrame:
    frame = queue
    if show == SHOW_AUTOMATIC:
        frame = frame[frame["auto_merge"]]
    elif show == SHOW_PERSON:
        frame = needing_person(frame)
    needle = needle.strip().casefold()
    if needle:
        text = (frame["left_label"].fillna("") + "\n" + frame["right_label"].fillna("") + "\n" + frame["left_key"]
                + "\n" + frame["right_key"]).str.casefold()
        frame = frame[text.str.contains(needle, regex=False)]
    return frame


def _card(home: Home, row: dict[str, Any], operator: str) -> None:
    left_label, right_label = row["left_label"] or row["left_key"], row["right_label"] or row["right_key"]
    with st.container(border=True):
        head, score = st.columns([5, 1])
        head.markdown(f"#### {escape_markdown(left_label)} ⟷ {escape_markdown(right_label)}")
        score.metric("score", f"{row['score']:.2f}")
        with head.container(horizontal=True, gap="small"):
            st.badge(f"{row['left_kind']} / {row['right_kind']}", color="gray", icon=":material/category:")
            if "reach" in row:
                st.badge(f"joins {row['reach']} documents", color="blue", icon=":material/description:",
                         help="The documents that mention either label: their retrieval changes with this merge.")
            if row["auto_merge"]:
                st.badge("merged automatically unless you object", color="orange", icon=":material/bolt:")
            if row.get("judge_verdict"):
                st.badge(f"judge: {row['judge_verdict']}", color="violet", help=row.get("judge_reason") or None)
        if row["reasons"]:
            st.caption("Why proposed: " + " · ".join(escape_markdown(str(reason)) for reason in row["reasons"]))
        sides = st.columns(2, border=False)
        for column, label, key, kind, evidence in (
            (sides[0], left_label, row["left_key"], row["left_kind"], row["left_evidence"]),
            (sides[1], right_label, row["right_key"], row["right_kind"], row["right_evidence"]),
        ):
            with column:
                shown_key = "" if key == label.casefold() else f" · key `{key}`"
                st.markdown(f"**{escape_markdown(label)}** · {kind}{shown_key}")
                st.html(_evidence_html(evidence or [], [label, key]))
        with st.container(horizontal=True, gap="small"):
            for verdict in MERGE_VERDICTS:
                st.button(
                    verdict, key=f"merge:{verdict}:{row['left_key']}|{row['right_key']}", help=HELP[verdict],
                    disabled=not operator,
                    on_click=_decide, args=(str(home.root), row, verdict, operator),
                )
            with st.popover("features", icon=":material/tune:"):
                st.json(row["features"] or {})


def _evidence_html(evidence: Sequence[dict[str, Any]], terms: Sequence[str]) -> str:
    if not evidence:
        return "<p style='opacity:0.7'>No evidence sentence was recorded for this side.</p>"
    items = []
    for item in list(evidence)[:EVIDENCE_SHOWN]:
        where = html.escape(f"{item.get('path', '?')}:{item.get('line', '?')}")
        items.append(
            "<div style='margin:0 0 0.6rem 0; padding-left:0.6rem; border-left:3px solid rgba(128,128,128,0.4)'>"
            f"<div style='font-family:monospace; font-size:0.78rem; opacity:0.7'>{where}</div>"
            f"<div style='font-size:0.92rem'>{highlight(str(item.get('text', '')), terms)}</div></div>"
        )
    more = len(evidence) - EVIDENCE_SHOWN
    if more > 0:
        items.append(f"<div style='font-size:0.8rem; opacity:0.7'>and {more} more</div>")
    return "".join(items)


def highlight(text: str, terms: Sequence[str]) -> str:
    """``text`` as HTML with every case-insensitive occurrence of the terms marked (longest first)."""
    wanted = sorted({term for term in terms if term and term.strip()}, key=len, reverse=True)
    if not wanted:
        return html.escape(text)
    pattern = re.compile("|".join(re.escape(term) for term in wanted), re.IGNORECASE)
    out, last = [], 0
    for match in pattern.finditer(text):
        out += [html.escape(text[last : match.start()]), f"<mark style='{MARK}'>{html.escape(match.group())}</mark>"]
        last = match.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def _decide(root: str, row: dict[str, Any], verdict: str, operator: str) -> None:
    left_label, right_label = row["left_label"] or row["left_key"], row["right_label"] or row["right_key"]
    context = {"source": "dashboard", "labels": {row["left_key"]: left_label, row["right_key"]: right_label},
               "score": float(row["score"]), "auto_merge": bool(row["auto_merge"])}
    record_and_confirm(root, MERGE, row["left_key"], row["right_key"], verdict, operator, context,
                       f"“{left_label}” {PHRASES[verdict]} “{right_label}”")


def _reads(verdict: Verdict) -> str:
    left, right = _labels(verdict)
    return f"“{left}” {PHRASES[verdict.verdict]} “{right}”"


def _labels(verdict: Verdict) -> tuple[str, str]:
    labels = (verdict.context or {}).get("labels") or {}
    return str(labels.get(verdict.left_key, verdict.left_key)), str(labels.get(verdict.right_key, verdict.right_key))


def _recent(home: Home, operator: str) -> None:
    st.subheader("Recently decided")
    recent = recent_verdicts(home, MERGE, RECENT_SHOWN)
    if not recent:
        st.caption("No verdicts yet. Pairs you decide move here, where you can undo them.")
        return
    st.caption(f"The newest {len(recent)} verdicts still in force. Undo brings the pair back to the queue "
               "(or restores the verdict it replaced); the history keeps both.")
    for verdict in recent:
        text, button = st.columns([6, 1], vertical_alignment="center")
        left, right = _labels(verdict)
        text.markdown(f"**{escape_markdown(left)}** {PHRASES[verdict.verdict]} **{escape_markdown(right)}**  \n"
                      f":gray[{escape_markdown(verdict.operator)} · {verdict.decided_at[:19].replace('T', ' ')} UTC]")
        button.button("Undo", key=f"undo-merge:{verdict.id}", icon=":material/undo:", disabled=not operator,
                      on_click=undo_and_confirm, args=(str(home.root), MERGE, verdict, operator, _reads))


def _blocked(blocked: pd.DataFrame) -> None:
    conflicts = blocked[blocked["source"] == "person"] if len(blocked) else blocked
    title = f"Blocked merges and conflicts ({len(blocked)})"
    with st.expander(title, icon=":material/block:", expanded=bool(len(conflicts))):
        if blocked.empty:
            st.caption("The last build refused no join.")
            return
        for reason in conflicts["reason"] if len(conflicts) else []:
            st.warning(f"Conflict between people's verdicts: {reason}. Undo one of them to settle it.")
        st.caption("Joins the last build refused: a person's `distinct` reached through a third label, or two "
                   "kinds that cannot be one thing.")
        st.dataframe(
            blocked[["left_key", "right_key", "source", "cause", "reason", "score"]],
            hide_index=True,
            column_config={"reason": st.column_config.TextColumn("reason", width="large"),
                           "score": st.column_config.NumberColumn("score", format="%.2f")},
        )


render()
