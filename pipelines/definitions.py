"""The Dagster code location (workspace.yaml points here)."""

import dagster as dg

from assets.gitgraph import git_decision_graph, git_repositories_from_env
from assets.resources import stores_from_env
from pipelines.checks import provenance_checks, resolution_checks
from pipelines.git_sensors import git_head_sensor, ingest_git_history_job
from pipelines.jobs import LIFECYCLE_ASSETS, document_lifecycle_job, review_job
from pipelines.schedules import daily_consistency_pass
from pipelines.sensors import decisions_sensor, vault_sensor

defs = dg.Definitions(
    assets=[*LIFECYCLE_ASSETS, git_decision_graph],
    asset_checks=[*provenance_checks, *resolution_checks],
    jobs=[document_lifecycle_job, review_job, ingest_git_history_job],
    sensors=[vault_sensor, decisions_sensor, git_head_sensor],
    schedules=[daily_consistency_pass],
    resources={"engram": stores_from_env(), "git_repos": git_repositories_from_env()},
)
