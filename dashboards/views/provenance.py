"""Provenance explorer: for one document, every statement the extractor took from it, the exact source lines of
each, who extracted it (extractor, version, model), the entities it mentions with the clusters resolution put
them in, and a picture of an entity's relations across the vault, as the retrieval graph joins them. It answers
"where did the machine get this?" without opening the stores by hand."""

from __future__ import annotations

import html
import textwrap
from typing import Any

import pandas as pd
import streamlit as st

from dashboards.stores import (
    NEIGHBOURHOOD_LIMIT,
    DocumentProvenance,
    Neighbourhood,
    document_index,
    document_provenance,
    entity_neighbourhood,
    escape_markdown,
    nothing_built_message,
    page_header,
)
from engramrag.store import Home, StoreBusy

CONTEXT_LINES = 4
LABEL_WIDTH = 20
KIND_COLOURS = {
    "Person": "#fde68a", "Organization": "#bfdbfe", "Place": "#bbf7d0", "Project": "#fbcfe8", "Artifact": "#ddd6fe",
    "Concept": "#f3f4f6", "Event": "#fed7aa", "Decision": "#99f6e4", "Task": "#fecaca", "Document": "#e5e7eb",
    "Quantity": "#e0f2fe",
}  # fmt: skip
LINE_MARK = "background: rgba(255, 196, 0, 0.18)"
SPAN_MARK = "background: rgba(255, 196, 0, 0.55); border-radius: 2px"


def render() -> None:
    path, home = page_header("Provenance explorer")
    if home is None:
        return
    try:
        documents = document_index(home)
    except StoreBusy as busy:
        st.warning(str(busy))
        return
    if documents.empty:
        st.info(nothing_built_message(path))
        return
    titles = dict(zip(documents["doc_id"], documents["path"] + " — " + documents["title"].fillna(""), strict=True))
    doc_id = st.selectbox("Document", list(titles), format_func=titles.__getitem__, key="provenance_doc",
                          placeholder="type to search by path or title", persist_state="session")
    if doc_id is None:
        return
    try:
        provenance = document_provenance(home, doc_id)
    except StoreBusy as busy:
        st.warning(str(busy))
        return
    if provenance is None:
        st.info("That document is no longer in the catalog; pick another one.")
        return
    _headline(provenance)
    _statements(provenance)
    _entities(provenance)
    _neighbourhood(home, provenance)


def _headline(provenance: DocumentProvenance) -> None:
    st.markdown(f"### {escape_markdown(provenance.title)}  \n`{provenance.path}` · id `{provenance.doc_id}`")
    statements = provenance.statements
    columns = st.columns(4)
    columns[0].metric("Statements", len(statements))
    columns[1].metric("Asserted by the author", int((statements["role"] == "assertion").sum()))
    columns[2].metric("Proposed by the machine", int((statements["role"] == "analysis").sum()),
                      help="Analysis statements (co-occurrence in a sentence) are catalog rows and search-graph "
                           "edges, not quads; the analysis graph holds the supersessions later steps propose.")
    columns[3].metric("Entities", len(provenance.entities))
    runs = provenance.extraction
    succeeded = runs[runs["status"] == "ok"] if len(runs) else runs
    if succeeded.empty:
        st.warning("No successful extraction of this document is recorded.")
        return
    last = succeeded.iloc[0]
    model = last["model"] if isinstance(last["model"], str) and last["model"] else "no model (rules)"
    st.markdown(
        f"**Extractor** `{last['extractor']}` version `{last['extractor_version']}` · model `{model}` · "
        f"extracted {last['finished_at']:%Y-%m-%d %H:%M:%S} in {last['latency_ms']:.0f} ms · "
        f"{int(last['tokens_in'])} tokens in, {int(last['tokens_out'])} out"
    )
    if len(runs) > 1:
        with st.expander(f"All {len(runs)} extraction runs of this document"):
            st.dataframe(runs, hide_index=True)


