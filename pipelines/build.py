"""`engram build`: materialise the lifecycle assets for the buckets that changed, in process."""

from __future__ import annotations

import gc
import logging
import os
import socket
from collections.abc import Collection, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engramrag.catalog.connection import catalog_session
from engramrag.embed.base import Embedder
from engramrag.embed.registry import make_embedder
from engramrag.extract.registry import extractor_id, make_extractor
from engramrag.lifecycle.document_pool import ExtractionConfig
from engramrag.lifecycle.freshness import stale_steps
from engramrag.lifecycle.plan import ChangePlan, plan_changes
from engramrag.lifecycle.step_settings import step_settings, version_config
from engramrag.lifecycle.summary import record_build
from engramrag.retrieve.published_index import index_is_current
from engramrag.store import Home
from engramrag.vault.config import VaultConfig, configured_bucket_count
from engramrag.vault.ids import bucket_key
from pipelines.build_lock import build_lock, process_alive
from pipelines.instance import KeptInstance, open_instance

log = logging.getLogger(__name__)


@dataclass
class BuildOutcome:
    run_id: str
    success: bool
    buckets: list[int]
    checks: dict[str, bool]
    errors: list[str]
    asset_metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # asset -> what it recorded


def run_build(
    home: Home,
    vault: Path,
    extractor: str = "rules",
    full: bool = False,
    embedder: str | None = None,
    extraction: ExtractionConfig | None = None,
    plan: ChangePlan | None = None,
    instance: KeptInstance | None = None,
) -> BuildOutcome:
    """Plan, then materialise the lifecycle through Dagster in this process, recorded in the home's instance.
    One build at a time per home: a build started while another runs waits for it, and says so once. ``plan``: the
    changes the caller found a moment ago (``PlanSettings.changes`` of the same settings; ``engram watch``: looking
    at a 100,000-note vault again took 4.6 s); a change made since is found by the caller's next look. ``instance``:
    the home's instance as a resident caller keeps it open between builds (else the build opens its own)."""
    with build_lock(home, on_wait=log.warning), collector_off():
        return _run_build(home, vault, extractor, full, embedder, extraction, plan, instance)


def chosen_embedder(embedder: str | None) -> str:
    """The embedder a build uses: the one asked for, else ``ENGRAM_EMBEDDER``, else the hashing embedder."""
    return embedder or os.environ.get("ENGRAM_EMBEDDER") or "hash"


@dataclass(frozen=True)
class PlanSettings:
    """What ``run_build`` plans with: the extractor's id and the embedder's name (documents not yet extracted or
    embedded by them count as changes)."""

    extractor: str
    embedder: str

    @classmethod
    def of(cls, home: Home, extractor: str = "rules", embedder: str | None = None) -> PlanSettings:
        return cls.using(home, extractor, make_embedder(chosen_embedder(embedder)))

    @classmethod
    def using(cls, home: Home, extractor: str, embedder_model: Embedder) -> PlanSettings:
        return cls(extractor_id(make_extractor(extractor, home=home)), embedder_model.name)

    def changes(self, home: Home, vault: Path, only: Collection[str] | None = None) -> ChangePlan:
        """The changes ``run_build`` would build (``lifecycle.plan.plan_changes``; of the vault paths ``only``, when
        the caller knows no other file changed)."""
        config = VaultConfig(bucket_count=configured_bucket_count())
        return plan_changes(home, vault, config, extractor=self.extractor, embedder=self.embedder, only=only)


