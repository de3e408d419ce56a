"""Two `engram build`s on one home at once (issue 19, item 4): the second waits for the first, says for whom, and
each prints its own figures. Before, both printed the catalog's last build (`0 extracted, N unchanged`, though
the first had extracted N) and neither said it waited.

Both builds are real CLI child processes started together on a vault of 30 notes (rules extractor); whichever
takes the home's build lock first (pipelines/build_lock.py) extracts, the other waits for it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from pipelines.build_lock import HOLDER_FILE
from pipelines.exit_codes import OK

REPOSITORY = Path(__file__).resolve().parents[1]
NOTES = 30
SUMMARY = re.compile(r"^built (\d+) documents: (\d+) extracted, (\d+) failed(?: \([^)]*\))?, (\d+) unchanged", re.M)


def test_a_second_build_waits_for_the_first_says_so_and_prints_its_own_figures(tmp_path: Path) -> None:
    vault, home = tmp_path / "vault", tmp_path / "home"
    for index in range(NOTES):
        note = vault / f"notes/n{index:02d}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"# Note {index}\n\nNote{index} Project runs on Dagster with Team{index} Group.\n", "utf-8")
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("ENGRAM_", "DAGSTER_"))}
    environment["PYTHONPATH"] = str(REPOSITORY)
    command = [sys.executable, "-m", "pipelines.cli", "build", "--vault", str(vault), "--home", str(home),
               "--extractor", "rules"]  # fmt: skip
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    builds = [subprocess.Popen(command, cwd=REPOSITORY, env=environment, **pipes) for _ in range(2)]  # together
    outputs = [build.communicate(timeout=600) for build in builds]
    assert [build.returncode for build in builds] == [OK, OK], [err[-3000:] for _, err in outputs]

    waited = [index for index, (_, err) in enumerate(outputs) if "waiting for the build started at" in err]
    assert len(waited) == 1, [err[-2000:] for _, err in outputs]  # exactly one waited, and said so
    second = waited[0]
    first = 1 - second
    [line] = [line for line in outputs[second][1].splitlines() if "waiting for the build started at" in line]
    assert f"by PID {builds[first].pid} " in line  # the build it waited for, named by the holder's file

    figures = [tuple(int(value) for value in SUMMARY.search(out).groups()) for out, _ in outputs]
    assert figures[first] == (NOTES, NOTES, 0, 0)  # documents, extracted, failed, unchanged: its own work
    assert figures[second] == (NOTES, 0, 0, NOTES)  # nothing left to do once it had waited
    assert figures[first][1] + figures[second][1] == NOTES  # every note extracted once

    status = subprocess.run([sys.executable, "-m", "pipelines.cli", "status", "--home", str(home), "--json"],
                            cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert json.loads(status.stdout)["documents"] == NOTES
    assert not (home / HOLDER_FILE).exists()  # each build removed its holder file when it let go of the lock
