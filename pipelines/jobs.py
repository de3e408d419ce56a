"""Jobs over the lifecycle assets."""

import dagster as dg

from assets.partitions import bucket_partitions

document_lifecycle_job = dg.define_asset_job(
    "document_lifecycle",
    selection=dg.AssetSelection.groups("lifecycle", "retrieval"),
    partitions_def=bucket_partitions,
    description="Sync, extract, catalogue and embed the documents of one or more hash buckets, refresh the "
    "retrieval index, then run the checks.",
)
