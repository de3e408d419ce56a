"""Entity timeline: for one entity, each single-valued property's values over time (owner, price, vendor, status,
deadline...), with the quote, note and date of each, which value is current and why, and which notes replaced
which. Everything comes from the catalog's ``property_values`` and ``document_supersessions`` (written by the
build's timeline step, read through ``revise.history``); this page only draws it and writes nothing."""

from __future__ import annotations

import datetime as dt

import altair as alt
import pandas as pd
import streamlit as st

from dashboards.locations import where
from dashboards.stores import (
    EntityTimeline,
    entity_timeline,
    escape_markdown,
    history_subjects,
    page_header,
)
from engramrag.store import StoreBusy

ALL_PROPERTIES = "all properties"
SUGGESTED = 8
ROW_HEIGHT = 70
FORMS = {"front_matter": "in the front matter", "in_text": "in the text"}


def render() -> None:
    path, home = page_header("Entity timeline")
    if home is None:
        return
    try:
        subjects = history_subjects(home)
    except StoreBusy as busy:
        st.warning(str(busy))
        return
    if subjects is None:
        st.info(f"No value timeline in `{path}` yet: build the vault with `engram build --vault VAULT --home {path}` "
                "(its timeline step records every value of owner, price, vendor, status, deadline...), then reload.")
        return
    name = _pick_name(subjects)
    if not name:
        st.info("No entity has a property whose value changed yet. Type an entity's name above to see the values "
                "the notes give it.")
        return
    try:
        timeline = entity_timeline(home, name)
    except StoreBusy as busy:
        st.warning(str(busy))
        return
    if timeline.entries.empty:
        st.info(_no_versions(name, subjects))
        return
    shown = timeline.only(_pick_property(timeline))
    st.caption("Written in the notes as " + " · ".join(f"**{escape_markdown(alias)}**" for alias in timeline.names))
    _current(shown)
    _chart(shown)
    _table(shown)
    _replacements(shown)


def _pick_name(subjects: list[str]) -> str:
    left, right = st.columns(2)
    chosen = left.selectbox(
        "Entity", subjects, key="history_subject", index=0 if subjects else None,
        placeholder="no entity has changed values yet",
        help="Entities whose properties took more than one value, the most values first.",
    )
    typed = right.text_input(
        "Or type any name", key="history_name", placeholder="e.g. billing service, 결제 서비스",
        help="As any note writes it; aliases joined by the resolution overlay work too. Overrides the list.",
    )
    return (typed or "").strip() or (chosen or "")


def _no_versions(name: str, subjects: list[str]) -> str:
    message = f"No versions for “{escape_markdown(name)}”"
    if not subjects:
        return message + ": no entity has a property whose value changed in this vault yet."
    suggested = ", ".join(f"**{escape_markdown(subject)}**" for subject in subjects[:SUGGESTED])
    return message + f"; try one of {suggested} (or pick one from the list)."


def _pick_property(timeline: EntityTimeline) -> str | None:
    properties = timeline.properties
    if len(properties) < 2:
        return None
    chosen = st.selectbox("Property", [ALL_PROPERTIES, *properties], key="history_property")
    return None if chosen == ALL_PROPERTIES else chosen


def _current(timeline: EntityTimeline) -> None:
    current = timeline.entries[timeline.entries["current"]]
    if current.empty:
        return
    columns = st.columns(min(len(current), 4))
    for index, row in enumerate(current.itertuples(index=False)):
        columns[index % len(columns)].metric(
            row.property, row.value, help=f"{row.why} · {where(row.doc, row.line)} · {row.date or 'undated'}: "
            f"“{row.quote}”",
        )


def chart_frame(entries: pd.DataFrame, today: dt.date | None = None) -> pd.DataFrame:
    """One row per dated value: its interval runs from its note's date to the next later date of the same property
    (a current value to ``today``), so the chart shows how long each value held."""
    until = (today or dt.date.today()).isoformat()
    dated = entries.assign(start=entries["date"].map(_iso_day)).dropna(subset=["start"])
    rows = []
    for _, group in dated.groupby("property", sort=False):
        days = sorted(set(group["start"]))
        for row in group.sort_values(["start", "doc"]).itertuples(index=False):
            later = [day for day in days if day > row.start]
            end = later[0] if later else max(until, row.start)
            rows.append({
                "property": row.property, "value": row.value, "start": row.start, "end": end,
                "date": row.date, "date_source": row.date_source or "", "document": where(row.doc, row.line),
                "quote": row.quote, "why": row.why, "version": int(row.version), "current": bool(row.current),
                "state": "current" if row.current else "replaced",
            })  # fmt: skip
    return pd.DataFrame(rows, columns=["property", "value", "start", "end", "date", "date_source", "document", "quote",
                                       "why", "version", "current", "state"])


def _iso_day(value: object) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    parsed = pd.to_datetime(value, errors="coerce")
    return None if pd.isna(parsed) else parsed.date().isoformat()


