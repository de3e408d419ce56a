"""A step's quad record (``lifecycle/step_quads.py``) on a real catalog and quad store in a temp folder: the record a
process wrote last is used again only while the catalog still names it, so a rolled-back write is never trusted."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox

from engramrag.catalog.connection import catalog_writer
from engramrag.lifecycle import step_quads
from engramrag.lifecycle.step_quads import record_swap, swap_step_quads
from engramrag.ontology.quadstore import QuadStore, lined
from engramrag.ontology.vocab import document_graphs
from engramrag.store import Home

GRAPH = ox.NamedNode(str(document_graphs("a.md")[1]))


def _quad(n: int) -> ox.Quad:
    return ox.Quad(ox.NamedNode(f"https://example.org/e/{n}"), ox.NamedNode("https://example.org/p"),
                   ox.Literal(str(n)), GRAPH)  # fmt: skip


def _swap(home: Home, numbers: list[int], commit: bool = True):
    with catalog_writer(home, 4) as catalog:
        swap = swap_step_quads(home, catalog, "timeline_quads", lined(map(_quad, numbers)))
        catalog.execute("BEGIN")
        record_swap(home, catalog, "timeline_quads", swap)
        catalog.execute("COMMIT" if commit else "ROLLBACK")
    return swap


def _table(home: Home) -> set[str]:
    with catalog_writer(home, 4) as catalog:
        return {row[0] for row in catalog.execute("SELECT nquad FROM timeline_quads").fetchall()}


def test_the_kept_record_is_the_table_and_a_rolled_back_one_is_not_used(tmp_path: Path) -> None:
    home = Home.at(tmp_path / "home")
    first = _swap(home, [1, 2])
    assert first.owned == [str(_quad(1)), str(_quad(2))] and _table(home) == set(first.owned)
    with catalog_writer(home, 4) as catalog:
        kept = step_quads._recorded(catalog, home, "timeline_quads")
    assert isinstance(kept, frozenset) and kept == _table(home)  # this process's own record, not read back

    rolled_back = _swap(home, [2, 3], commit=False)  # the store changed, the record did not
    assert rolled_back.released == [str(_quad(1))] and _table(home) == {str(_quad(1)), str(_quad(2))}
    with catalog_writer(home, 4) as catalog:
        assert list(step_quads._recorded(catalog, home, "timeline_quads")) == [str(_quad(1)), str(_quad(2))]
    # Read from the table: 1 is released (again), and 3, added by the rolled-back run, is not the step's to remove.
    after = _swap(home, [2])
    assert after.released == [str(_quad(1))] and after.owned == [str(_quad(2))]
    assert _table(home) == {str(_quad(2))}
    with QuadStore.opened(home.quads_path) as store:
        assert _quad(2) in store._store and _quad(1) not in store._store


def test_the_record_is_read_from_the_table_in_a_new_process(tmp_path: Path) -> None:
    home = Home.at(tmp_path / "home")
    _swap(home, [1, 2])
    step_quads._kept.clear()  # as a new process starts
    with catalog_writer(home, 4) as catalog:
        assert sorted(step_quads._recorded(catalog, home, "timeline_quads")) == sorted(map(str, map(_quad, [1, 2])))
    assert _swap(home, [1]).released == [str(_quad(2))]
