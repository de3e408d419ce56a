"""The partitioned stages of the document lifecycle: documents, then their named graphs."""

import dagster as dg

from assets.partitions import bucket_partitions, buckets_of
from assets.resources import STORE_POOL, EngramStores
from engramrag.lifecycle.extraction import extract_documents
from engramrag.lifecycle.sync import sync_documents


class DocumentsConfig(dg.Config):
    verify_hashes: bool = False
    """Read and hash every file instead of trusting unchanged size and modification time."""


@dg.asset(
    partitions_def=bucket_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name="lifecycle",
    kinds={"markdown", "duckdb"},
    pool=STORE_POOL,
    description="Vault documents of each hash bucket, parsed and stored in the catalog; unreadable files "
    "are recorded as rejected with the reason.",
)
def documents(context: dg.AssetExecutionContext, config: DocumentsConfig, engram: EngramStores) -> dg.MaterializeResult:
    buckets = buckets_of(context.partition_keys)
    summary = sync_documents(
        engram.home_dir(), engram.vault_dir(), engram.vault_config(), buckets, context.run_id, config.verify_hashes
    )
    for message in summary.rejected.values():
        context.log.warning(message)
    return dg.MaterializeResult(
        metadata={
            "new": len(summary.new),
            "changed": len(summary.changed),
            "unchanged": summary.unchanged,
            "gone": len(summary.gone),
            "rejected": len(summary.rejected),
        }
    )


@dg.asset(
    deps=[documents],
    partitions_def=bucket_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name="lifecycle",
    kinds={"rdf", "duckdb"},
    pool=STORE_POOL,
    description="Per-document named graphs <doc> and <doc>#analysis in the quad store, re-extracted only for "
    "documents whose text changed; graphs of deleted or renamed documents are removed.",
)
def document_quads(context: dg.AssetExecutionContext, engram: EngramStores) -> dg.MaterializeResult:
    extractor = engram.make_extractor()
    summary = extract_documents(
        engram.home_dir(),
        engram.vault_config(),
        buckets_of(context.partition_keys),
        extractor,
        context.run_id,
        engram.extraction_config(),
    )
    # At info level: `engram build` lists the failed documents in its summary, and a Dagster console logger at
    # warning level would print each reason a second time. The run's log in the Dagster UI keeps every one.
    for path, error in summary.failed.items():
        context.log.info(f"{path}: extraction failed ({error}); it will be retried by the next build.")
    latencies = sorted(summary.latencies_ms)
    unreachable = getattr(extractor, "server_unreachable", None)  # the breaker's line, once it opened
    return dg.MaterializeResult(
        metadata={
            **({"model_server_unreachable": unreachable} if unreachable else {}),
            "extracted": len(summary.extracted),
            "failed": len(summary.failed),
            "deleted": len(summary.deleted),
            "quads_written": summary.quads_written,
            "quads_removed": summary.quads_removed,
            "latency_p50_ms": latencies[len(latencies) // 2] if latencies else 0.0,
            "latency_p95_ms": latencies[int(len(latencies) * 0.95)] if latencies else 0.0,
        }
    )
