"""`engram build`: materialise the lifecycle assets for the buckets that changed, in process."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engramrag.lifecycle.plan import plan_changes
from engramrag.store import Home
from engramrag.vault.config import VaultConfig
from engramrag.vault.ids import bucket_key
from pipelines.instance import prepare_instance


@dataclass
class BuildOutcome:
    run_id: str
    success: bool
    buckets: list[int]
    checks: dict[str, bool]
    errors: list[str]


def run_build(home: Home, vault: Path, extractor: str = "rules", full: bool = False) -> BuildOutcome:
    """Plan, then materialise the lifecycle through Dagster in this process, recorded in the home's instance."""
    os.environ.update({"ENGRAM_HOME": str(home.root), "ENGRAM_VAULT": str(vault), "ENGRAM_EXTRACTOR": extractor})
    prepare_instance(home)

    import dagster as dg

    from assets.catalog import document_catalog
    from assets.documents import document_quads, documents
    from assets.partitions import BUCKET_COUNT
    from assets.resources import EngramStores
    from pipelines.checks import provenance_checks

    config = VaultConfig(bucket_count=BUCKET_COUNT)
    buckets = list(range(BUCKET_COUNT)) if full else plan_changes(home, vault, config).buckets
    stores = EngramStores(home=str(home.root), vault=str(vault), extractor=extractor)
    run_config: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    if buckets:
        selection = [documents, document_quads, document_catalog]
        tags = {
            "dagster/asset_partition_range_start": bucket_key(min(buckets)),
            "dagster/asset_partition_range_end": bucket_key(max(buckets)),
            "engram/trigger": "cli",
        }
        if full:
            tags["engram/pass"] = "consistency"
        run_config["ops"] = {"documents": {"config": {"verify_hashes": full}}}
    else:
        selection = [document_catalog]
        tags = {"engram/trigger": "cli"}
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize(
            [*selection, *provenance_checks],
            instance=instance,
            resources={"engram": stores},
            run_config=run_config,
            tags=tags,
            raise_on_error=False,
        )
    checks = {
        evaluation.check_name: evaluation.passed
        for evaluation in (
            event.asset_check_evaluation_data
            for event in result.all_events
            if event.event_type_value == "ASSET_CHECK_EVALUATION"
        )
    }
    errors = [
        event.event_specific_data.error.message.strip()
        for event in result.all_events
        if event.event_type_value == "STEP_FAILURE" and event.event_specific_data.error
    ]
    return BuildOutcome(result.run_id, result.success, buckets, checks, errors)
