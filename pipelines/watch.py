"""``engram watch``: one resident process that rebuilds a home whenever its vault or its verdicts change.

A fresh ``engram build`` process pays about 6-10 s at 10,000 notes before and around its steps whatever they do
(importing Dagster, LanceDB and great-expectations, opening the instance); a process that stays up pays that
once. Measured on a 10,000-note home (README, "Session 34"): one edit took 33.6-34.3 s through ``engram build``
and 25.3 s as a later build of one process. Changes are found the way the vault sensor finds
them (``plan_changes``: size and modification time, then the hash), and a verdict recorded or undone counts too;
every build goes through ``run_build``, so Dagster records it like any other and the build lock keeps it from
running beside another build of the same home.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engramrag.decisions.store import DecisionsStore
from engramrag.lifecycle.plan import ChangePlan
from engramrag.store import Home, StoreBusy
from pipelines.build import BuildOutcome, PlanSettings, collector_off, run_build


@dataclass(frozen=True)
class WatchSettings:
    extractor: str = "rules"  # as ``engram build --extractor``
    embedder: str | None = None  # as ``engram build --embedder``; None: ENGRAM_EMBEDDER, else hash
    interval_s: float = 2.0  # how long to wait between two looks at the vault when nothing changed
    max_builds: int | None = None  # stop after this many builds (None: until interrupted)


def watch(
    home: Home, vault: Path, settings: WatchSettings, on_build: Callable[[BuildOutcome, float], None]
) -> int:
    """Build now, then again whenever the vault or the verdicts change; return the number of builds run.
    ``on_build`` hears each build's outcome and its wall time in seconds."""
    builds, built_revision = 0, None
    planned = PlanSettings.of(home, settings.extractor, settings.embedder)
    while settings.max_builds is None or builds < settings.max_builds:
        revision = _revision(home)
        plan = None if builds == 0 else _vault_changes(home, vault, planned)
        # A document that only waits for its extraction (one that failed) builds with the next change, not in a loop.
        if builds == 0 or revision != built_revision or (plan is not None and plan.files_changed):
            # One collection per build, ours, after it: the collector stays off until then.
            with collector_off():
                started = time.perf_counter()
                outcome = run_build(home, vault, extractor=settings.extractor, embedder=settings.embedder, plan=plan)
                # The verdicts as they were when the build started (a verdict recorded during it builds again); a
                # first build creates the decisions store, which is no verdict.
                builds, built_revision = builds + 1, revision if revision is not None else _revision(home)
                on_build(outcome, time.perf_counter() - started)
                _collect(builds)
        else:
            time.sleep(settings.interval_s)
    return builds


def _collect(builds: int) -> None:
    """The cycles the build left (it ran with the collector off), before waiting for the next. What survives is
    frozen (``gc.freeze``), so the next collection walks only what the next build made, not the millions of objects
    a resident builder keeps (with this and the plan handed to the build, the watcher's share of a 100,000-note edit
    went from 7.8-9.6 s to 2.8-5.9 s; the collection was not timed alone); every ``FULL_COLLECTION_EVERY`` builds
    the kept objects are walked too, for the cycles among what was kept and then let go."""
    if builds % FULL_COLLECTION_EVERY == 0:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


FULL_COLLECTION_EVERY = 20


def _vault_changes(home: Home, vault: Path, planned: PlanSettings) -> ChangePlan | None:
    """The changes a build would build (handed to it, so it does not look again), or None while another build holds
    the stores (look again after it)."""
    try:
        return planned.changes(home, vault)
    except StoreBusy:
        return None


def _revision(home: Home) -> str | None:
    return DecisionsStore.for_home(home).revision() if home.decisions_path.exists() else None