def _statements(provenance: DocumentProvenance) -> None:
    st.subheader("Statements")
    statements = provenance.statements
    if statements.empty:
        st.info("The extractor found no statement in this document.")
        return
    role = st.segmented_control("Role", ["all", "assertion", "analysis"], default="all", key="provenance_role")
    shown = statements if role in (None, "all") else statements[statements["role"] == role]
    table = pd.DataFrame({
        "relation": shown["relation"],
        "subject": shown["subject_label"],
        "object": shown["object_label"],
        "role": shown["role"],
        "extractor": shown["extractor"],
        "lines": [_lines(a, b) for a, b in zip(shown["line_start"], shown["line_end"], strict=True)],
    })
    st.dataframe(table, hide_index=True, key="provenance_statements",
                 column_config={"object": st.column_config.TextColumn("object", width="large")})
    picked = st.selectbox(
        "Show a statement's source lines", list(shown["statement_id"]), key="provenance_statement",
        format_func=lambda sid: _describe(shown.loc[shown["statement_id"] == sid].iloc[0]),
    )
    if picked is None:
        return
    row = statements.loc[statements["statement_id"] == picked].iloc[0]
    if pd.isna(row["line_start"]):
        st.info("The extractor could not locate this statement's exact span in the text, so it names no lines.")
        return
    st.html(source_html(provenance.text, int(row["line_start"]), int(row["line_end"]),
                        _int(row["char_start"]), _int(row["char_end"])))
    with st.expander("The whole document, this statement marked"):
        st.html(source_html(provenance.text, int(row["line_start"]), int(row["line_end"]),
                            _int(row["char_start"]), _int(row["char_end"]), whole=True))


def _describe(row: pd.Series) -> str:
    return f"{_lines(row['line_start'], row['line_end']) or 'no span'} · {row['subject_label']} — " \
           f"{row['relation']} → {row['object_label']} ({row['role']})"


def _lines(start: Any, end: Any) -> str:
    if pd.isna(start):
        return ""
    return f"{int(start)}" if pd.isna(end) or int(end) == int(start) else f"{int(start)}–{int(end)}"


def _int(value: Any) -> int | None:
    return None if pd.isna(value) else int(value)


