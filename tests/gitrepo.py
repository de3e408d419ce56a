"""Real git repositories for the decision-graph tests, built with the ``git`` command.

``build_fixture_repo`` makes one small history with everything the decision graph reads: several authors and
a committer who is not the author, an AI agent as co-author (a ``Co-authored-by: Claude`` trailer) and as
author (the Copilot coding agent), a rename, Nygard ADRs that supersede each other (on a branch, merged with a
merge commit), a MADR record, a date-named record, two conflicting DECISIONS.md records of the same day, a
record that becomes obsolete, and AGENTS.md changing over time, with another one in a subfolder. Dates are
fixed (some in +09:00), so every sha is the same on every run. ``add_commits`` extends it for the incremental
tests.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from pathlib import Path

PEOPLE = {
    "alice": ("Alice Kim", "alice@example.com"),
    "bob": ("Bob Lee", "bob@example.com"),
    "carol": ("Carol Park", "carol@example.com"),
    "copilot": ("copilot-swe-agent[bot]", "198982749+Copilot@users.noreply.github.com"),
}
CLAUDE = "Claude <noreply@anthropic.com>"
ALICE = "Alice Kim <alice@example.com>"

ADR_1 = "docs/adr/0001-record-architecture-decisions.md"
ADR_2 = "docs/adr/0002-use-sqlite-for-the-catalog.md"
ADR_3 = "docs/adr/0003-use-lancedb-for-vectors.md"
ADR_4 = "docs/adr/0004-move-the-catalog-to-postgres.md"
DATED = "docs/decisions/2024-04-02-adopt-ruff.md"

README = "# Catalog service\n\nA small catalog and search service.\n"
CATALOG_1 = '"""The catalog."""\n\n\ndef open_catalog(path):\n    return path\n'
CATALOG_2 = '"""The catalog."""\n\nimport sqlite3\n\n\ndef open_catalog(path):\n    return sqlite3.connect(path)\n'
CATALOG_3 = CATALOG_2.replace('"""The catalog."""', '"""The catalog, kept under src/store."""')
CATALOG_4 = CATALOG_3.replace("import sqlite3", "import psycopg").replace("sqlite3.connect", "psycopg.connect")
SEARCH_1 = "def search(query):\n    return []\n"
SEARCH_2 = "CACHE = {}\n\n\ndef search(query):\n    return CACHE.setdefault(query, [])\n"
SEARCH_3 = "CACHE = {}\n\n\ndef search(query):\n    if query in CACHE:\n        return CACHE[query]\n    return []\n"

AGENTS_1 = """# Agent guide

Read this before changing code.

## Style

- Keep functions small.

## Testing

- Run pytest before every commit.
"""
AGENTS_2 = (
    AGENTS_1
    + """
## Storage

- Never write to the catalog outside the lock.
"""
)
AGENTS_3 = AGENTS_2.replace(
    "- Run pytest before every commit.\n", "- Run pytest before every commit.\n- Never skip the lock tests.\n"
)
STORE_AGENTS = "# Store rules\n\n- Every write goes through `open_catalog`.\n"
COPILOT_INSTRUCTIONS = "Follow AGENTS.md in every folder.\n"

DECISIONS_1 = """# Decisions

## 2024-01-10 Search uses BM25 only

Status: Accepted

We rank search results with BM25 in `src/search.py`; no embeddings yet.
"""
DECISIONS_2 = (
    DECISIONS_1
    + """
## 2024-03-05 Cache search results in memory

Status: Accepted

Keep the last 100 results in a dict in `src/search.py`.

## 2024-03-05 Cache search results on disk

Status: Accepted

Write results under .cache/ so they survive restarts.
"""
)
DECISIONS_3 = DECISIONS_2.replace(
    "## 2024-01-10 Search uses BM25 only\n\nStatus: Accepted", "## 2024-01-10 Search uses BM25 only\n\nStatus: Obsolete"
)

ADR_1_TEXT = """# 1. Record architecture decisions

Date: 2024-01-15

## Status

Accepted

## Context

We need to record the architectural decisions made on this project.

## Decision

We will use Architecture Decision Records, as described by Michael Nygard, kept in docs/adr.

