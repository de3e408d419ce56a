"""The command line's help names the choices a new user needs (issue 19): extractors, the Dagster UI's options."""

from __future__ import annotations

import pytest

from pipelines.cli import main


def help_of(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_build_help_lists_the_extractors(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(capsys, "build")
    assert all(choice in text for choice in ("rules (offline, default)", "openai", "replay:FILE"))


def test_dev_help_explains_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(capsys, "dev")
    assert "The vault the UI's sensor watches" in text and "port of the Dagster UI" in text
