"""`engram watch` as a person runs it: one process that builds, then builds again after a note is edited and
after a verdict is recorded, and builds nothing while nothing changes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engramrag.catalog.connection import catalog_reader
from engramrag.decisions.store import MERGE, DecisionsStore
from engramrag.store import Home

REPOSITORY = Path(__file__).resolve().parents[1]


def _wait_for_lines(process: subprocess.Popen, lines: list[str], count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(" built " in line for line in lines) < count:
        assert time.monotonic() < deadline, f"no build {count} within {timeout_s} s: {lines}"
        line = process.stdout.readline()
        assert line or process.poll() is None, f"watch stopped early: {lines} {process.stderr.read()}"
        if line:
            lines.append(line)


# Hearing the vault's changes from the system (the default), and looking at it every --interval seconds (--poll).
@pytest.mark.parametrize("poll", [False, True], ids=["system-events", "poll"])
def test_watch_builds_again_after_an_edit_and_a_verdict_and_not_while_nothing_changes(vault: Path, tmp_path: Path,
                                                                                      poll: bool) -> None:
    home = tmp_path / "home"
    environment = {**os.environ, **{name: "" for name in os.environ if name.startswith("ENGRAM_")}}
    command = [sys.executable, "-m", "pipelines.cli", "watch", "--vault", str(vault), "--home", str(home),
               "--interval", "0.2", "--max-builds", "3", *(["--poll"] if poll else [])]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPOSITORY,
                               env=environment)  # fmt: skip
    lines: list[str] = []
    try:
        _wait_for_lines(process, lines, 1, 300)
        time.sleep(1.5)  # several looks at an unchanged vault: no build
        note = vault / "projects" / "heron.md"
        note.write_text(note.read_text(encoding="utf-8") + "\nThe Heron launch review moved to Thursday.\n",
                        encoding="utf-8")  # fmt: skip
        _wait_for_lines(process, lines, 2, 300)
        DecisionsStore.for_home(Home.at(home)).decide(MERGE, "jihoon", "김지훈", "same", "dana")
        assert process.wait(timeout=300) == 0, process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
    lines += process.stdout.read().splitlines(keepends=True)
    built = [line for line in lines if " built " in line]
    assert lines[0].startswith("watching ") and len(built) == 3, lines
    assert "40 extracted" in built[0] and "1 extracted, 0 failed, 39 unchanged" in built[1]
    assert "0 extracted" in built[2] and "FAILED" not in "".join(built)  # the verdict: a review-only build
    with catalog_reader(Home.at(home)) as catalog:
        [(text,)] = catalog.execute("SELECT text FROM documents WHERE path = 'projects/heron.md'").fetchall()
    assert "moved to Thursday" in text
    # The three builds went through the one instance the watcher kept open, and each is a run of its own in it.
    from pipelines.instance import open_instance

    with open_instance(Home.at(home)) as instance:
        runs = instance.get_runs()
    assert len(runs) == 3 and all(run.is_success for run in runs), [(run.run_id, run.status) for run in runs]
