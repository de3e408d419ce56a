"""Shared fixtures: a temp copy of the example vault, a temp home, and helpers to run the real assets."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from assets.documents import document_quads, documents
from assets.partitions import BUCKET_COUNT
from assets.resources import EngramStores
from engramrag.store import Home
from engramrag.vault.ids import bucket_key, bucket_of
from pipelines.checks import provenance_checks, resolution_checks
from pipelines.jobs import LIFECYCLE_ASSETS

EXAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "vault"


# What a person's shell may set; `run_build` leaves the environment as it is, and the fixtures clear these so that
# a developer's own settings do not reach the tests' builds.
BUILD_ENVIRONMENT = ("ENGRAM_HOME", "ENGRAM_VAULT", "ENGRAM_EXTRACTOR", "ENGRAM_EMBEDDER", "DAGSTER_HOME")


@contextmanager
def build_environment() -> Iterator[None]:
    """Around `run_build` in a module fixture: none of the shell's ENGRAM_* settings, put back afterwards."""
    with pytest.MonkeyPatch.context() as patch:
        for name in BUILD_ENVIRONMENT:
            patch.setenv(name, "")
        yield


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    target = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, target)
    return target


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home.at(tmp_path / "home")


@pytest.fixture
def instance() -> dg.DagsterInstance:
    with dg.DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


class Lifecycle:
    """Materialises the real lifecycle assets on a vault and a home, and reads the catalog back."""

    def __init__(self, vault: Path, home: Home, instance: dg.DagsterInstance) -> None:
        self.vault = vault
        self.home = home
        self.instance = instance
        self.stores = EngramStores(home=str(home.root), vault=str(vault))

    def bucket(self, relative_path: str) -> str:
        return bucket_key(bucket_of(relative_path, BUCKET_COUNT))

    def run_buckets(self, keys: list[str], with_catalog: bool = True) -> dg.ExecuteInProcessResult:
        """One run over the bucket range covering ``keys`` (a single-run backfill), like `engram build`
        (without the catalog: only documents and quads)."""
        ordered = sorted(keys)
        downstream = [*LIFECYCLE_ASSETS[2:], *provenance_checks, *resolution_checks]
        selection = [documents, document_quads] + (downstream if with_catalog else [])
        return dg.materialize(
            selection,
            instance=self.instance,
            resources={"engram": self.stores},
            tags={
                "dagster/asset_partition_range_start": ordered[0],
                "dagster/asset_partition_range_end": ordered[-1],
            },
        )

    def run_all(self) -> dg.ExecuteInProcessResult:
        return self.run_buckets([bucket_key(b) for b in range(BUCKET_COUNT)])

    def run_partition(self, key: str) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            [documents, document_quads], partition_key=key, instance=self.instance, resources={"engram": self.stores}
        )

    def sql(self, query: str, parameters: list | None = None) -> list[tuple]:
        with self.home.reading():
            connection = duckdb.connect(str(self.home.catalog_path), read_only=True)
            try:
                return connection.execute(query, parameters or []).fetchall()
            finally:
                connection.close()

    def extracted_in(self, run_id: str) -> set[str]:
        return {row[0] for row in self.sql("SELECT path FROM extraction_runs WHERE run_id = ? AND status = 'ok'",
                                           [run_id])}


@pytest.fixture
def lifecycle(vault: Path, home: Home, instance: dg.DagsterInstance) -> Lifecycle:
    return Lifecycle(vault, home, instance)


def make_catalog_schema_2(catalog_path: Path, *extra: str) -> None:
    """Turn a built catalog into what a program of catalog schema 2 left: no ``entities.core_kind`` and no
    ``extraction_runs.unlocated_quotes``, NOT NULL decision lines, and ``schema_version`` 2. ``extra`` statements
    run first (for example to drop what a test wants rebuilt)."""
    old = duckdb.connect(str(catalog_path))
    try:
        for statement in extra:
            old.execute(statement)
        old.execute("ALTER TABLE decisions ALTER COLUMN line_start SET NOT NULL")
        old.execute("ALTER TABLE decisions ALTER COLUMN line_end SET NOT NULL")
        old.execute("ALTER TABLE entities DROP COLUMN core_kind")
        old.execute("ALTER TABLE extraction_runs DROP COLUMN unlocated_quotes")
        old.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    finally:
        old.close()

