"""The Dagster code location (workspace.yaml points here)."""

import dagster as dg

from assets.resources import stores_from_env
from pipelines.checks import provenance_checks, resolution_checks
from pipelines.jobs import LIFECYCLE_ASSETS, document_lifecycle_job, review_job
from pipelines.schedules import daily_consistency_pass
from pipelines.sensors import decisions_sensor, vault_sensor

defs = dg.Definitions(
    assets=LIFECYCLE_ASSETS,
    asset_checks=[*provenance_checks, *resolution_checks],
    jobs=[document_lifecycle_job, review_job],
    sensors=[vault_sensor, decisions_sensor],
    schedules=[daily_consistency_pass],
    resources={"engram": stores_from_env()},
)
