"""The decision graph over git repositories: their history, decision records and agent instructions.

The repositories are configuration, not vault content, so they come from their own resource
(``ENGRAM_GIT_REPOS``) and the asset stands apart from the document lifecycle: the gitgraph store has its own
lock, so an ingest neither waits for a vault build nor holds one up.
"""

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from assets.resources import EngramStores
from engramrag.gitgraph.gitcli import GitError
from engramrag.gitgraph.ingest import IngestSummary, ingest

REPOS_ENV = "ENGRAM_GIT_REPOS"


class GitRepositories(dg.ConfigurableResource):
    """The git repositories whose history feeds the decision graph."""

    paths: str = Field(
        default="",
        description=f"Repository folders separated by {os.pathsep!r} (the PATH convention); empty: none.",
    )

    def repositories(self) -> list[Path]:
        """The configured folders, in order, without blanks or repeats (one repository ingested twice per run
        would only log an 'unchanged' run)."""
        seen: dict[Path, None] = {}
        for part in self.paths.split(os.pathsep):
            if part.strip():
                seen.setdefault(Path(part.strip()).expanduser().resolve(), None)
        return list(seen)


def git_repositories_from_env() -> GitRepositories:
    return GitRepositories(paths=dg.EnvVar(REPOS_ENV))


def summary_metadata(summary: IngestSummary) -> dict[str, object]:
    """What one repository's ingest did, as the asset's metadata shows it."""
    return {
        "mode": summary.mode,
        "commits_added": summary.commits_added,
        "decisions": summary.decision_versions,
        "instructions": summary.instruction_versions,
        "head": summary.to_sha,
        "seconds": round(summary.seconds, 3),
        "note": summary.note,
    }


@dg.asset(
    group_name="gitgraph",
    kinds={"git", "duckdb"},
    description=f"The decision graph of each repository in {REPOS_ENV}: commits, people (AI agents marked), "
    "decision records with every version, supersession links and same-day conflicts, blame, and agent "
    "instruction files. Incremental: only commits after the HEAD ingested before are read.",
)
def git_decision_graph(
    context: dg.AssetExecutionContext, engram: EngramStores, git_repos: GitRepositories
) -> dg.MaterializeResult:
    repositories = git_repos.repositories()
    if not repositories:
        context.log.info(f"{REPOS_ENV} names no repository: nothing to ingest")
    metadata: dict[str, object] = {"repositories": len(repositories)}
    total = 0
    for path in repositories:
        try:
            summary = ingest(path, engram.home_dir(), progress=False)
        except GitError as error:
            raise dg.Failure(
                description=f"Cannot ingest {path} (from {REPOS_ENV}): {error}",
                metadata={"repository": str(path)},
            ) from error
        context.log.info(f"{path}: {summary.mode}, {summary.commits_added} commits added. {summary.note}".strip())
        metadata[str(path)] = dg.MetadataValue.json(summary_metadata(summary))
        total += summary.commits_added
    metadata["commits_added"] = total
    return dg.MaterializeResult(metadata=metadata)
