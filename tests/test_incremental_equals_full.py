"""An incremental build gives the same stores as a full build of the same vault with the same verdicts.

One home is built step by step through a scripted sequence (edit a note, delete one, rename one, add one that
declares an alias, a person's merge, an accepted supersession, an undo); after every step a second, fresh home is
built in full from the same vault with a copy of the same decisions store, and the two homes' snapshots (catalog
tables, quads per named graph, the retrieval index's nodes, edges and idf; ``lifecycle.snapshot``) must be equal.
Each global asset's metadata must say what it recomputed and why. The full builds extract in two worker
processes, so the comparison also shows that where a document is extracted does not change the stores.
"""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from assets.partitions import BUCKET_COUNT
from engramrag.catalog.connection import catalog_writer
from engramrag.decisions.store import MERGE, SUPERSESSION, DecisionsStore
from engramrag.lifecycle.document_pool import ExtractionConfig
from engramrag.lifecycle.snapshot import snapshot_differences, store_snapshot
from engramrag.store import Home
from pipelines.build import run_build

EXAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "vault"
EARLIER = "adr/0002-use-duckdb-for-the-catalog.md#use duckdb for the catalog"
LATER = "adr/0004-use-postgresql-for-the-catalog.md#use postgresql for the catalog"


def _edit(vault: Path) -> None:
    note = next(p for p in sorted((vault / "meetings").glob("*.md")))
    note.write_text(note.read_text(encoding="utf-8") + "\nMinji Park will migrate the ledger to Postgres.\n",
                    encoding="utf-8")


def _reword_declaring_note(vault: Path) -> None:
    """An ADR that declares itself superseded gets a sentence that names nothing: it is extracted again (its graphs,
    which hold the timeline's quads of the declaration, are rewritten), and what it says alone stays the same."""
    note = vault / "adr" / "0002-use-duckdb-for-the-catalog.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nNothing else changed.\n", encoding="utf-8")


def _delete_and_rename(vault: Path) -> None:
    notes = sorted((vault / "meetings").glob("*.md"))
    notes[-1].unlink()
    notes[1].rename(notes[1].with_name("renamed-" + notes[1].name))


def _add_alias_note(vault: Path) -> None:
    (vault / "people").mkdir(exist_ok=True)
    (vault / "people" / "ledger-team.md").write_text(
        "---\naliases: [Ledger squad]\n---\n# Ledger team\n\nThe Ledger squad owns the ledger service.\n"
        "Owner: Minji Park\n",
        encoding="utf-8",
    )


def _merge(home: Home) -> None:
    DecisionsStore.for_home(home).decide(MERGE, "jihoon", "김지훈", "same", "dana")


def _accept(home: Home) -> None:
    DecisionsStore.for_home(home).decide(SUPERSESSION, EARLIER, LATER, "accept", "dana")


def _undo_merge(home: Home) -> None:
    DecisionsStore.for_home(home).undo(MERGE, "jihoon", "김지훈", "dana")


STEPS: list[tuple[str, Callable[[Path], None] | None, Callable[[Home], None] | None]] = [
    ("edit", _edit, None),
    ("reworded declaring note", _reword_declaring_note, None),
    ("delete and rename", _delete_and_rename, None),
    ("alias note and a merge", _add_alias_note, _merge),
    ("accepted supersession", None, _accept),
    ("undo", None, _undo_merge),
]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, list[str], dict]]:
    """(step, differences from a full build, the incremental run's asset metadata) after every step."""
    root = tmp_path_factory.mktemp("incremental")
    vault = root / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    home = Home.at(root / "incremental")
    first = run_build(home, vault)
    assert first.success, first.errors
    results = []
    for number, (name, change_vault, change_verdicts) in enumerate(STEPS):
        if change_vault:
            change_vault(vault)
        if change_verdicts:
            change_verdicts(home)
        outcome = run_build(home, vault)
        assert outcome.success, outcome.errors
        assert all(outcome.checks.values()), outcome.checks
        full = Home.at(root / f"full-{number}")
        shutil.copy2(home.decisions_path, full.decisions_path)
        # The full builds extract in worker processes, the incremental ones in the build's own process.
        rebuilt = run_build(full, vault, full=True, extraction=ExtractionConfig(processes=2, min_documents=1))
        assert rebuilt.success, rebuilt.errors
        results.append((name, snapshot_differences(store_snapshot(home), store_snapshot(full)),
                        outcome.asset_metadata))
    return results


@pytest.mark.parametrize("step", [name for name, _, _ in STEPS])
def test_incremental_build_equals_a_full_build(replayed, step: str) -> None:
    differences = next(found for name, found, _ in replayed if name == step)
    assert differences == [], "\n".join(differences)


def test_the_snapshot_sees_a_difference(tmp_path: Path, replayed) -> None:
    """The comparison is not vacuous: a home one edit behind differs in the catalog, the quads and the index."""
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    before = Home.at(tmp_path / "before")
    assert run_build(before, vault).success
    _edit(vault)
    after = Home.at(tmp_path / "after")
    assert run_build(after, vault).success
    parts = {line.split(":")[0].split(".")[0] for line in snapshot_differences(store_snapshot(before),
                                                                             store_snapshot(after))}
    assert {"catalog", "quads", "index"} <= parts