@contextmanager
def collector_off(freeze_after: bool = False) -> Iterator[None]:
    """Python's cyclic garbage collector off during a build; its previous state after. A build allocates millions
    of short-lived containers (rows, tuples, terms) and makes few cycles, and every 100,000 net new containers the
    collector walked all the young ones: 1.0-1.6 s of a one-note edit at 10,000 notes (and 0.5-0.6 s for the full
    collection the build then ran), where a full collection after the build finds 20-900 objects in cycles (after
    a 1,000-note full build: 20, its peak memory 2% higher). Cycles are left to the collector once it is back on.

    Turning it back on is not free: the first allocation after runs a collection of everything the build made
    (0.3 s of an edit at 10,000 notes, 2.0 s at 100,000). So a caller that collects itself (`engram watch`, between
    builds) turns it off around the build, and this leaves it off; a process that ends after the build (`engram
    build`) asks ``freeze_after``: what the block made is frozen (``gc.freeze``) and never walked, cycles included."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze_after:
            gc.freeze()
        if enabled:
            gc.enable()


def _run_build(
    home: Home,
    vault: Path,
    extractor: str,
    full: bool,
    embedder: str | None,
    extraction: ExtractionConfig | None,
    plan: ChangePlan | None = None,
    kept: KeptInstance | None = None,
) -> BuildOutcome:
    extraction = extraction or ExtractionConfig()
    embedder = chosen_embedder(embedder)
    # What the resource below makes and reads, made here without it: a build with nothing to do never imports
    # Dagster (a second of every no-change build).
    bucket_count = configured_bucket_count()
    config = VaultConfig(bucket_count=bucket_count)
    embedder_model = make_embedder(embedder)
    if plan is None and not full:
        plan = PlanSettings.using(home, extractor, embedder_model).changes(home, vault)
    buckets = list(range(bucket_count)) if full or plan is None else plan.buckets
    run_config: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    if buckets:
        reviews_only = False
        tags = {
            "dagster/asset_partition_range_start": bucket_key(min(buckets)),
            "dagster/asset_partition_range_end": bucket_key(max(buckets)),
            "engram/trigger": "cli",
        }
        if full:
            tags["engram/pass"] = "consistency"
        run_config["ops"] = {
            "documents": {"config": {"verify_hashes": full}},
            "document_embeddings": {"config": {"full": full}},
        }
    elif not stale_steps(home, step_settings(embedder_model.name, version_config())) and index_is_current(
        home, embedder_model
    ):
        # Nothing changed in the vault, no verdict since the last build, every step's outputs current: the build
        # is recorded and nothing runs.
        run_id = f"unchanged-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')}"
        record_build(home, config, run_id, [])
        return BuildOutcome(run_id, True, [], {}, [])
    else:  # nothing changed in the vault: apply what people decided since the last build
        reviews_only = True
        tags = {"engram/trigger": "cli"}
    tags |= {"engram/pid": str(os.getpid()), "engram/host": socket.gethostname()}
    # Imported only when a job runs: the assets import the stores' libraries (LanceDB, great-expectations), which
    # cost a no-change build several seconds.
    import dagster as dg

    from assets.resources import EngramStores
    from pipelines.checks import provenance_checks, resolution_checks
    from pipelines.jobs import LIFECYCLE_ASSETS, document_lifecycle_job, review_job

    stores = EngramStores(
        home=str(home.root), vault=str(vault), extractor=extractor, embedder=embedder,
        extract_processes=extraction.processes,
        extract_min_documents=extraction.min_documents,
    )

    job = review_job if reviews_only else document_lifecycle_job
    with nullcontext(kept.get()) if kept is not None else open_instance(home) as instance:
        release_abandoned_runs(instance)
        # The named job, as the sensors and the schedule run it, so the UI's runs say what each build was.
        definitions = dg.Definitions(
            assets=LIFECYCLE_ASSETS, asset_checks=[*provenance_checks, *resolution_checks], jobs=[job],
            resources={"engram": stores},
        )  # fmt: skip
        with catalog_session(home, bucket_count) if kept is not None and _small(plan) else nullcontext():
            result = definitions.resolve_job_def(job.name).execute_in_process(
                run_config=run_config, instance=instance, tags=tags, raise_on_error=False
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
        _root_message(event.event_specific_data.error)
        for event in result.all_events
        if event.event_type_value == "STEP_FAILURE" and event.event_specific_data.error
    ]
    return BuildOutcome(result.run_id, result.success, buckets, checks, errors, _asset_metadata(result.all_events))


# A resident builder's build of at most this many changed files keeps the catalog attached for its run
# (``catalog_session``); a larger one lets other processes' readers in between its steps.
SESSION_MAX_CHANGES = 32


def _small(plan: ChangePlan | None) -> bool:
    return plan is not None and sum(len(entries) for entries in plan.changes.values()) <= SESSION_MAX_CHANGES


def _asset_metadata(events) -> dict[str, dict[str, Any]]:
    """Per asset the run materialised, the metadata it recorded (plain values; the last partition's wins)."""
    recorded: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.event_type_value == "ASSET_MATERIALIZATION":
            materialization = event.event_specific_data.materialization
            recorded[materialization.asset_key.to_user_string()] = {
                key: getattr(value, "value", value) for key, value in materialization.metadata.items()
            }
    return recorded


def describe_build(documents: int, last: dict[str, Any] | None) -> str:
    """The line `engram build` and `engram status` print for a build (``last``: ``read_status``'s
    ``last_build``). Each of the ``documents`` live documents is counted once: extracted, failed (it keeps its
    previous graphs and the next build tries it again) or unchanged (nothing to do); deleted documents and
    rejected files are not live documents, so they are named after the sum, not in it."""
    if not last:
        return f"{documents} documents, never built"
    failed = last.get("failed", 0)
    retried = " (retried by the next build)" if failed else ""
    return (
        f"{documents} documents: {last.get('extracted', 0)} extracted, {failed} failed{retried}, "
        f"{last.get('unchanged', 0)} unchanged; {last.get('deleted', 0)} deleted, "
        f"{last.get('rejected', 0)} rejected files"
    )


def _root_message(error) -> str:
    """The step's error with what the asset raised: Dagster wraps it in its own message as the direct cause."""
    message = error.message.strip()
    cause = getattr(error, "cause", None)
    return f"{message} {cause.message.strip()}" if cause is not None else message


def release_abandoned_runs(instance) -> list[str]:
    """Mark as failed the `engram build` runs of this machine whose process is gone (killed, crashed), and
    free the concurrency slots held by runs that are finished, failed or unknown to the instance. Without this
    the pool of size 1 stays taken by a dead run and the next build waits for it forever. Their work is not
    lost: the documents they did not finish are extracted by the next build."""
    import dagster as dg

    released = []
    records = instance.get_run_records(
        filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.NOT_STARTED],
            tags={"engram/trigger": "cli", "engram/host": socket.gethostname()},
        )
    )
    for record in records:
        run = record.dagster_run
        pid = int(run.tags.get("engram/pid", "0"))
        if pid and not process_alive(pid):
            instance.report_run_failed(
                run, f"the `engram build` process (pid {pid}) ended without finishing this run; the next build "
                "resumed its work"
            )
            released.append(run.run_id)
    storage = instance.event_log_storage
    for key in storage.get_concurrency_keys():
        info = storage.get_concurrency_info(key)
        holders = {slot.run_id for slot in info.claimed_slots} | {step.run_id for step in info.pending_steps}
        for run_id in holders:
            run = instance.get_run_by_id(run_id)
            if run is None or run.is_finished or run_id in released:
                storage.free_concurrency_slots_for_run(run_id)
    return released
