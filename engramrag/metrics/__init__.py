"""Measurements of the stores: what each build cost and how big the stores grew.

Plain pandas tables read from the catalog, so the Streamlit dashboard draws them and a Dagster asset can store
them without either knowing how they are computed.
"""

from engramrag.metrics.lifecycle import (
    Cost,
    LifecycleMetrics,
    ModelPrice,
    Prices,
    build_runs,
    cost_of,
    document_costs,
    extraction_latency,
    failures,
    load_prices,
    read_lifecycle_metrics,
    rebuild_times,
    run_costs,
    store_sizes,
)

__all__ = [
    "Cost",
    "LifecycleMetrics",
    "ModelPrice",
    "Prices",
    "build_runs",
    "cost_of",
    "document_costs",
    "extraction_latency",
    "failures",
    "load_prices",
    "read_lifecycle_metrics",
    "rebuild_times",
    "run_costs",
    "store_sizes",
]
