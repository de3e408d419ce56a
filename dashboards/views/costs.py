"""Lifecycle costs: what each build extracted, how long extraction took, what it cost, how big the stores are,
and what failed. Every figure comes from ``engramrag.metrics.lifecycle``; this page only draws it."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from dashboards.stores import (
    PRICES_ENV,
    lifecycle_metrics,
    nothing_built_message,
    page_header,
)
from engramrag.metrics.lifecycle import LifecycleMetrics
from engramrag.store import StoreBusy

CALL_COLOURS = {"first tries": "#4c78a8", "retries": "#e45756", "cache hits": "#54a24b"}
OUTCOME_COLOURS = {"extracted": "#4c78a8", "unchanged": "#bab0ac", "failed": "#e45756", "deleted": "#f58518"}
MODE_COLOURS = {"full": "#4c78a8", "incremental": "#54a24b", "no change": "#bab0ac"}
CHART_HEIGHT = 260
TOP_DOCUMENTS = 20


def render() -> None:
    path, home = page_header("Lifecycle costs")
    if home is None:
        return
    try:
        with st.spinner(f"Reading the catalog of {path} (waits while a build is writing it)…"):
            metrics = lifecycle_metrics(home)
    except StoreBusy as busy:
        st.warning(str(busy))
        return
    if metrics is None or metrics.build_runs.empty:
        st.info(nothing_built_message(path))
        return
    _headline(metrics)
    _runs(metrics)
    _latency(metrics)
    _rebuild_times(metrics)
    _tokens_and_cost(metrics)
    _model_calls(metrics)
    _store_sizes(metrics)
    _failures(metrics)


def _headline(metrics: LifecycleMetrics) -> None:
    last = metrics.build_runs.iloc[-1]
    open_failures = int(metrics.failures["still_failing"].sum()) if not metrics.failures.empty else 0
    columns = st.columns(5)
    columns[0].metric("Documents", f"{int(last['documents']):,}")
    columns[1].metric("Builds", len(metrics.build_runs))
    columns[2].metric("Extracted in the last build", f"{int(last['extracted']):,}",
                      help=f"build #{int(last['run'])} ({last['mode']}): {int(last['unchanged']):,} unchanged, "
                      f"{int(last['failed']):,} failed, {int(last['deleted']):,} deleted")
    columns[3].metric("Stores on disk", f"{metrics.store_sizes['mebibytes'].sum():,.1f} MiB")
    columns[4].metric("Open failures", open_failures)


def _run_axis(title: str = "build") -> alt.X:
    return alt.X("label:N", title=title, sort=None, axis=alt.Axis(labelAngle=0))


def _labelled(frame: pd.DataFrame) -> pd.DataFrame:
    labelled = frame.copy()
    labelled["label"] = "#" + labelled["run"].astype(int).astype(str)
    labelled["finished"] = labelled["finished_at"].dt.strftime("%Y-%m-%d %H:%M:%S")
    return labelled


def _runs(metrics: LifecycleMetrics) -> None:
    st.subheader("Documents per build")
    runs = _labelled(metrics.build_runs)
    long = runs.melt(
        id_vars=["label", "run_id", "finished", "mode"], value_vars=list(OUTCOME_COLOURS),
        var_name="outcome", value_name="count",
    )
    chart = alt.Chart(long).mark_bar().encode(
        x=_run_axis(),
        y=alt.Y("count:Q", title="documents", stack=True),
        color=alt.Color("outcome:N", title="outcome", sort=list(OUTCOME_COLOURS),
                        scale=alt.Scale(domain=list(OUTCOME_COLOURS), range=list(OUTCOME_COLOURS.values()))),
        order=alt.Order("outcome_rank:Q"),
        tooltip=["label", "mode", "outcome", "count", "finished", "run_id"],
    ).transform_calculate(
        outcome_rank=f"indexof({list(OUTCOME_COLOURS)!r}, datum.outcome)"
    ).properties(height=CHART_HEIGHT)
    st.altair_chart(chart, width="stretch")
    st.dataframe(
        runs[["label", "mode", "finished", "documents", "extracted", "unchanged", "failed", "deleted", "rejected",
              "quads", "statements", "run_id"]],
        hide_index=True,
        column_config={"label": "build", "finished": "finished at"},
    )


def _latency(metrics: LifecycleMetrics) -> None:
    st.subheader("Extraction latency per build")
    if metrics.extraction_latency.empty:
        st.info("No document has been extracted yet.")
        return
    latency = _labelled(metrics.extraction_latency)
    long = latency.melt(
        id_vars=["label", "extractor", "documents", "finished"], value_vars=["p50_ms", "p95_ms"],
        var_name="percentile", value_name="ms",
    )
    long["percentile"] = long["percentile"].str.removesuffix("_ms")
    chart = alt.Chart(long).mark_line(point=alt.OverlayMarkDef(size=80)).encode(
        x=_run_axis("build (builds that extracted nothing are not shown)"),
        y=alt.Y("ms:Q", title="milliseconds per document"),
        color=alt.Color("percentile:N", title="percentile"),
        strokeDash=alt.StrokeDash("extractor:N", title="extractor"),
        tooltip=["label", "extractor", "percentile", alt.Tooltip("ms:Q", format=".1f"), "documents", "finished"],
    ).properties(height=CHART_HEIGHT)
    st.altair_chart(chart, width="stretch")


def _rebuild_times(metrics: LifecycleMetrics) -> None:
    st.subheader("Incremental vs full builds")
    st.caption(
        "Extraction time is the sum of the per-document extraction latencies of a build (parsing, extracting, "
        "building graphs); writing the stores, embedding and indexing are not included."
    )
    times = _labelled(metrics.rebuild_times)
    colour = alt.Color("mode:N", title="mode",
                       scale=alt.Scale(domain=list(MODE_COLOURS), range=list(MODE_COLOURS.values())))
    left, right = st.columns(2)
    total = alt.Chart(times).mark_bar().encode(
        x=_run_axis(), y=alt.Y("extraction_seconds:Q", title="extraction seconds"), color=colour,
        tooltip=["label", "mode", "extracted", alt.Tooltip("extraction_seconds:Q", format=".3f"), "finished"],
    ).properties(height=CHART_HEIGHT)
    left.altair_chart(total, width="stretch")
    per_document = times.dropna(subset=["seconds_per_document"]).assign(
        ms_per_document=lambda frame: frame["seconds_per_document"] * 1000
    )
    per = alt.Chart(per_document).mark_bar().encode(
        x=_run_axis(), y=alt.Y("ms_per_document:Q", title="ms per extracted document"), color=colour,
        tooltip=["label", "mode", "extracted", alt.Tooltip("ms_per_document:Q", format=".1f")],
    ).properties(height=CHART_HEIGHT)
    right.altair_chart(per, width="stretch")


def no_tokens_message(costs: pd.DataFrame) -> str:
    """Why no token was spent: no extractor called a model, or every model call failed before a reply."""
    with_model = costs[costs["model"].fillna("").astype(str) != ""]
    if with_model.empty:
        extractors = ", ".join(sorted(set(costs["extractor"])))
        return f"No tokens were spent: every extraction so far used {extractors}, which calls no model. Known cost $0."
    failed = int((with_model["status"] == "failed").sum())
    if failed == len(with_model):
        models = ", ".join(sorted(set(with_model["model"].astype(str))))
        return (f"No tokens were spent: all {failed:,} extraction(s) that called a model ({models}) failed before "
                "it answered. See Failures below for why (often the model server is unreachable); nothing is "
                "charged for them. Known cost $0.")
    return "No tokens were spent: every model answer so far came from the response cache. Known cost $0."


def _tokens_and_cost(metrics: LifecycleMetrics) -> None:
    st.subheader("Tokens and cost")
    costs = metrics.document_costs
    if costs.empty:
        st.info("No document has been extracted yet.")
        return
    unknown = costs[costs["cost_usd"].isna()]
    if not unknown.empty:
        notes = ", ".join(sorted(set(unknown["cost_note"].dropna())))
        st.warning(
            f"{len(unknown)} extraction(s) have no cost: {notes}. Name a prices file in {PRICES_ENV} "
            "(YAML or JSON: `model: {input: USD per 1M tokens, output: USD per 1M tokens}`)."
        )
    if int(costs["tokens_in"].sum() + costs["tokens_out"].sum()) == 0:
        st.info(no_tokens_message(costs))
    else:
        _token_charts(metrics)
    shown = _labelled(metrics.run_costs)
    st.dataframe(
        shown[["label", "finished", "documents", "tokens_in", "tokens_out", "cost_usd", "cost_per_document_usd",
               "cost_note"]],
        hide_index=True,
        column_config={
            "label": "build",
            "finished": "finished at",
            "cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.4f"),
            "cost_per_document_usd": st.column_config.NumberColumn("per document (USD)", format="$%.5f"),
            "cost_note": "how the cost was reached",
        },
    )


def _token_charts(metrics: LifecycleMetrics) -> None:
    costs = metrics.document_costs
    latest = costs.sort_values("run").groupby("path", as_index=False).last()
    latest["total"] = latest["tokens_in"] + latest["tokens_out"]
    top = latest.nlargest(TOP_DOCUMENTS, "total")
    long = top.melt(id_vars=["path", "cost_usd"], value_vars=["tokens_in", "tokens_out"],
                    var_name="direction", value_name="tokens")
    per_document = alt.Chart(long).mark_bar().encode(
        y=alt.Y("path:N", title=None, sort="-x", axis=alt.Axis(labelLimit=360)),
        x=alt.X("tokens:Q", title="tokens in the latest extraction", stack=True),
        color=alt.Color("direction:N", title="tokens"),
        tooltip=["path", "direction", "tokens", alt.Tooltip("cost_usd:Q", format="$.5f")],
    ).properties(height=max(CHART_HEIGHT, 30 * len(top)), title=f"Top {len(top)} documents by tokens")
    st.altair_chart(per_document, width="stretch")
    runs = _labelled(metrics.run_costs)
    over_time = alt.Chart(runs.melt(id_vars=["label", "finished"], value_vars=["tokens_in", "tokens_out"],
                                    var_name="direction", value_name="tokens")).mark_bar().encode(
        x=_run_axis(), y=alt.Y("tokens:Q", title="tokens", stack=True), color=alt.Color("direction:N", title="tokens"),
        tooltip=["label", "direction", "tokens", "finished"],
    ).properties(height=CHART_HEIGHT, title="Tokens per build")
    priced = runs.dropna(subset=["cost_usd"]).astype({"cost_usd": "float64"})
    cost = alt.Chart(priced).mark_line(point=True).encode(
        x=_run_axis(), y=alt.Y("cost_usd:Q", title="USD", axis=alt.Axis(format="$,.4f")),
        tooltip=["label", alt.Tooltip("cost_usd:Q", format="$.4f"), "finished"],
    ).properties(height=CHART_HEIGHT, title="Cost per build (builds with unknown prices left out)")
    left, right = st.columns(2)
    left.altair_chart(over_time, width="stretch")
    right.altair_chart(cost, width="stretch")


def _model_calls(metrics: LifecycleMetrics) -> None:
    """Only for homes where a model extracted: requests, retries and cache hits per build, and what each
    document's calls cost. A home extracted by rules alone has no model calls and shows nothing here."""
    runs, documents = metrics.llm_runs, metrics.llm_documents
    if runs.empty:
        return
    st.subheader("Model calls")
    st.caption(
        "One call asks the model about one segment of a document; a retry is a repeated HTTP request of a call "
        "(rate limit, server error, dropped connection, malformed reply); a cache hit is a segment answered from "
        "the response cache, paid for in an earlier build. Tokens and cost count only what was paid in the build."
    )
    columns = st.columns(5)
    columns[0].metric("Requests", f"{int(runs['requests'].sum()):,}")
    columns[1].metric("Retries", f"{int(runs['retries'].sum()):,}")
    columns[2].metric("Cache hits", f"{int(runs['cache_hits'].sum()):,}")
    columns[3].metric("Failed documents", f"{int(runs['failed_documents'].sum()):,}")
    known = not runs["cost_usd"].isna().any()
    columns[4].metric("Model cost", f"${float(runs['cost_usd'].sum()):,.4f}" if known else "unknown",
                      help=None if known else "; ".join(sorted(set(runs["cost_note"].dropna()))))
    shown = _labelled(runs).assign(**{"first tries": lambda frame: frame["requests"] - frame["retries"],
                                      "retries": lambda frame: frame["retries"],
                                      "cache hits": lambda frame: frame["cache_hits"]})
    long = shown.melt(id_vars=["label", "model", "finished"], value_vars=list(CALL_COLOURS), var_name="kind",
                      value_name="count")
    chart = alt.Chart(long).mark_bar().encode(
        x=_run_axis("build (builds without model calls are not shown)"),
        y=alt.Y("count:Q", title="requests and cache hits", stack=True),
        color=alt.Color("kind:N", title=None, sort=list(CALL_COLOURS),
                        scale=alt.Scale(domain=list(CALL_COLOURS), range=list(CALL_COLOURS.values()))),
        tooltip=["label", "model", "kind", "count", "finished"],
    ).properties(height=CHART_HEIGHT, title="Requests, retries and cache hits per build")
    st.altair_chart(chart, width="stretch")
    st.dataframe(
        shown[["label", "model", "documents", "failed_documents", "calls", "requests", "retries", "cache_hits",
               "tokens_in", "tokens_out", "p50_ms", "p95_ms", "cost_usd", "cost_note", "unlocated_quotes"]],
        hide_index=True,
        column_config={
            "label": "build", "failed_documents": "failed", "cache_hits": "cache hits",
            "unlocated_quotes": "quotes not found",
            "p50_ms": st.column_config.NumberColumn("p50 ms", format="%.0f"),
            "p95_ms": st.column_config.NumberColumn("p95 ms", format="%.0f"),
            "cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.5f"),
            "cost_note": "how the cost was reached",
        },
    )
    failed_first = _labelled(documents).assign(ok=lambda frame: frame["status"] != "failed").sort_values(
        ["ok", "run", "path"], ascending=[True, False, True]
    )
    st.caption("Per document, failed extractions first, then the latest build first.")
    st.dataframe(
        failed_first[["label", "path", "status", "segments", "requests", "retries", "cache_hits", "tokens_in",
                      "tokens_out", "cost_usd", "unlocated_quotes", "error"]],
        hide_index=True,
        column_config={
            "label": "build", "cache_hits": "cache hits",
            "unlocated_quotes": st.column_config.NumberColumn(
                "quotes not found", help="Quotes the model gave that are not verbatim in the document: their "
                "entities, relations or decisions were kept without a span."),
            "cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.6f"),
            "error": st.column_config.TextColumn("why it failed", width="large"),
        },
    )


