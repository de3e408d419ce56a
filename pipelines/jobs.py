"""Jobs over the lifecycle assets, and the asset lists `engram build` materialises."""

import dagster as dg

from assets.catalog import document_catalog
from assets.documents import document_quads, documents
from assets.metrics import lifecycle_metrics
from assets.partitions import bucket_partitions
from assets.resolution import resolution_candidates, resolution_overlay
from assets.retrieval import document_embeddings, retrieval_index
from assets.revision import accepted_supersessions, document_timeline, supersession_candidates

# Everything after documents changed, in dependency order.
LIFECYCLE_ASSETS = [
    documents,
    document_quads,
    document_catalog,
    document_embeddings,
    resolution_candidates,
    resolution_overlay,
    supersession_candidates,
    accepted_supersessions,
    document_timeline,
    retrieval_index,
    lifecycle_metrics,
]
# What a build runs when no document changed: what people's verdicts change (the overlay, the applied
# supersessions, the index built on them, the metrics; and the catalog step, whose provenance checks then cover the
# quads the applied supersessions wrote), and the global steps the documents feed, which do nothing unless their
# settings or the code changed since they last ran (``lifecycle.freshness``). Without them an upgrade left the
# candidates stale, and every later build ran this job again instead of nothing.
REVIEW_ASSETS = [
    document_catalog, resolution_candidates, resolution_overlay, supersession_candidates, accepted_supersessions,
    document_timeline, retrieval_index, lifecycle_metrics,
]

document_lifecycle_job = dg.define_asset_job(
    "document_lifecycle",
    selection=dg.AssetSelection.groups("lifecycle", "retrieval", "resolution", "revision", "metrics"),
    partitions_def=bucket_partitions,
    description="Sync, extract, catalogue and embed the documents of one or more hash buckets; propose merges and "
    "supersessions; apply people's verdicts; refresh the retrieval index and the metrics; then run the checks.",
)

review_job = dg.define_asset_job(
    "apply_reviews",
    selection=dg.AssetSelection.assets(*REVIEW_ASSETS),
    description="Apply what people decided in the dashboard or with `engram review` (merges, supersessions) to the "
    "clusters, the graphs and the retrieval index; bring the global steps up to date after a change of settings or "
    "code.",
)
