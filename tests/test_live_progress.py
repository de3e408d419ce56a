"""The progress display is live on a real terminal while Dagster runs the build (issue 19, item 2), and the same
progress is in the run's logs in the Dagster UI.

Recorded before the fix in a pty during an 800-note build: blank for 3 s, nothing for 31 s, then the bars appeared
already full, because Dagster captures a step's standard error while it runs. Here `engram build` of a few hundred
generated notes runs in a pty and every chunk it writes is timed."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time

import pytest

from engramrag.store import Home
from eval.synthetic_vault import generate_vault
from pipelines.instance import open_instance

NOTES = 300


def record_in_pty(argv: list[str], environment: dict[str, str]) -> tuple[list[tuple[float, str]], float, int]:
    """Every chunk the command wrote to its terminal with the second it arrived, the second it ended, its code."""
    leader, follower = pty.openpty()
    os.set_blocking(leader, True)
    started = time.monotonic()
    process = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, env=environment)
    os.close(follower)
    chunks: list[tuple[float, str]] = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other end is closed, the command has exited
            break
        if not data:
            break
        chunks.append((time.monotonic() - started, data.decode("utf-8", "replace")))
    code = process.wait(timeout=600)
    os.close(leader)
    return chunks, time.monotonic() - started, code


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[tuple[float, str]], float, int, Home]:
    root = tmp_path_factory.mktemp("live-progress")
    vault = root / "vault"
    generate_vault(vault, NOTES, seed=7)
    home = Home.at(root / "home")
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("ENGRAM_", "DAGSTER_"))}
    environment |= {"COLUMNS": "120", "LINES": "40", "TERM": "xterm-256color"}
    argv = [sys.executable, "-m", "pipelines.cli", "build", "--vault", str(vault), "--home", str(home.root)]
    chunks, ended, code = record_in_pty(argv, environment)
    return chunks, ended, code, home


def test_the_bars_move_on_the_terminal_while_the_build_runs(recorded) -> None:
    chunks, ended, code, _ = recorded
    assert code == 0, "".join(text for _, text in chunks)[-3000:]
    summary_at = next(at for at, text in chunks if "built " in text)
    extract = [at for at, text in chunks if "extract documents" in text]
    assert extract, "no extraction progress was drawn"
    # Drawn as it happens: the first extraction bar seconds before the summary, and redrawn many times between.
    assert extract[0] < summary_at - 2.0, (extract[0], summary_at, ended)
    assert len([at for at in extract if at < summary_at]) >= 4
    seen = "".join(text for at, text in chunks if at < summary_at)
    for stage in ("read documents", "extract documents", "embed documents", "resolve entities", "retrieval index"):
        assert stage in seen, f"no live progress for {stage!r}"
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen)
    assert re.search(rf"extract documents\s[^\n\r]*\b{NOTES}/{NOTES}\b", plain), "the bar never reached the end"


def test_the_progress_is_in_the_runs_logs_in_the_dagster_ui(recorded) -> None:
    chunks, _, _, home = recorded
    run_id = re.search(r"\[run ([0-9a-f-]{36})\]", "".join(text for _, text in chunks)).group(1)
    with open_instance(home) as instance:
        messages = [entry.user_message for entry in instance.all_logs(run_id)]
    assert any(message.startswith("extract documents: ") for message in messages)
    assert any(message == f"extract documents: {NOTES}/{NOTES}" for message in messages)
