"""The lifecycle cost tables the dashboard draws."""

import dagster as dg

from assets.resources import STORE_POOL, EngramStores
from assets.retrieval import retrieval_index
from engramrag.lifecycle.metrics_tables import store_lifecycle_metrics


@dg.asset(
    deps=[retrieval_index],
    group_name="metrics",
    kinds={"duckdb"},
    pool=STORE_POOL,
    description="Per run and over time: documents extracted vs unchanged, extraction latency p50/p95, tokens and "
    "cost per document (priced from ENGRAM_PRICES), store sizes, failures. Stored as metrics_* catalog tables.",
)
def lifecycle_metrics(engram: EngramStores) -> dg.MaterializeResult:
    rows = store_lifecycle_metrics(engram.home_dir(), engram.vault_config())
    return dg.MaterializeResult(metadata={f"{name}_rows": count for name, count in rows.items()})