def source_html(text: str, line_start: int, line_end: int, char_start: int | None, char_end: int | None,
                whole: bool = False) -> str:
    """Numbered source lines around (or, ``whole``, all of) ``line_start..line_end``, those lines shaded and the
    exact character span marked inside them."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    first = 1 if whole else max(1, line_start - CONTEXT_LINES)
    last = len(lines) if whole else min(len(lines), line_end + CONTEXT_LINES)
    rows = []
    for number in range(first, last + 1):
        line, start = lines[number - 1], offsets[number - 1]
        chosen = line_start <= number <= line_end
        body = html.escape(line)
        if chosen and char_start is not None and char_end is not None:
            a, b = max(0, char_start - start), min(len(line), char_end - start)
            if a < b:
                body = (f"{html.escape(line[:a])}<mark style='{SPAN_MARK}'>{html.escape(line[a:b])}</mark>"
                        f"{html.escape(line[b:])}")
        rows.append(
            f"<div style='display:flex;{LINE_MARK if chosen else ''}'>"
            f"<span style='flex:0 0 3.5em; text-align:right; padding-right:0.9em; opacity:0.5; user-select:none'>"
            f"{number}</span><span style='white-space:pre-wrap; word-break:break-word; flex:1'>{body or '&nbsp;'}"
            "</span></div>"
        )
    height = "max-height: 32rem; overflow-y: auto;" if whole else ""
    return (
        "<div style='font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.82rem; "
        "line-height: 1.5; border: 1px solid rgba(128,128,128,0.3); border-radius: 0.5rem; padding: 0.5rem 0.4rem; "
        f"{height}'>{''.join(rows)}</div>"
    )


def _entities(provenance: DocumentProvenance) -> None:
    st.subheader("Entities and their clusters")
    entities = provenance.entities
    if entities.empty:
        st.info("The extractor found no entity in this document.")
        return
    clustered = int((entities["cluster_key"] != "").sum())
    st.caption(f"{clustered} of {len(entities)} entities are joined with others by resolution. The stable key is "
               "the normalised label that joins mentions across documents; the cluster is what the overlay merged.")
    st.dataframe(
        entities[["label", "kind", "mentions", "first_line", "stable_key", "cluster_key", "cluster_members"]],
        hide_index=True,
        column_config={
            "first_line": st.column_config.NumberColumn("first line", format="%d"),
            "stable_key": "stable key",
            "cluster_key": "cluster",
            "cluster_members": st.column_config.ListColumn("other members of the cluster", width="large"),
        },
    )


def _neighbourhood(home: Home, provenance: DocumentProvenance) -> None:
    st.subheader("Neighbourhood")
    entities = provenance.entities
    if entities.empty:
        return
    labels = dict(zip(entities["entity_key"], entities["label"] + " (" + entities["kind"] + ")", strict=True))
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    key = left.selectbox("Entity", list(labels), format_func=labels.__getitem__, key="provenance_entity")
    analysis = right.toggle("Include machine-proposed relations", value=True, key="provenance_analysis",
                            help="Co-occurrence in a sentence and other analysis statements, drawn dashed.")
    if key is None:
        return
    label = entities.loc[entities["entity_key"] == key, "label"].iloc[0]
    try:
        around = entity_neighbourhood(home, label, NEIGHBOURHOOD_LIMIT, include_analysis=analysis)
    except StoreBusy as busy:
        st.warning(str(busy))
        return
    if not around.edges:
        st.info(f"No relation links “{label}” to another entity in any document.")
        return
    st.graphviz_chart(neighbourhood_dot(around), width="stretch")
    left_out = f"; {around.left_out} weaker neighbours left out" if around.left_out else ""
    st.caption(f"{len(around.nodes) - 1} neighbours across the vault, joined by stable key and cluster{left_out}. "
               "Solid: asserted by an author; dashed: proposed by the machine; ×n: statements saying it.")


def neighbourhood_dot(around: Neighbourhood) -> str:
    """The neighbourhood as DOT, the centre in the middle and its neighbours around it (twopi). The statements
    between one pair of nodes become one edge, labelled with their relations, so a pair that links both ways or
    says two things is still one line; dashed when only the machine proposed it."""
    pairs: dict[tuple[str, str], list[tuple[bool, str, int, bool]]] = {}
    for source, target, relation, count, analysis in around.edges:
        if source in around.nodes and target in around.nodes:
            pair = (source, target) if source <= target else (target, source)
            pairs.setdefault(pair, []).append((source == pair[0], relation, count, analysis))
    lines = [
        "digraph neighbourhood {",
        f'  layout=twopi; root={_quote(around.centre)}; ranksep=1.5; overlap=false; splines=true; '
        'bgcolor="transparent";',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, color="#9ca3af"];',
        '  edge [fontname="Helvetica", fontsize=8, color="#6b7280", fontcolor="#4b5563", arrowsize=0.7];',
    ]
    for node, (label, kind) in sorted(around.nodes.items()):
        centre = node == around.centre
        extra = ', penwidth=2.5, color="#b45309", fontsize=12' if centre else ""
        text = _quote(textwrap.fill(label, LABEL_WIDTH) + "\n" + kind)
        lines.append(f"  {_quote(node)} [label={text}, fillcolor={_quote(KIND_COLOURS.get(kind, '#ffffff'))}{extra}];")
    for (first, second), said in sorted(pairs.items()):
        counts: dict[str, int] = {}
        for _, relation, count, _ in said:
            counts[relation] = counts.get(relation, 0) + count
        label = ", ".join(relation if n == 1 else f"{relation} ×{n}" for relation, n in sorted(counts.items()))
        forward, backward = any(way for way, *_ in said), not all(way for way, *_ in said)
        direction = "both" if forward and backward else "forward" if forward else "back"
        style = ", style=dashed" if all(analysis for *_, analysis in said) else ""
        lines.append(f"  {_quote(first)} -> {_quote(second)} [label={_quote(label)}, dir={direction}{style}];")
    lines.append("}")
    return "\n".join(lines)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


render()
