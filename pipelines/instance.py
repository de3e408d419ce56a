"""The Dagster instance of a home: ``<home>/dagster``, configured by the repository's dagster.yaml, so that
`engram build` and `engram dev` (the Dagster UI) share runs, lineage and partition status."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from engramrag.store import Home

if TYPE_CHECKING:
    import dagster as dg

REPOSITORY = Path(__file__).resolve().parents[1]
INSTANCE_SETTINGS = REPOSITORY / "dagster.yaml"
WORKSPACE = REPOSITORY / "workspace.yaml"


def prepare_instance(home: Home) -> Path:
    """Create ``<home>/dagster`` with the repository's instance settings; the environment is left as it is (a
    command that starts Dagster in another process passes DAGSTER_HOME to it)."""
    dagster_home = home.dagster_home
    dagster_home.mkdir(parents=True, exist_ok=True)
    target = dagster_home / "dagster.yaml"
    if not target.exists() or target.read_bytes() != INSTANCE_SETTINGS.read_bytes():
        shutil.copyfile(INSTANCE_SETTINGS, target)
    return dagster_home


def open_instance(home: Home) -> dg.DagsterInstance:
    """The home's Dagster instance (prepared first), as ``DagsterInstance.get()`` would open it with DAGSTER_HOME
    pointing at ``<home>/dagster``."""
    import dagster as dg

    return dg.DagsterInstance.from_config(str(prepare_instance(home)))
