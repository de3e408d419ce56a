"""The Dagster code location (workspace.yaml points here)."""

import dagster as dg

from assets.catalog import document_catalog
from assets.documents import document_quads, documents
from assets.resources import stores_from_env
from assets.retrieval import document_embeddings, retrieval_index
from pipelines.checks import provenance_checks
from pipelines.jobs import document_lifecycle_job
from pipelines.schedules import daily_consistency_pass
from pipelines.sensors import vault_sensor

defs = dg.Definitions(
    assets=[documents, document_quads, document_catalog, document_embeddings, retrieval_index],
    asset_checks=provenance_checks,
    jobs=[document_lifecycle_job],
    sensors=[vault_sensor],
    schedules=[daily_consistency_pass],
    resources={"engram": stores_from_env()},
)
