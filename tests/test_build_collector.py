"""The cyclic collector around a build (``pipelines.build.collector_off``): off during it, as the caller had it
after, and what the block made frozen only when the caller asks (a process about to end). No build."""

from __future__ import annotations

import gc

from pipelines.build import collector_off


def test_the_collector_is_off_inside_and_as_the_caller_had_it_after() -> None:
    assert gc.isenabled()
    with collector_off():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # a caller that collects itself (engram watch) keeps it off across the build
    try:
        with collector_off():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_freeze_after_leaves_what_the_block_made_to_no_collection() -> None:
    before = gc.get_freeze_count()
    try:
        with collector_off():
            made = [[number] for number in range(5_000)]
        assert gc.get_freeze_count() == before  # not asked: nothing frozen
        with collector_off(freeze_after=True):
            made += [[number] for number in range(5_000)]
        assert gc.isenabled() and gc.get_freeze_count() >= before + len(made)
    finally:
        gc.unfreeze()


def test_the_watcher_collects_when_idle_and_at_the_latest_after_a_few_builds() -> None:
    from pipelines.watch import Collections

    collections = Collections(at_most_uncollected=3, full_every=2)
    assert not collections.due()  # nothing built: nothing to walk while idle
    assert not collections.built() and not collections.built()  # builds in a row: no walk between them
    assert collections.due()  # the next look that finds nothing to build walks what they made
    frozen = gc.get_freeze_count()
    try:
        kept = [[number] for number in range(1_000)]
        collections.collect()
        assert not collections.due() and gc.get_freeze_count() >= frozen + len(kept)  # what survived is frozen
        assert not collections.built() and not collections.built() and collections.built()  # the third in a row
        collections.collect()  # the second collection: a full one, the frozen objects walked and frozen again
        assert collections.collected == 2 and gc.get_freeze_count() >= len(kept)
        # While a save already waits to be built, the walk waits for a pause, up to at_most_busy builds in a row.
        busy = Collections(at_most_uncollected=3, at_most_busy=5)
        assert not any(busy.built(busy=True) for _ in range(4)) and busy.built(busy=True)
        busy.collect()
        assert not busy.built(busy=True) and not busy.built() and busy.built()
    finally:
        gc.unfreeze()