def _store_sizes(metrics: LifecycleMetrics) -> None:
    st.subheader("Store sizes")
    st.caption("Size on disk of each store of this home now.")
    sizes = metrics.store_sizes.assign(text=lambda frame: frame["bytes"].map(_readable_size))
    bars = alt.Chart(sizes).encode(
        y=alt.Y("store:N", title=None, sort="-x"),
        x=alt.X("mebibytes:Q", title="MiB"),
        tooltip=["store", alt.Tooltip("bytes:Q", format=","), alt.Tooltip("mebibytes:Q", format=".2f")],
    )
    chart = (bars.mark_bar() + bars.mark_text(align="left", dx=4).encode(text="text:N")).properties(
        height=40 * len(sizes) + 40
    )
    st.altair_chart(chart, width="stretch")


def _readable_size(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size:,} B"


def _failures(metrics: LifecycleMetrics) -> None:
    st.subheader("Failures")
    if metrics.failures.empty:
        st.success("No failed extractions and no rejected files.")
        return
    st.dataframe(
        metrics.failures[["kind", "path", "reason", "message", "still_failing", "run", "occurred_at"]],
        hide_index=True,
        column_config={"message": st.column_config.TextColumn("message", width="large"),
                       "still_failing": "still failing", "occurred_at": "when", "run": "build"},
    )


render()
