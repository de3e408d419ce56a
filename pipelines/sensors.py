"""The vault sensor: runs only the buckets whose files changed, with run keys derived from the changes."""

import dagster as dg

from assets.resources import EngramStores
from engramrag.extract.registry import extractor_id
from engramrag.lifecycle.plan import plan_changes
from engramrag.lifecycle.scan import VaultMissing
from engramrag.store import StoreBusy
from engramrag.vault.ids import bucket_key
from pipelines.jobs import document_lifecycle_job, review_job

MAX_FILES_PER_TICK = 2000


@dg.sensor(
    job=document_lifecycle_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description=f"Compares the vault with the catalog (reading at most {MAX_FILES_PER_TICK} changed-looking "
    "files per tick) and requests one run per changed bucket.",
)
def vault_sensor(context: dg.SensorEvaluationContext, engram: EngramStores) -> dg.SensorResult | dg.SkipReason:
    try:
        plan = plan_changes(
            engram.home_dir(),
            engram.vault_dir(),
            engram.vault_config(),
            max_files=MAX_FILES_PER_TICK,
            resume_after=context.cursor or "",
            extractor=extractor_id(engram.make_extractor()),
            embedder=engram.make_embedder().name,
        )
    except (StoreBusy, VaultMissing) as problem:
        return dg.SkipReason(str(problem))
    if not plan.buckets:
        return dg.SensorResult(skip_reason=dg.SkipReason("the vault matches the catalog"), cursor=plan.resume_after)
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=f"bucket-{bucket_key(bucket)}-{plan.fingerprint(bucket)}",
                partition_key=bucket_key(bucket),
                tags={"engram/changes": str(len(plan.changes[bucket]))},
            )
            for bucket in plan.buckets
        ],
        cursor=plan.resume_after,
    )


@dg.sensor(
    job=review_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Requests a run of the review assets when people recorded or undid a verdict (dashboard, CLI), so "
    "clusters, supersession edges and the retrieval index follow without a vault change.",
)
def decisions_sensor(context: dg.SensorEvaluationContext, engram: EngramStores) -> dg.SensorResult | dg.SkipReason:
    from engramrag.decisions.store import DecisionsStore

    home = engram.home_dir()
    if not home.decisions_path.exists():
        return dg.SkipReason("no verdicts recorded yet")
    revision = DecisionsStore.for_home(home).revision()
    if revision == context.cursor:
        return dg.SkipReason("no new verdicts")
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=f"verdicts-{revision}")], cursor=revision)
