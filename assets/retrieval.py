"""Vectors per bucket and the graph index search runs on."""

import dagster as dg

from assets.documents import document_quads
from assets.partitions import bucket_partitions, buckets_of
from assets.resources import STORE_POOL, EngramStores, is_consistency_pass
from engramrag.lifecycle.embedding import embed_documents
from engramrag.retrieve.index_build import build_retrieval_index


class EmbeddingsConfig(dg.Config):
    full: bool = False
    """Re-embed every document of the buckets, not only those whose extraction or embedder changed."""


@dg.asset(
    deps=[document_quads],
    partitions_def=bucket_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name="retrieval",
    kinds={"lancedb"},
    pool=STORE_POOL,
    description="Vectors of each document's chunks, entity labels and triples in LanceDB (and the chunks' BM25 "
    "text), replaced for documents whose extraction changed and removed for documents that are gone.",
)
def document_embeddings(
    context: dg.AssetExecutionContext, config: EmbeddingsConfig, engram: EngramStores
) -> dg.MaterializeResult:
    buckets = buckets_of(context.partition_keys)
    summary = embed_documents(engram.home_dir(), engram.vault_config(), buckets, engram.make_embedder(), config.full)
    return dg.MaterializeResult(
        metadata={"embedded": len(summary.embedded), "removed": len(summary.removed), "texts": summary.texts,
                  "labels_added": summary.labels_added, "labels_dropped": summary.labels_dropped}
        | {f"{table}_rows": rows for table, rows in summary.rows.items()}
    )


@dg.asset(
    # By key: the resolution and revision modules build on document_embeddings and document_catalog.
    deps=[
        document_embeddings,
        dg.AssetKey("resolution_overlay"),
        dg.AssetKey("accepted_supersessions"),
        dg.AssetKey("document_timeline"),
    ],
    group_name="retrieval",
    kinds={"igraph", "lancedb", "duckdb"},
    pool=STORE_POOL,
    description="The graph search runs Personalized PageRank over: entities joined by the resolution overlay's "
    "clusters, passages, relation, hierarchy, synonym and mention edges; plus the BM25 index over chunks and the "
    "accepted supersessions. Rebuilt only when the embedded documents, the clusters or the supersessions changed.",
)
def retrieval_index(context: dg.AssetExecutionContext, engram: EngramStores) -> dg.MaterializeResult:
    embedder = engram.make_embedder()
    consistency = is_consistency_pass(context)
    summary = build_retrieval_index(engram.home_dir(), engram.vault_config(), embedder, derive_all=consistency)
    optimised: dict[str, str] = {}
    if summary.rebuilt or consistency:
        from engramrag.vectors.lancedb_store import VectorStore

        optimised = VectorStore.for_home(engram.home_dir(), embedder).refresh_indexes(force=consistency)
    return dg.MaterializeResult(
        metadata={
            "version": summary.version,
            "rebuilt": summary.rebuilt,
            "entities": summary.entities,
            "passages": summary.passages,
            "seconds": round(summary.seconds, 2),
            "neighbours_recomputed": summary.neighbours_recomputed,
            "neighbours_kept": summary.neighbours_kept,
            "notes_cut": summary.notes_cut,
            "notes_reused": summary.notes_reused,
            "wordings_cut": summary.wordings_cut,
            "statements_joined_notes": summary.statements_joined_notes,
            "statements_kept_notes": summary.statements_kept_notes,
            "mentions_read_notes": summary.mentions_read_notes,
            "mentions_kept_notes": summary.mentions_kept_notes,
            "statement_rows_numbered": summary.statement_rows_numbered,
            "relation_sums_patched": summary.relation_sums_patched,
            "lancedb_optimised": ", ".join(f"{table} ({why})" for table, why in optimised.items()) or "none needed",
        }
        | {f"{kind}_edges": count for kind, count in summary.edges.items()}
    )