## Consequences

Every significant decision gets a numbered record.
"""
ADR_2_TEXT = """# 2. Use SQLite for the catalog

Date: 2024-02-01

## Status

Accepted

## Context

The catalog in `src/catalog.py` needs a small embedded store.

## Decision

We will keep the catalog in SQLite.

## Consequences

One file, no server.
"""
ADR_2_SUPERSEDED = ADR_2_TEXT.replace(
    "## Status\n\nAccepted\n",
    "## Status\n\nSuperseded by [ADR-0004](0004-move-the-catalog-to-postgres.md)\n",
)
ADR_3_TEXT = """# Use LanceDB for vectors

- Status: accepted
- Date: 2024-03-01

## Context and Problem Statement

Search in src/search.py needs vector similarity.

## Decision Outcome

Chosen option: LanceDB, because it is embedded.
"""
ADR_4_TEXT = """# 4. Move the catalog to Postgres

Date: 2024-03-10

## Status

Accepted

Supersedes [ADR-0002](0002-use-sqlite-for-the-catalog.md)

## Context

Several writers need the catalog at once; `src/store/catalog.py` cannot share SQLite safely.

## Decision

We will move the catalog to Postgres.

## Consequences

A server to run.
"""
DATED_TEXT = """# Adopt ruff for linting

Status: Accepted

