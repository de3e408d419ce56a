"""The line `engram build` (and `engram status`) prints adds up: every live document is extracted, failed or
unchanged, and a failed document is counted as failed only, never also as unchanged. Three `openai` builds of
four notes through a real model server on 127.0.0.1 (tests/llm_server.py): one note fails, then fails again,
then is the only one retried once the server heals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from pipelines.exit_codes import ALL_FAILED, OK, SOME_FAILED
from tests.conftest import build_environment
from tests.llm_server import LLMServer
from tests.test_llm_lifecycle import NOTES, Responder, llm_environment, run_cli, write_prices, write_vault


@dataclass
class Builds:
    printed: list[str] = field(default_factory=list)  # the summary line of each build
    status_lines: list[str] = field(default_factory=list)  # `engram status`'s last-build line after each
    last_builds: list[dict] = field(default_factory=list)  # `engram status --json`'s last_build after each
    documents: list[int] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)  # each build's exit code


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Builds]:
    root = tmp_path_factory.mktemp("build-summary")
    vault = write_vault(root / "vault", NOTES)
    home = root / "home"
    responder = Responder()
    found = Builds()
    with LLMServer(responder=responder) as server, build_environment(), pytest.MonkeyPatch.context() as patch:
        llm_environment(patch, server.url, write_prices(root / "prices.json"))
        for heal in (False, False, True):
            responder.broken = not heal
            code, out = run_cli("build", "--vault", str(vault), "--home", str(home), "--extractor", "openai")
            found.codes.append(code)
            found.printed.append(next(line for line in out.splitlines() if line.startswith("built ")))
            _, out = run_cli("status", "--home", str(home))
            found.status_lines.append(next(line for line in out.splitlines() if line.startswith("last build ")))
            _, out = run_cli("status", "--home", str(home), "--json")
            status = json.loads(out)
            found.last_builds.append(status["last_build"])
            found.documents.append(status["documents"])
    yield found


def test_the_exit_code_says_some_failed_then_all_failed_then_done(builds: Builds) -> None:
    # 1st build: three notes extracted, one failed (4); 2nd: the one retried fails again, nothing extracted (5);
    # 3rd: the server healed (0). Cron jobs and CI see each.
    assert builds.codes == [SOME_FAILED, ALL_FAILED, OK]


def test_a_build_with_one_failed_note_counts_it_as_failed_only(builds: Builds) -> None:
    assert builds.printed[0].startswith(
        "built 4 documents: 3 extracted, 1 failed (retried by the next build), 0 unchanged; 0 deleted, "
        "0 rejected files ("
    )


def test_a_note_that_fails_again_is_not_also_unchanged(builds: Builds) -> None:
    assert builds.printed[1].startswith(
        "built 4 documents: 0 extracted, 1 failed (retried by the next build), 3 unchanged; 0 deleted, "
        "0 rejected files ("
    )


def test_the_build_that_retries_only_the_failed_note(builds: Builds) -> None:
    assert builds.printed[2].startswith("built 4 documents: 1 extracted, 0 failed, 3 unchanged; 0 deleted, ")


def test_status_reports_the_same_figures_and_they_add_up(builds: Builds) -> None:
    for printed, status_line in zip(builds.printed, builds.status_lines, strict=True):
        assert status_line.endswith(": " + printed.removeprefix("built ").rsplit(" (", 1)[0])
    for documents, last in zip(builds.documents, builds.last_builds, strict=True):
        assert last["extracted"] + last["failed"] + last["unchanged"] == documents == len(NOTES)
    assert [(last["extracted"], last["failed"], last["unchanged"]) for last in builds.last_builds] == [
        (3, 1, 0), (0, 1, 3), (1, 0, 3),
    ]
