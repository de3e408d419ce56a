"""When each note of a vault inside a git work tree was first committed: the third source of a document's date
(``engramrag.vault.dates``), read with one ``git log`` for the whole vault."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from engramrag.gitgraph.gitcli import Git, GitError


def first_commit_dates(vault: Path) -> dict[str, datetime]:
    """Vault-relative path -> the time of the commit that first added it; empty when the vault is not in a git
    work tree or git cannot answer (a date then comes from the file's modification time)."""
    git = Git(vault)
    try:
        if not git.is_repository():
            return {}
        output = git.text("log", "--diff-filter=A", "--no-renames", "--relative", "--format=%x00%ct",
                          "--name-only", "-z", "--", ".")
    except (GitError, OSError):
        return {}
    dates: dict[str, datetime] = {}
    when: datetime | None = None
    for field in output.split("\0"):
        field = field.strip("\n")
        if not field:
            continue
        if field.isdigit() and len(field) >= 9:
            when = datetime.fromtimestamp(int(field), UTC)
        elif when is not None:
            dates[field] = when  # git log runs newest first: the last commit seen is the first that added it
    return dates
