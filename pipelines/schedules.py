"""A daily full consistency pass: every bucket, every file read and hashed."""

import dagster as dg

from assets.partitions import bucket_partitions
from pipelines.jobs import document_lifecycle_job


@dg.schedule(
    job=document_lifecycle_job,
    cron_schedule="0 3 * * *",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Every night: one run over all buckets that re-reads and re-hashes every file.",
)
def daily_consistency_pass(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    keys = bucket_partitions.get_partition_keys()
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return dg.RunRequest(
        run_key=f"consistency-{day}",
        run_config={"ops": {"documents": {"config": {"verify_hashes": True}}}},
        tags={
            "dagster/asset_partition_range_start": keys[0],
            "dagster/asset_partition_range_end": keys[-1],
            "engram/pass": "consistency",
        },
    )
