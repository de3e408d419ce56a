"""Export round trips through rdflib, and the `engram` command end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib

from engramrag.export import NothingToExport, export_dataset
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import document_graphs
from tests.conftest import Lifecycle


def store_quads(lifecycle: Lifecycle, relative_path: str | None = None) -> set[tuple]:
    """The store's quads as rdflib terms."""
    dataset = rdflib.Dataset()
    with lifecycle.home.reading(), QuadStore.opened(lifecycle.home.quads_path, read_only=True) as store:
        graphs = document_graphs(relative_path) if relative_path else store.named_graphs()
        text = ox.serialize(
            [q for g in graphs for q in store._store.quads_for_pattern(None, None, None, ox.NamedNode(str(g)))],
            format=ox.RdfFormat.N_QUADS,
        )
    dataset.parse(data=text.decode("utf-8"), format="nquads")
    return {quad for quad in dataset.quads() if quad[3] is not None}


def parsed(path: Path, fmt: str) -> set[tuple]:
    dataset = rdflib.Dataset()
    dataset.parse(path, format={"nquads": "nquads", "trig": "trig"}[fmt])
    return {(s, p, o, g.identifier if hasattr(g, "identifier") else g) for s, p, o, g in dataset.quads()
            if g is not None and str(g.identifier if hasattr(g, "identifier") else g) != "urn:x-rdflib:default"}


@pytest.mark.parametrize("fmt", ["nquads", "trig"])
def test_export_round_trips_through_rdflib(lifecycle: Lifecycle, tmp_path: Path, fmt: str):
    lifecycle.run_all()
    output = tmp_path / f"all.{fmt}"
    count = export_dataset(lifecycle.home, output, fmt)
    expected = store_quads(lifecycle)
    assert count == len(expected) > 1000
    assert parsed(output, fmt) == expected

    one = tmp_path / f"one.{fmt}"
    assert export_dataset(lifecycle.home, one, fmt, "people/minji-park.md") == len(
        store_quads(lifecycle, "people/minji-park.md")
    )
    assert parsed(one, fmt) == store_quads(lifecycle, "people/minji-park.md")


def test_export_of_an_unknown_document_says_so(lifecycle: Lifecycle, tmp_path: Path):
    lifecycle.run_all()
    with pytest.raises(NothingToExport, match="no document"):
        export_dataset(lifecycle.home, tmp_path / "x.nq", "nquads", "nope.md")


def engram(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=Path(__file__).resolve().parents[1],
        timeout=600,
    )


def test_cli_build_status_export_end_to_end(vault: Path, tmp_path: Path):
    home = tmp_path / "cli-home"
    first = engram("build", "--vault", str(vault), "--home", str(home), "--json")
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    documents = len(list(vault.rglob("*.md")))
    assert summary["documents"] == documents
    assert summary["last_build"]["extracted"] == documents
    assert all(summary["checks"].values()) and set(summary["checks"]) == {
        "quads_belong_to_live_documents", "statements_name_document_and_extractor",
        "analysis_graphs_hold_no_author_assertions", "clusters_respect_distinct_verdicts",
        "overlay_names_existing_entities",
    }  # fmt: skip

    again = json.loads(engram("build", "--vault", str(vault), "--home", str(home), "--json").stdout)
    assert again["last_build"]["extracted"] == 0
    assert again["last_build"]["unchanged"] == documents
    assert again["buckets"] == []

    (vault / "tools/grafana.md").unlink()
    (vault / "notes-without-end.md").write_text("---\ntitle: x\n", encoding="utf-8")
    third = engram("build", "--vault", str(vault), "--home", str(home))
    assert third.returncode == 0, third.stderr
    assert "1 deleted" in third.stdout and "1 rejected" in third.stdout
    assert "notes-without-end.md" in third.stderr

    status = json.loads(engram("status", "--home", str(home), "--json").stdout)
    assert {"documents", "quads", "statements", "rejected", "last_build"} <= set(status)
    assert status["documents"] == documents - 1
    assert status["rejected"] == 1
    assert {"extracted", "unchanged", "deleted", "rejected"} <= set(status["last_build"])
    assert status["last_build"]["deleted"] == 1

    everything = engram("export", "--home", str(home), "--format", "nquads", "-o", str(tmp_path / "all.nq"))
    assert everything.stderr.strip() == f"exported {status['quads']:,} quads"  # status and export count the same

    exported = engram("export", "--home", str(home), "--format", "nquads", "--doc", "people/minji-park.md")
    assert exported.returncode == 0, exported.stderr
    dataset = rdflib.Dataset()
    dataset.parse(data=exported.stdout, format="nquads")
    quads = list(dataset.quads())
    assert len(quads) > 10
    assertion, analysis = (str(g) for g in document_graphs("people/minji-park.md"))
    assert assertion in {str(graph) for *_, graph in quads} <= {assertion, analysis}  # only this note's graphs

    # the runs are in the home's Dagster instance, the one `engram dev` shows
    assert (home / "dagster" / "dagster.yaml").exists()
    assert any((home / "dagster").rglob("*.db"))


def test_cli_reports_a_missing_vault_clearly(tmp_path: Path):
    result = engram("build", "--vault", str(tmp_path / "nowhere"), "--home", str(tmp_path / "h"))
    assert result.returncode != 0
    assert "does not exist" in result.stderr


def test_a_killed_build_loses_nothing_and_the_next_build_completes(tmp_path: Path):
    import signal
    import time

    from eval.synthetic_vault import generate_vault

    vault, home = tmp_path / "big-vault", tmp_path / "killed-home"
    generate_vault(vault, documents=400, seed=11)
    command = [sys.executable, "-m", "pipelines.cli", "build", "--vault", str(vault), "--home", str(home), "--json"]
    build = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             cwd=Path(__file__).resolve().parents[1])
    deadline = time.monotonic() + 300
    while not (home / "quads").exists() and time.monotonic() < deadline and build.poll() is None:
        time.sleep(0.2)
    time.sleep(1.5)  # into the extraction of the first buckets
    killed = build.poll() is None
    build.send_signal(signal.SIGKILL)
    build.wait()

    resumed = engram("build", "--vault", str(vault), "--home", str(home), "--json")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["documents"] == 400
    assert all(summary["checks"].values())
    if killed:
        assert 0 < summary["last_build"]["extracted"] <= 400
    again = json.loads(engram("build", "--vault", str(vault), "--home", str(home), "--json").stdout)
    assert again["last_build"]["extracted"] == 0
    full = json.loads(engram("build", "--vault", str(vault), "--home", str(home), "--json", "--full").stdout)
    assert all(full["checks"].values()) and full["last_build"]["extracted"] == 0
