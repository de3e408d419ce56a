"""``engram watch``: one resident process that rebuilds a home whenever its vault or its verdicts change.

A fresh ``engram build`` process pays about 6-10 s at 10,000 notes before and around its steps whatever they do
(importing Dagster, LanceDB and great-expectations, opening the instance); a process that stays up pays that
once. Measured on a 10,000-note home (README, "Session 34"): one edit took 33.6-34.3 s through ``engram build``
and 25.3 s as a later build of one process. Changes are found the way the vault sensor finds
them (``plan_changes``: size and modification time, then the hash), looked for when the system reports a file of the
vault written (``pipelines.vault_events``) and at least once a minute, and a verdict recorded or undone counts too;
every build goes through ``run_build``, so Dagster records it like any other and the build lock keeps it from
running beside another build of the same home.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from contextlib import closing, nullcontext
from dataclasses import dataclass
from pathlib import Path

from engramrag.decisions.store import DecisionsStore
from engramrag.lifecycle.plan import ChangePlan
from engramrag.store import Home, StoreBusy
from pipelines.build import BuildOutcome, PlanSettings, collector_off, run_build
from pipelines.instance import KeptInstance
from pipelines.vault_events import Heard, VaultEvents

SETTLE_S = 0.05  # how long the system may take to report a save to the watcher's thread
ANYTHING = Heard(None)  # what the watcher assumes when it cannot hear the system, or must look at everything


@dataclass(frozen=True)
class WatchSettings:
    extractor: str = "rules"  # as ``engram build --extractor``
    embedder: str | None = None  # as ``engram build --embedder``; None: ENGRAM_EMBEDDER, else hash
    # How long to wait between two looks for new verdicts, and between two looks at the vault where the system does
    # not report file changes (``os_events`` off, or unavailable).
    interval_s: float = 2.0
    max_builds: int | None = None  # stop after this many builds (None: until interrupted)
    # Hear the vault's changes from the system (``pipelines.vault_events``): the vault is looked at when a file
    # changed, and at least every ``look_every_s`` seconds for what the system may not report (a network drive).
    os_events: bool = True
    look_every_s: float = 60.0


def watch(
    home: Home, vault: Path, settings: WatchSettings, on_build: Callable[[BuildOutcome, float], None]
) -> int:
    """Build now, then again whenever the vault or the verdicts change; return the number of builds run.
    ``on_build`` hears each build's outcome and its wall time in seconds."""
    builds, built_revision = 0, None
    planned = PlanSettings.of(home, settings.extractor, settings.embedder)
    collections = Collections()
    instance = KeptInstance(home)
    events = VaultEvents.started(vault) if settings.os_events else None
    looked, missed = time.monotonic(), False
    # The collector stays off while the watcher runs: it collects itself (``Collections``), not in the middle of a
    # build, and not between a note saved and its build.
    with collector_off(), closing(instance), closing(events) if events is not None else nullcontext():
        while settings.max_builds is None or builds < settings.max_builds:
            revision = _revision(home)
            # Heard before the look: a change made during it is heard again and looked at next.
            heard = ANYTHING if events is None or missed or not events.listening() else events.take()
            whole = heard == ANYTHING or time.monotonic() - looked >= settings.look_every_s
            plan = None
            if builds and (heard is not None or whole):
                plan = _vault_changes(home, vault, planned, None if whole else heard.paths)
                looked = time.monotonic() if whole else looked
                missed = plan is None  # another build held the stores: look again after the wait
            # A document that only waits for its extraction (one that failed) builds with the next change, not in a
            # loop.
            if builds == 0 or revision != built_revision or (plan is not None and plan.files_changed):
                started = time.perf_counter()
                outcome = run_build(home, vault, extractor=settings.extractor, embedder=settings.embedder, plan=plan,
                                    instance=instance)  # fmt: skip
                # The verdicts as they were when the build started (a verdict recorded during it builds again); a
                # first build creates the decisions store, which is no verdict.
                builds, built_revision = builds + 1, revision if revision is not None else _revision(home)
                on_build(outcome, time.perf_counter() - started)
                if collections.built(busy=_heard_soon(events)):
                    collections.collect()
            elif collections.due() and not _heard_soon(events):
                collections.collect()  # then look again at once: a note may have been saved meanwhile
            elif events is not None:
                events.wait(min(settings.interval_s, settings.look_every_s))
            else:
                time.sleep(settings.interval_s)
    return builds


@dataclass
class Collections:
    """When the watcher walks what its builds made (it keeps the collector off): when a look at the vault finds
    nothing to build, so that a note saved right after a build does not wait for the walk, and at the latest after
    ``at_most_uncollected`` builds in a row (``at_most_busy`` while a save already waits as a build ends; measured,
    eval.resident_edits: from the save to the build 0.13-0.15 s at 10,000 notes without the walk, 0.36-0.41 s with
    one build's; at 100,000 notes 1.3 s, and 5.9 s for the edit that paid for three builds' walk). What survives a
    collection is frozen
    (``gc.freeze``), so the next walks only what later builds made, not the millions of objects a resident builder
    keeps; every ``full_every``-th collection walks the frozen objects too, for the cycles among what was kept and
    then let go. A build's cycles are small objects (84,000 after a one-note build at 10,000 notes, nearly all
    Dagster's: its SQLite event log makes a SQLAlchemy engine per connection, 387 per build), so waiting a few builds
    costs little memory."""

    at_most_uncollected: int = 3
    at_most_busy: int = 6  # while notes keep being saved: a save already waiting is built first
    full_every: int = 20
    uncollected: int = 0  # builds since the last collection
    collected: int = 0

    def built(self, busy: bool = False) -> bool:
        """Count a build; whether to collect now. ``busy``: a change is already waiting to be built (heard from the
        system), which the walk would delay: it waits for a pause, unless ``at_most_busy`` builds went uncollected."""
        self.uncollected += 1
        return self.uncollected >= (self.at_most_busy if busy else self.at_most_uncollected)

    def due(self) -> bool:
        return self.uncollected > 0

    def collect(self) -> None:
        self.collected += 1
        if self.collected % self.full_every == 0:
            gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.uncollected = 0


def _heard_soon(events: VaultEvents | None) -> bool:
    """Whether a change was heard, or is within ``SETTLE_S`` (a save made as a build ended reaches the watcher's
    thread a moment later: without the wait, the walk it should skip started first, 1.5 s of an edit at 100,000
    notes)."""
    return events is not None and events.wait(SETTLE_S)


def _vault_changes(
    home: Home, vault: Path, planned: PlanSettings, only: frozenset[str] | None = None
) -> ChangePlan | None:
    """The changes a build would build (handed to it, so it does not look again), of the paths ``only`` when given,
    or None while another build holds the stores (look again after it)."""
    try:
        return planned.changes(home, vault, only)
    except StoreBusy:
        return None


def _revision(home: Home) -> str | None:
    return DecisionsStore.for_home(home).revision() if home.decisions_path.exists() else None
