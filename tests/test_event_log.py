"""The home's event log through kept engines (``pipelines.event_log``): runs materialised through the instance
``open_instance`` gives are in the same files the stock Dagster class (what the Dagster UI opens) reads, and only the
latest runs' engines are kept."""

import sqlite3
from contextlib import closing
from pathlib import Path

import dagster as dg

from engramrag.store import Home
from pipelines.event_log import INDEX_SHARD, KEPT_RUN_ENGINES, KeptEngineEventLogStorage
from pipelines.instance import open_instance

RUNS = KEPT_RUN_ENGINES + 2


@dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a", "b"]))
def counted(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    context.log.info("counting %s", context.partition_key)
    return dg.MaterializeResult(metadata={"partition": context.partition_key})


@dg.asset_check(asset=counted)
def counted_is_fine() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True)


def test_runs_stored_through_kept_engines_read_the_same_through_dagsters_own_class(tmp_path):
    home = Home.at(tmp_path / "home")
    instance = open_instance(home)
    storage = instance.event_log_storage
    assert isinstance(storage, KeptEngineEventLogStorage)
    run_ids = []
    for number in range(RUNS):
        result = dg.materialize([counted, counted_is_fine], instance=instance,
                                partition_key="ab"[number % 2])  # fmt: skip
        assert result.success
        run_ids.append(result.run_id)
    kept = storage.kept_databases
    assert INDEX_SHARD in kept
    assert [name for name in kept if name != INDEX_SHARD] == run_ids[-KEPT_RUN_ENGINES:]
    written = {run_id: [record.event_log_entry.dagster_event_type for record in
                        instance.get_records_for_run(run_id).records] for run_id in run_ids}  # fmt: skip
    with storage.run_connection(run_ids[-1]) as connection:  # a kept engine commits without waiting on the disk
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
    instance.dispose()
    # Each run's database was made from Dagster's own (one per process): its journal and revision, nothing left over.
    runs_folder = Path(storage.path_for_shard(run_ids[0])).parent
    assert not list(runs_folder.glob("*.partial"))
    for run_id in run_ids:
        with closing(sqlite3.connect(storage.path_for_shard(run_id))) as database:
            assert database.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            revision = database.execute("SELECT version_num FROM alembic_version").fetchall()
        with closing(sqlite3.connect(storage.path_for_shard(INDEX_SHARD))) as database:
            assert revision == database.execute("SELECT version_num FROM alembic_version").fetchall() != []
    assert storage.kept_databases == []

    stock = dg.DagsterInstance.from_config(str(home.dagster_home))
    try:
        assert type(stock.event_log_storage).__name__ == "SqliteEventLogStorage"
        for run_id in run_ids:
            read = [record.event_log_entry.dagster_event_type for record in stock.get_records_for_run(run_id).records]
            assert read == written[run_id]
            assert dg.DagsterEventType.ASSET_MATERIALIZATION in read
            assert dg.DagsterEventType.ASSET_CHECK_EVALUATION in read
        status = stock.get_materialized_partitions(counted.key)
        assert status == {"a", "b"}
        last = stock.get_latest_materialization_event(counted.key)
        assert last is not None and last.run_id == run_ids[-1]
    finally:
        stock.dispose()
