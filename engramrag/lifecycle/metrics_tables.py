"""Storing the lifecycle metrics as catalog tables (``metrics_<name>``), after every build."""

from __future__ import annotations

import os

from engramrag.catalog.connection import catalog_writer, replace_rows
from engramrag.catalog.schema import METRICS_TABLES, metrics_table
from engramrag.metrics.lifecycle import load_prices, read_lifecycle_metrics
from engramrag.store import Home
from engramrag.vault.config import VaultConfig

PRICES_ENV = "ENGRAM_PRICES"  # a JSON or YAML file: {model: {input: USD per 1M tokens, output: ...}}


def store_lifecycle_metrics(home: Home, config: VaultConfig, prices_file: str | None = None) -> dict[str, int]:
    """Recompute every lifecycle table and replace its ``metrics_*`` copy; returns the row count of each."""
    prices_file = prices_file or os.environ.get(PRICES_ENV)
    prices = load_prices(prices_file) if prices_file else None
    metrics = read_lifecycle_metrics(home, prices)
    if metrics is None:
        return {}
    counts = {}
    with catalog_writer(home, config.bucket_count) as catalog:
        catalog.execute("BEGIN")
        for name, frame in metrics.tables().items():
            replace_rows(catalog, metrics_table(name), METRICS_TABLES[name], frame)
            counts[name] = len(frame)
        catalog.execute("COMMIT")
    return counts
