"""Partition definitions: documents are spread over a fixed number of hash buckets."""

import dagster as dg

from engramrag.vault.config import configured_bucket_count
from engramrag.vault.ids import bucket_key

BUCKET_COUNT = configured_bucket_count()

bucket_partitions = dg.StaticPartitionsDefinition([bucket_key(bucket) for bucket in range(BUCKET_COUNT)])


def buckets_of(keys: list[str]) -> list[int]:
    return [int(key) for key in keys]
