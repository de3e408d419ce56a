"""Partition definitions: documents are spread over a fixed number of hash buckets."""

import os

import dagster as dg

from engramrag.vault.ids import bucket_key

BUCKET_COUNT = int(os.environ.get("ENGRAM_BUCKETS", "16"))

bucket_partitions = dg.StaticPartitionsDefinition([bucket_key(bucket) for bucket in range(BUCKET_COUNT)])


def buckets_of(keys: list[str]) -> list[int]:
    return [int(key) for key in keys]
