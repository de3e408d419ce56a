"""The lifecycle assets materialised for real (Dagster, DuckDB, Oxigraph) on a copy of the example vault."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from assets.resources import EngramStores
from engramrag.extract.rules import RulesExtractor
from engramrag.lifecycle.plan import plan_changes
from engramrag.lifecycle.summary import read_status
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import REL, document_graphs
from engramrag.vault.config import VaultConfig
from tests.conftest import Lifecycle

FALCON = "projects/falcon.md"


def markdown_files(vault: Path) -> set[str]:
    return {path.relative_to(vault).as_posix() for path in vault.rglob("*.md")}


def graph_quads(lifecycle: Lifecycle, relative_path: str) -> set[str]:
    with lifecycle.home.reading(), QuadStore.opened(lifecycle.home.quads_path, read_only=True) as store:
        found = set()
        for graph in document_graphs(relative_path):
            found |= {str(quad) for quad in store._store.quads_for_pattern(None, None, None, ox.NamedNode(graph))}
        return found


def objects_of(lifecycle: Lifecycle, relative_path: str, relation: str) -> set[str]:
    quads = graph_quads(lifecycle, relative_path)
    return {quad for quad in quads if f"<{REL[relation]}>" in quad}


def test_full_build_extracts_every_document_then_nothing(lifecycle: Lifecycle, vault: Path):
    first = lifecycle.run_all()
    assert first.success
    assert lifecycle.extracted_in(first.run_id) == markdown_files(vault)
    status = read_status(lifecycle.home)
    assert status["documents"] == len(markdown_files(vault))
    assert status["quads"] > 20 * status["documents"]
    assert status["statements"] > 5 * status["documents"]
    assert status["last_build"]["extracted"] == status["documents"]

    second = lifecycle.run_all()
    assert second.success
    assert lifecycle.extracted_in(second.run_id) == set()
    assert read_status(lifecycle.home)["last_build"] == {
        **read_status(lifecycle.home)["last_build"],
        "extracted": 0,
        "unchanged": status["documents"],
        "deleted": 0,
    }


def test_editing_one_document_re_extracts_only_it_and_leaves_no_stale_triple(lifecycle: Lifecycle, vault: Path):
    lifecycle.run_all()
    untouched = "tools/duckdb.md"
    before_untouched = graph_quads(lifecycle, untouched)
    assert objects_of(lifecycle, FALCON, "owner"), "the example note states its owner"

    note = vault / FALCON
    text = note.read_text(encoding="utf-8")
    owner_line = next(line for line in text.splitlines() if line.startswith("Owner:"))
    note.write_text(text.replace(owner_line + "\n", "") + "\nReviewer: Sarah Lee\n", encoding="utf-8")

    run = lifecycle.run_all()
    assert lifecycle.extracted_in(run.run_id) == {FALCON}
    assert objects_of(lifecycle, FALCON, "owner") == set()
    assert objects_of(lifecycle, FALCON, "reviewer")
    assert not any(owner_line in quad for quad in graph_quads(lifecycle, FALCON))
    assert graph_quads(lifecycle, untouched) == before_untouched
    chunks = lifecycle.sql(
        "SELECT string_agg(c.text, ' ') FROM chunks c JOIN documents d USING (doc_id) WHERE path = ?", [FALCON]
    )[0][0]
    assert "Reviewer: Sarah Lee" in chunks and owner_line not in chunks
    # Resolution kept the nearest-key lists of the keys the edit did not touch, and searched only the rest.
    candidates = run.asset_materializations_for_node("resolution_candidates")[0].metadata
    kept, searched = candidates["embedding_lists_kept"].value, candidates["embedding_keys_searched"].value
    assert kept > 50 and searched < kept / 10


def test_deleted_and_renamed_documents_lose_their_graphs(lifecycle: Lifecycle, vault: Path):
    lifecycle.run_all()
    deleted, renamed, new_name = "tools/grafana.md", "tools/lancedb.md", "tools/lance-db.md"
    assert graph_quads(lifecycle, deleted) and graph_quads(lifecycle, renamed)
    (vault / deleted).unlink()
    (vault / renamed).rename(vault / new_name)
    (vault / FALCON).write_text((vault / FALCON).read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
    # `engram watch` looks at the paths the system said were written: the same changes as a look at everything.
    config = VaultConfig()
    whole = plan_changes(lifecycle.home, vault, config)
    heard = plan_changes(lifecycle.home, vault, config, only={deleted, renamed, new_name, FALCON, "tools/.x.swp"})
    assert whole.files_changed == heard.files_changed == 4
    assert {bucket: sorted(found) for bucket, found in heard.changes.items()} == {
        bucket: sorted(found) for bucket, found in whole.changes.items()
    }
    partly = plan_changes(lifecycle.home, vault, config, only={deleted})
    assert partly.files_changed == 1 and partly.buckets == [int(lifecycle.bucket(deleted))]

    run = lifecycle.run_all()
    assert lifecycle.extracted_in(run.run_id) == {new_name, FALCON}
    assert graph_quads(lifecycle, deleted) == set()
    assert graph_quads(lifecycle, renamed) == set()
    assert graph_quads(lifecycle, new_name)
    gone = {row[0] for row in lifecycle.sql("SELECT path FROM deletions WHERE run_id = ?", [run.run_id])}
    assert gone == {deleted, renamed}
    assert read_status(lifecycle.home)["last_build"]["deleted"] == 2
    paths = {row[0] for row in lifecycle.sql("SELECT path FROM documents")}
    assert deleted not in paths and renamed not in paths and new_name in paths
    for table in ("entities", "statements", "chunks"):
        orphans = lifecycle.sql(f"SELECT count(*) FROM {table} WHERE doc_id NOT IN (SELECT doc_id FROM documents)")
        assert orphans == [(0,)]


def test_a_bucket_run_touches_only_its_own_documents(lifecycle: Lifecycle, vault: Path):
    lifecycle.run_all()
    in_bucket = FALCON
    bucket = lifecycle.bucket(in_bucket)
    elsewhere = next(p for p in sorted(markdown_files(vault)) if lifecycle.bucket(p) != bucket)
    for path in (in_bucket, elsewhere):
        with (vault / path).open("a", encoding="utf-8") as handle:
            handle.write("\nAn added sentence about Grafana and DuckDB.\n")

    run = lifecycle.run_partition(bucket)
    assert lifecycle.extracted_in(run.run_id) == {in_bucket}
    pending = lifecycle.sql("SELECT path FROM documents WHERE extracted_hash IS DISTINCT FROM body_hash")
    assert pending == []  # the other bucket's edit has not even been read yet
    other = lifecycle.run_partition(lifecycle.bucket(elsewhere))
    assert lifecycle.extracted_in(other.run_id) == {elsewhere}


def test_bad_files_are_recorded_and_the_rest_go_through(lifecycle: Lifecycle, vault: Path):
    (vault / "bad-encoding.md").write_bytes("# Caf\u00e9 notes\n".encode("cp1252"))
    (vault / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (vault / "broken-front-matter.md").write_text("---\ntitle: [oops\n---\n# Body\n", encoding="utf-8")
    (vault / "huge.md").write_text("# Huge\n" + "lorem ipsum " * 200_000, encoding="utf-8")

    run = lifecycle.run_all()
    assert run.success
    reasons = dict(lifecycle.sql("SELECT path, reason FROM rejected_documents"))
    assert reasons == {
        "bad-encoding.md": "not_utf8",
        "binary.md": "binary",
        "broken-front-matter.md": "broken_front_matter",
        "huge.md": "too_large",
    }
    good = markdown_files(vault) - set(reasons)
    assert lifecycle.extracted_in(run.run_id) == good
    status = read_status(lifecycle.home)
    assert status["rejected"] == 4 and status["documents"] == len(good)
    assert any("UTF-8" in item["message"] for item in status["rejected_documents"])

    (vault / "broken-front-matter.md").write_text("---\ntitle: Fixed\n---\n# Body\n", encoding="utf-8")
    (vault / "binary.md").unlink()
    config = VaultConfig()
    whole = plan_changes(lifecycle.home, vault, config)
    heard = plan_changes(lifecycle.home, vault, config, only={"broken-front-matter.md", "binary.md"})
    assert whole.files_changed == heard.files_changed == 2 and whole.changes == heard.changes
    fixed = lifecycle.run_all()
    assert lifecycle.extracted_in(fixed.run_id) == {"broken-front-matter.md"}
    assert read_status(lifecycle.home)["rejected"] == 2


def test_a_document_that_breaks_keeps_its_last_good_graphs(lifecycle: Lifecycle, vault: Path):
    lifecycle.run_all()
    before = graph_quads(lifecycle, FALCON)
    (vault / FALCON).write_bytes(b"---\ntitle: [broken\n---\n")
    lifecycle.run_all()
    assert graph_quads(lifecycle, FALCON) == before
    assert dict(lifecycle.sql("SELECT path, reason FROM rejected_documents")) == {FALCON: "broken_front_matter"}


class FailingExtractor:
    """The real rules extractor, except that it fails on one document (an injected fault, not a mock)."""

    def __init__(self, inner, failing_path: str) -> None:
        self.inner, self.failing_path = inner, failing_path
        self.name, self.version = inner.name, inner.version

    def extract(self, document):
        if document.path == self.failing_path:
            raise RuntimeError("simulated extractor crash")
        return self.inner.extract(document)


def test_an_extraction_failure_is_recorded_and_retried_next_build(
    lifecycle: Lifecycle, vault: Path, monkeypatch: pytest.MonkeyPatch
):
    real = EngramStores.make_extractor
    monkeypatch.setattr(EngramStores, "make_extractor", lambda self: FailingExtractor(real(self), FALCON))
    run = lifecycle.run_all()
    assert run.success
    assert lifecycle.extracted_in(run.run_id) == markdown_files(vault) - {FALCON}
    status = read_status(lifecycle.home)
    assert status["failed_documents"] == [{"path": FALCON, "error": "RuntimeError: simulated extractor crash"}]
    assert graph_quads(lifecycle, FALCON) == set()
    # `engram build` and the sensor see the failed document as pending although its file did not change
    config = VaultConfig()
    assert plan_changes(lifecycle.home, vault, config).buckets == []
    pending = plan_changes(lifecycle.home, vault, config, extractor=f"rules/{RulesExtractor.version}")
    assert pending.buckets == [int(lifecycle.bucket(FALCON))]
    assert pending.files_changed == 0  # no file changed: `engram watch` does not build again for it in a loop

    monkeypatch.setattr(EngramStores, "make_extractor", real)
    retry = lifecycle.run_all()
    assert lifecycle.extracted_in(retry.run_id) == {FALCON}
    assert read_status(lifecycle.home)["failed"] == 0
    (vault / FALCON).write_text((vault / FALCON).read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
    edited = plan_changes(lifecycle.home, vault, config, extractor=f"rules/{RulesExtractor.version}")
    assert edited.buckets == [int(lifecycle.bucket(FALCON))] and edited.files_changed == 1