def timeline_chart(frame: pd.DataFrame) -> alt.LayerChart:
    """Properties as rows, time across: a bar per value's interval, a point at its note's date (filled and larger
    for the current value) and the value written beside it; colour is the value."""
    properties = list(dict.fromkeys(frame["property"]))
    base = alt.Chart(frame).encode(
        y=alt.Y("property:N", title=None, sort=properties, axis=alt.Axis(labelLimit=240)),
        color=alt.Color("value:N", title="value", sort=list(dict.fromkeys(frame["value"]))),
        tooltip=[
            alt.Tooltip("property:N"), alt.Tooltip("value:N"), alt.Tooltip("state:N", title="version"),
            alt.Tooltip("document:N"), alt.Tooltip("date:N"), alt.Tooltip("date_source:N", title="date from"),
            alt.Tooltip("quote:N"), alt.Tooltip("why:N"),
        ],
    )
    x = alt.X("start:T", title="date", scale=alt.Scale(type="utc", padding=16),
              axis=alt.Axis(format="%Y-%m-%d", labelAngle=0, labelOverlap="greedy", tickCount=6))
    intervals = base.mark_bar(height=10, cornerRadius=3).encode(
        x=x, x2="end:T",
        opacity=alt.condition("datum.current", alt.value(0.85), alt.value(0.35)),
    )
    replaced = base.transform_filter("!datum.current").mark_point(filled=False, size=110, strokeWidth=2).encode(x=x)
    current = base.transform_filter("datum.current").mark_point(
        filled=True, size=260, stroke="#111827", strokeWidth=1.5, opacity=1
    ).encode(x=x)
    label = {"align": "left", "dx": 8, "dy": -14, "fontSize": 12}
    replaced_labels = base.transform_filter("!datum.current").mark_text(**label).encode(x=x, text="value:N")
    current_labels = base.transform_filter("datum.current").mark_text(fontWeight="bold", **label).encode(
        x=x, text="value:N"
    )
    height = max(120, ROW_HEIGHT * len(properties))
    return alt.layer(intervals, replaced, current, replaced_labels, current_labels).properties(height=height)


def _chart(timeline: EntityTimeline) -> None:
    st.subheader("Timeline")
    frame = chart_frame(timeline.entries)
    undated = len(timeline.entries) - len(frame)
    if frame.empty:
        st.caption("None of these values has a date (no date in the note's front matter or file name), so they are "
                   "only listed in the table below.")
        return
    st.altair_chart(timeline_chart(frame), width="stretch")
    note = ("Each bar runs from a value's note to the next note that changed the property; the current value "
            "(filled dot, bold) runs to today. Hover a dot for its quote and why it is or is not current.")
    if undated:
        note += f" {undated} value(s) without a date are only in the table."
    st.caption(note)


def history_table(entries: pd.DataFrame) -> pd.DataFrame:
    """The values as the page lists them: when, what, whether it holds now, where it is written and why."""
    return pd.DataFrame({
        "date": entries["date"],
        "property": entries["property"],
        "value": entries["value"],
        "current": entries["current"].astype(bool),
        "document": [where(doc, line) for doc, line in zip(entries["doc"], entries["line"], strict=True)],
        "quote": entries["quote"],
        "why": entries["why"],
        "date from": entries["date_source"],
    })  # fmt: skip


def _table(timeline: EntityTimeline) -> None:
    st.subheader("Values")
    st.dataframe(
        history_table(timeline.entries), hide_index=True, width="stretch",
        column_config={
            "current": st.column_config.CheckboxColumn("current", help="The value that holds now."),
            "quote": st.column_config.TextColumn("quote", width="large"),
            "date from": st.column_config.TextColumn(
                "date from", help="Where the note's date was read: front matter, file name..."),
        },
    )


def replacement_line(row: pd.Series) -> str:
    """One ``document_supersessions`` row as a Markdown line: since when, which note replaced which, what changed,
    why, and who decided."""
    since = row["since"] or row["later_date"] or "undated"
    line = f"`{since}` `{row['later_path']}` replaced `{row['earlier_path']}`"
    if isinstance(row["property"], str):
        line += (f": **{escape_markdown(row['property'])}** {escape_markdown(str(row['earlier_value']))} → "
                 f"**{escape_markdown(str(row['later_value']))}**")
    decided_by = row["decided_by"] if isinstance(row["decided_by"], str) and row["decided_by"] else None
    by = f" by **{escape_markdown(decided_by)}**" if decided_by else ""
    if row["reason"] == "later_value":
        line += " · a later note gives another value (a machine proposal nobody reviewed yet)"
    elif row["reason"] == "accepted":
        line += f" · accepted{by or ' by a reviewer'}"
    elif row["reason"] == "declared":
        line += f" · declared{by} {FORMS.get(row['form'], 'in the notes')}"
    else:
        line += f" · {escape_markdown(str(row['reason']))}{by}"
    if row["form"] != "property" and isinstance(row["later_quote"], str):
        line += f": “{escape_markdown(row['later_quote'])}”"
    return line


def _replacements(timeline: EntityTimeline) -> None:
    st.subheader("What replaced what")
    if timeline.supersessions.empty:
        st.caption("No note of this timeline replaced another.")
        return
    rows = timeline.supersessions.iterrows()
    st.markdown("\n".join(f"- {replacement_line(row)}" for _, row in rows))
    st.caption("Review or reject these in the Supersession queue; a rejected pair is left out at the next build.")


render()
