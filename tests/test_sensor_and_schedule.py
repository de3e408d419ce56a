"""The vault sensor asks for exactly the changed buckets, with run keys derived from the changes."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import dagster as dg

from engramrag.lifecycle.plan import plan_changes
from engramrag.vault.config import VaultConfig
from pipelines.schedules import daily_consistency_pass
from pipelines.sensors import decisions_sensor, vault_sensor
from tests.conftest import Lifecycle


def evaluate(lifecycle: Lifecycle, cursor: str | None = None):
    context = dg.build_sensor_context(
        instance=lifecycle.instance, cursor=cursor, resources={"engram": lifecycle.stores}
    )
    return vault_sensor(context)


def requested(result) -> dict[str, str]:
    return {request.partition_key: request.run_key for request in (result.run_requests or [])}


def test_sensor_requests_only_changed_buckets_with_stable_run_keys(lifecycle: Lifecycle, vault: Path):
    first = requested(evaluate(lifecycle))
    assert len(first) >= 10  # an empty catalog: every bucket that has documents

    lifecycle.run_all()
    assert requested(evaluate(lifecycle)) == {}

    edited, deleted = "projects/falcon.md", "tools/grafana.md"
    with (vault / edited).open("a", encoding="utf-8") as handle:
        handle.write("\nA new line.\n")
    (vault / deleted).unlink()
    changed = requested(evaluate(lifecycle))
    assert set(changed) == {lifecycle.bucket(edited), lifecycle.bucket(deleted)}
    assert requested(evaluate(lifecycle)) == changed  # a retried tick asks for the same runs

    with (vault / edited).open("a", encoding="utf-8") as handle:
        handle.write("\nAnother line.\n")
    assert requested(evaluate(lifecycle))[lifecycle.bucket(edited)] != changed[lifecycle.bucket(edited)]

    lifecycle.run_buckets(sorted(changed))
    assert requested(evaluate(lifecycle)) == {}


def test_decisions_sensor_asks_for_a_review_run_once_per_change_of_verdicts(lifecycle: Lifecycle):
    from engramrag.decisions.store import MERGE, DecisionsStore

    def tick(cursor: str | None):
        context = dg.build_sensor_context(
            instance=lifecycle.instance, cursor=cursor, resources={"engram": lifecycle.stores}
        )
        return decisions_sensor(context)

    assert isinstance(tick(None), dg.SkipReason)  # no decisions store yet
    store = DecisionsStore.for_home(lifecycle.home)
    store.decide(MERGE, "falcon", "팔콘", "distinct", "dana")
    first = tick(None)
    assert len(first.run_requests) == 1 and first.cursor
    assert isinstance(tick(first.cursor), dg.SkipReason)  # nothing new since
    store.undo(MERGE, "falcon", "팔콘", "dana")  # an undo is a change too
    second = tick(first.cursor)
    assert len(second.run_requests) == 1 and second.run_requests[0].run_key != first.run_requests[0].run_key


def test_touching_a_file_without_changing_it_requests_nothing(lifecycle: Lifecycle, vault: Path):
    lifecycle.run_all()
    note = vault / "projects/falcon.md"
    note.write_bytes(note.read_bytes())  # new modification time, same content
    assert requested(evaluate(lifecycle)) == {}


def test_the_scan_is_capped_per_tick_and_resumes_from_its_cursor(lifecycle: Lifecycle, vault: Path):
    lifecycle.run_all()
    names = ["a-new.md", "b-new.md", "c-new.md"]
    for name in names:
        (vault / name).write_text(f"# {name}\n", encoding="utf-8")
    config = VaultConfig()
    seen: list[str] = []
    cursor = ""
    for _ in range(3):
        plan = plan_changes(lifecycle.home, vault, config, max_files=1, resume_after=cursor)
        assert plan.examined == 1
        seen += [entry.split(":")[0] for entries in plan.changes.values() for entry in entries]
        cursor = plan.resume_after
    assert sorted(seen) == names
    assert plan.complete is False or plan.resume_after == ""


def test_daily_consistency_pass_runs_every_bucket_and_rehashes():
    context = dg.build_schedule_context(scheduled_execution_time=datetime(2026, 11, 30, 3, 0))
    request = daily_consistency_pass(context)
    assert request.tags["dagster/asset_partition_range_start"] == "00"
    assert request.tags["dagster/asset_partition_range_end"] == "15"
    assert request.run_config["ops"]["documents"]["config"]["verify_hashes"] is True
    assert request.run_key == "consistency-2026-11-30"


def test_definitions_load_with_lineage_checks_sensor_and_schedule():
    from pipelines.definitions import defs

    repository = defs.get_repository_def()
    keys = {key.to_user_string() for key in repository.asset_graph.get_all_asset_keys()}
    assert keys == {
        "documents", "document_quads", "document_catalog", "document_embeddings", "resolution_candidates",
        "resolution_overlay", "supersession_candidates", "accepted_supersessions", "document_timeline",
        "retrieval_index", "lifecycle_metrics", "git_decision_graph",
    }  # fmt: skip
    graph = repository.asset_graph
    assert graph.get(dg.AssetKey("document_catalog")).parent_keys == {dg.AssetKey("document_quads")}
    assert graph.get(dg.AssetKey("retrieval_index")).parent_keys == {
        dg.AssetKey("document_embeddings"), dg.AssetKey("resolution_overlay"), dg.AssetKey("accepted_supersessions"),
        dg.AssetKey("document_timeline"),
    }  # people's verdicts reach the index through the overlay, the applied supersessions and the timeline
    assert {check.name for check in graph.asset_check_keys} == {
        "quads_belong_to_live_documents",
        "statements_name_document_and_extractor",
        "analysis_graphs_hold_no_author_assertions",
        "clusters_respect_distinct_verdicts",
        "overlay_names_existing_entities",
    }
    assert repository.get_sensor_def("vault_sensor")
    assert repository.get_sensor_def("decisions_sensor")
    assert repository.get_job("apply_reviews")
    assert repository.get_schedule_def("daily_consistency_pass")


def test_workspace_yaml_loads_the_code_location_for_dagster_dev(tmp_path: Path):
    repository = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", str(repository / "workspace.yaml")],
        capture_output=True,
        text=True,
        cwd=repository,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Validation successful for code location pipelines.definitions" in result.stdout + result.stderr
