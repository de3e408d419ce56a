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
