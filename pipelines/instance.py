"""The Dagster instance of a home: ``<home>/dagster``, configured by the repository's dagster.yaml, so that
`engram build` and `engram dev` (the Dagster UI) share runs, lineage and partition status."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from engramrag.store import Home

REPOSITORY = Path(__file__).resolve().parents[1]
INSTANCE_SETTINGS = REPOSITORY / "dagster.yaml"
WORKSPACE = REPOSITORY / "workspace.yaml"


def prepare_instance(home: Home) -> Path:
    """Create ``<home>/dagster`` with the repository's instance settings and point DAGSTER_HOME at it."""
    dagster_home = home.dagster_home
    dagster_home.mkdir(parents=True, exist_ok=True)
    target = dagster_home / "dagster.yaml"
    if not target.exists() or target.read_bytes() != INSTANCE_SETTINGS.read_bytes():
        shutil.copyfile(INSTANCE_SETTINGS, target)
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    return dagster_home