All Python under src/ is linted with ruff; see pyproject.toml.
"""


@dataclass(frozen=True)
class FixtureRepo:
    """The repository and the shas of its commits, in the order they were made (``branch`` on a side
    branch, merged by ``merge``)."""

    root: Path
    init: str
    adr1: str
    adr2: str
    rename: str
    agents2: str
    madr: str
    conflict: str
    branch: str
    main_side: str
    merge: str
    dated: str
    agents3: str
    copilot: str
    obsolete: str

    @property
    def head(self) -> str:
        return git(self.root, "rev-parse", "HEAD")

    def shas(self) -> list[str]:
        return [getattr(self, f.name) for f in fields(self) if f.name != "root"]


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in the repository with no user or system configuration, and return its output."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    environment.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", LC_ALL="C", **(env or {}))
    command = ["git", "-C", str(root), "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args]
    completed = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {completed.stderr}")
    return completed.stdout.strip()


def identity(author: str, when: str, committer: str | None = None) -> dict[str, str]:
    name, email = PEOPLE[author]
    c_name, c_email = PEOPLE[committer or author]
    return {
        "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_NAME": c_name, "GIT_COMMITTER_EMAIL": c_email, "GIT_COMMITTER_DATE": when,
    }  # fmt: skip


def commit(
    root: Path,
    author: str,
    when: str,
    message: str,
    files: dict[str, str | None] | None = None,
    co_authors: tuple[str, ...] = (),
    committer: str | None = None,
) -> str:
    """Write (or, for None, delete) the files, stage everything and commit; returns the new sha."""
    for path, content in (files or {}).items():
        target = root / path
        if content is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    git(root, "add", "-A")
    if co_authors:
        message += "\n\n" + "\n".join(f"Co-authored-by: {who}" for who in co_authors)
    git(root, "commit", "-q", "--allow-empty", "-m", message, env=identity(author, when, committer))
    return git(root, "rev-parse", "HEAD")


def build_fixture_repo(root: Path) -> FixtureRepo:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    shas: dict[str, str] = {}
    shas["init"] = commit(root, "alice", "2024-01-10T09:00:00+09:00", "Start the catalog service", {
        "README.md": README, "src/catalog.py": CATALOG_1, "src/search.py": SEARCH_1, "AGENTS.md": AGENTS_1,
        "DECISIONS.md": DECISIONS_1,
    })  # fmt: skip
    shas["adr1"] = commit(
        root, "bob", "2024-01-15T10:00:00+00:00", "Record architecture decisions", {ADR_1: ADR_1_TEXT}
    )
    shas["adr2"] = commit(
        root, "alice", "2024-02-01T14:30:00+09:00", "Keep the catalog in SQLite",
        {ADR_2: ADR_2_TEXT, "src/catalog.py": CATALOG_2}, co_authors=(CLAUDE,),
    )  # fmt: skip
    (root / "src/store").mkdir()
    git(root, "mv", "src/catalog.py", "src/store/catalog.py")
    shas["rename"] = commit(root, "bob", "2024-02-10T10:00:00+00:00", "Move the catalog into src/store", {
        "src/store/catalog.py": CATALOG_3,
    })  # fmt: skip
    shas["agents2"] = commit(root, "alice", "2024-02-20T10:00:00+09:00", "Tell agents about storage", {
        "AGENTS.md": AGENTS_2, "src/store/AGENTS.md": STORE_AGENTS,
    })  # fmt: skip
    shas["madr"] = commit(root, "bob", "2024-03-01T10:00:00+00:00", "ADR: LanceDB for vectors", {ADR_3: ADR_3_TEXT})
    shas["conflict"] = commit(
        root, "alice", "2024-03-05T11:00:00+09:00", "Cache search results",
        {"DECISIONS.md": DECISIONS_2, "src/search.py": SEARCH_2}, co_authors=(CLAUDE,),
    )  # fmt: skip
    git(root, "checkout", "-q", "-b", "feature/postgres")
    shas["branch"] = commit(root, "bob", "2024-03-10T10:00:00+00:00", "Move the catalog to Postgres", {
        ADR_4: ADR_4_TEXT, ADR_2: ADR_2_SUPERSEDED, "src/store/catalog.py": CATALOG_4,
    })  # fmt: skip
    git(root, "checkout", "-q", "main")
    shas["main_side"] = commit(root, "alice", "2024-03-12T10:00:00+09:00", "Describe the service", {
        "README.md": README + "\nSee docs/adr for the decisions.\n",
    })  # fmt: skip
    git(
        root, "merge", "-q", "--no-ff", "-m", "Merge branch 'feature/postgres'", "feature/postgres",
        env=identity("carol", "2024-03-15T10:00:00+00:00"),
    )  # fmt: skip
    shas["merge"] = git(root, "rev-parse", "HEAD")
    shas["dated"] = commit(root, "bob", "2024-04-02T10:00:00+00:00", "Adopt ruff", {
        DATED: DATED_TEXT, "pyproject.toml": "[tool.ruff]\nline-length = 100\n",
    })  # fmt: skip
    shas["agents3"] = commit(root, "alice", "2024-04-10T10:00:00+09:00", "Agents: never skip the lock tests", {
        "AGENTS.md": AGENTS_3, ".github/copilot-instructions.md": COPILOT_INSTRUCTIONS,
    })  # fmt: skip
    shas["copilot"] = commit(
        root, "copilot", "2024-04-12T10:00:00+00:00", "Speed up search", {"src/search.py": SEARCH_3},
        co_authors=(ALICE,), committer="alice",
    )  # fmt: skip
    shas["obsolete"] = commit(root, "bob", "2024-04-20T10:00:00+00:00", "BM25-only search is obsolete", {
        "DECISIONS.md": DECISIONS_3,
    })  # fmt: skip
    return FixtureRepo(root=root, **shas)


def add_commits(repo: FixtureRepo | Path, n: int) -> list[str]:
    """``n`` more commits on the current branch, alternating Alice and Bob, a day apart after the last one (or
    from 2024-05-02 in an empty repository); each appends a line to CHANGELOG.md. Returns their shas, oldest
    first."""
    root = repo.root if isinstance(repo, FixtureRepo) else repo
    has_commits = bool(git(root, "rev-list", "--all", "-n", "1"))
    last = datetime.fromisoformat(
        git(root, "log", "-1", "--format=%cI") if has_commits else "2024-05-01T00:00:00+00:00"
    )
    changelog = root / "CHANGELOG.md"
    shas = []
    for index in range(n):
        text = changelog.read_text(encoding="utf-8") if changelog.exists() else "# Changelog\n"
        when = (last + timedelta(days=index + 1)).isoformat()
        author = ("alice", "bob")[index % 2]
        shas.append(commit(root, author, when, f"Changelog entry {index + 1}", {
            "CHANGELOG.md": text + f"\n- entry {index + 1}\n",
        }))  # fmt: skip
    return shas
