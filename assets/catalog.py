"""The unpartitioned catalog summary every build ends with."""

import dagster as dg

from assets.documents import document_quads
from assets.resources import STORE_POOL, EngramStores
from engramrag.lifecycle.summary import record_build


@dg.asset(
    deps=[document_quads],
    group_name="lifecycle",
    kinds={"duckdb"},
    pool=STORE_POOL,
    description="The catalog's build record and totals: documents, quads, statements, rejected files.",
)
def document_catalog(context: dg.AssetExecutionContext, engram: EngramStores) -> dg.MaterializeResult:
    build = record_build(engram.home_dir(), engram.vault_config(), context.run_id, None)
    return dg.MaterializeResult(
        metadata={key: value for key, value in build.items() if key not in ("run_id", "finished_at", "buckets")}
        | {"store_bytes": sum(engram.home_dir().size_bytes().values())}
    )
