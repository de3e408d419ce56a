"""The quad store's own operations on a small store in a temp folder: a step's swap writes only the difference
and never takes another owner's quad; N-Quads-encoded graphs load like graphs built of terms."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox

from engramrag.ontology.graphs import DocumentGraphs
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import document_graphs

ASSERTION, ANALYSIS = (ox.NamedNode(str(iri)) for iri in document_graphs("a.md"))
GRAPH = ASSERTION


def _quad(n: int, graph: ox.NamedNode = GRAPH) -> ox.Quad:
    return ox.Quad(ox.NamedNode(f"https://example.org/e/{n}"), ox.NamedNode("https://example.org/p"),
                   ox.Literal(str(n)), graph)  # fmt: skip


def test_a_swap_writes_the_difference_restores_what_was_dropped_and_takes_no_other_quad(tmp_path: Path) -> None:
    other = ANALYSIS
    with QuadStore.opened(tmp_path / "quads") as store:
        extraction_quad = _quad(3)
        store._store.add(extraction_quad)  # as a document's extraction would hold it
        first = store.swap_quads([], [_quad(1), _quad(2), extraction_quad, _quad(7, other)])
        assert first.mine == [_quad(1), _quad(2), _quad(7, other)]  # the extraction's quad is not the step's
        assert first.claimed == [str(q) for q in first.mine] and first.released == [] and first.inserted == 3
        recorded = first.claimed
        store._store.remove_graph(GRAPH)  # the note was re-extracted: its graph was dropped and rewritten
        store._store.add(extraction_quad)
        second = store.swap_quads(recorded, [_quad(1), _quad(2), extraction_quad, _quad(7, other)])
        assert second.mine == first.mine and second.inserted == 2  # both of GRAPH's back, the other graph's kept
        assert (second.claimed, second.released) == ([], [])
        assert {_quad(1), _quad(2), _quad(7, other)} <= set(store._store)
        third = store.swap_quads(recorded, [_quad(2), _quad(4)])
        assert third.mine == [_quad(2), _quad(4)]
        assert third.released == [str(_quad(1)), str(_quad(7, other))] and third.claimed == [str(_quad(4))]
        assert set(store._store) == {_quad(2), _quad(3), _quad(4)}  # 1 and 7 withdrawn, the extraction's 3 kept


def test_a_swap_told_which_graphs_were_rewritten_looks_only_at_those(tmp_path: Path) -> None:
    # Issue 16: the timeline knows the notes extracted since its last swap; a lookup per graph in a cold store took
    # 10 s at 100,000 notes.
    other = ANALYSIS
    with QuadStore.opened(tmp_path / "quads") as store:
        wanted = [_quad(1), _quad(2), _quad(7, other)]
        recorded = store.swap_quads([], wanted).claimed
        store._store.remove_graph(GRAPH)  # GRAPH's note was extracted again
        store._store.remove_graph(other)  # as if dropped by something the caller does not report
        named = store.swap_quads(recorded, wanted, rewritten={GRAPH})
        assert named.inserted == 2 and set(store._store) == {_quad(1), _quad(2)}  # only the named graph restored
        assert (named.claimed, named.released) == ([], [])
        assert store.swap_quads(recorded, wanted, rewritten=set()).inserted == 0
        assert store.swap_quads(recorded, wanted).inserted == 1  # told nothing: every graph is looked at
        assert set(store._store) == set(wanted)


def test_encoded_graphs_load_as_the_terms_do(tmp_path: Path) -> None:
    graphs = DocumentGraphs(ASSERTION)
    graphs.assertion += [(q.subject, q.predicate, q.object) for q in (_quad(1), _quad(2))]
    graphs.assertion.append((_quad(5).subject, _quad(5).predicate, ox.Literal("x\ny \"quoted\"")))
    encoded = graphs.encoded()
    assert encoded.quad_count == 3 and set(encoded.quads()) == set(graphs.quads())
    with QuadStore.opened(tmp_path / "fresh") as fresh, QuadStore.opened(tmp_path / "replaced") as replaced:
        fresh.replace_documents([("a.md", encoded)])  # no graphs yet: the bulk loader
        replaced.replace_documents([("a.md", graphs)])
        replaced._store.add(_quad(9))  # a stale quad of the old extraction
        replaced._store.add(_quad(8, ANALYSIS))  # a later step's proposal about the old text
        replaced.replace_documents([("a.md", encoded)])  # graphs exist: dropped and written in one transaction
        assert set(fresh._store) == set(replaced._store) == set(graphs.quads())


def test_committed_writes_outlive_a_close_without_flush_and_a_killed_writer(tmp_path: Path) -> None:
    """Closing a writer does not flush RocksDB's memory tables (the flush waited on compactions): what a writer
    committed is in RocksDB's log, which a read-only open in another process and the next writer replay; a writer
    killed before it closed loses nothing it committed."""
    import subprocess
    import sys

    path = tmp_path / "quads"
    with QuadStore.opened(path) as store:
        store.swap_quads([], [_quad(1), _quad(2)])
    count = "import sys, pyoxigraph as ox; print(len(ox.Store.read_only(sys.argv[1])))"
    seen = subprocess.run([sys.executable, "-c", count, str(path)], capture_output=True, text=True, check=True)
    assert seen.stdout.strip() == "2"
    killed = (
        "import os, sys, pyoxigraph as ox; store = ox.Store(sys.argv[1]); "
        "store.update('INSERT DATA { GRAPH <https://example.org/g> { "
        "<https://example.org/s> <https://example.org/p> 3 } }'); "
        "os._exit(9)"
    )  # fmt: skip
    assert subprocess.run([sys.executable, "-c", killed, str(path)]).returncode == 9
    with QuadStore.opened(path, read_only=True) as store:
        assert len(store._store) == 3 and _quad(1) in store._store