def _recomputed(metadata: dict, asset: str) -> bool | None:
    return metadata.get(asset, {}).get("recomputed")


def test_each_global_step_says_what_it_recomputed_and_why(replayed) -> None:
    by_step = {name: metadata for name, _, metadata in replayed}
    edit = by_step["edit"]
    assert _recomputed(edit, "resolution_candidates") is True
    assert "documents" in edit["resolution_candidates"]["reason"]
    # It scored only the pairs touching keys the edit changed; the rest of the table was kept as it was (and the
    # snapshots above show the table equals a full build's).
    candidates = edit["resolution_candidates"]
    assert candidates["scored_whole"].startswith("no")
    assert 0 < candidates["keys_changed"] < candidates["keys"] / 5
    assert 0 < candidates["pairs_scored"] < candidates["pairs_kept"] / 3
    assert 0 < candidates["key_rows_computed"] <= candidates["keys_changed"]  # the other key rows were read back
    # The timeline read again only the edited note; what the others say alone was kept from the last run.
    timeline = edit["document_timeline"]
    assert timeline["recomputed"] is True
    assert timeline["notes_derived"] == 1 and timeline["notes_kept"] > 10
    # The edit named no new name: every other note's observations were kept (the full build of the same vault in
    # between has the same names).
    assert timeline["notes_observed"] <= 1 and timeline["observations_kept"] > 5
    # The index read again only the edited note's mention rows; the others were kept from the build before.
    index = edit["retrieval_index"]
    assert index["mentions_read_notes"] == 1 and index["mentions_kept_notes"] > 10
    # The edit named no new entity: the kept statement rows kept their nodes, only the edited note's were numbered.
    assert 0 < index["statement_rows_numbered"] < (index["relation_edges"] + index["hierarchy_edges"]) / 10
    # ...and the relation edges' sums were patched from the build before (the snapshots show the same edges).
    assert index["relation_sums_patched"] is True
    # A declaring note reworded without changing what it says: the timeline took its last outcome, and wrote again
    # the quads of the declaration that the note's re-extraction dropped.
    reworded = by_step["reworded declaring note"]["document_timeline"]
    assert reworded["recomputed"] is True and reworded["notes_derived"] == 1
    assert reworded["outcome_reused"] is True and reworded["quads_added"] > 0
    # The edit's new sentence named known names and stated no value: that outcome was taken too; a note declaring an
    # alias (a new name) makes the timeline compute again.
    assert timeline["outcome_reused"] is True
    assert by_step["alias note and a merge"]["document_timeline"]["outcome_reused"] is False
    # A person's accepted supersession: only the steps reading supersession verdicts run again.
    accepted = by_step["accepted supersession"]
    assert accepted["document_timeline"]["notes_derived"] == 0
    assert _recomputed(accepted, "accepted_supersessions") is True
    assert "supersession verdicts" in accepted["accepted_supersessions"]["reason"]
    assert _recomputed(accepted, "resolution_overlay") is False
    assert "unchanged" in accepted["resolution_overlay"]["reason"]
    # Undoing a merge: the overlay runs, the supersessions do not.
    undo = by_step["undo"]
    assert _recomputed(undo, "resolution_overlay") is True
    assert _recomputed(undo, "accepted_supersessions") is False


def test_a_build_with_nothing_changed_runs_nothing(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    home = Home.at(tmp_path / "home")
    assert gc.isenabled()
    assert run_build(home, vault).success
    assert gc.isenabled()  # the build runs with the cyclic collector off and turns it back on
    before = store_snapshot(home)
    gc.disable()  # a caller's collector left as it found it
    try:
        again = run_build(home, vault)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert again.success and again.run_id.startswith("unchanged-") and again.asset_metadata == {}
    assert snapshot_differences(before, store_snapshot(home)) == []
    # A verdict is a change: the next build runs the review steps.
    _merge(home)
    after_verdict = run_build(home, vault)
    assert not after_verdict.run_id.startswith("unchanged-")
    assert _recomputed(after_verdict.asset_metadata, "resolution_overlay") is True
    # An upgrade changes the code every global step is fingerprinted with, the vault unchanged: the next build
    # brings the steps the documents feed up to date too (it used to run only the review steps, leaving the
    # candidates stale, so every later build ran again), and the one after runs nothing.
    with catalog_writer(home, BUCKET_COUNT) as catalog:
        catalog.execute(
            "UPDATE asset_inputs SET fingerprint = replace(fingerprint, '\"code\": \"', '\"code\": \"older-') "
            "WHERE asset IN ('resolution_candidates', 'supersession_candidates')"
        )
    upgraded = run_build(home, vault)
    for step in ("resolution_candidates", "supersession_candidates"):
        assert _recomputed(upgraded.asset_metadata, step) is True
        assert upgraded.asset_metadata[step]["reason"] == "its inputs changed: code"
    assert run_build(home, vault).run_id.startswith("unchanged-")
    # A build with nothing to do does not import Dagster, which cost every no-change `engram build` a second.
    probe = (
        "import sys; from pathlib import Path; from engramrag.store import Home; "
        "from pipelines.build import run_build; "
        f"outcome = run_build(Home.at({str(home.root)!r}), Path({str(vault)!r})); "
        "print(outcome.run_id.split('-')[0], 'dagster' in sys.modules)"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=300)
    assert shown.stdout.split() == ["unchanged", "False"]
