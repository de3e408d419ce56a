"""The git HEAD sensor: a run of the decision-graph ingest whenever a configured repository's HEAD moves."""

import dagster as dg

from assets.gitgraph import REPOS_ENV, GitRepositories, git_decision_graph
from engramrag.gitgraph.gitcli import Git, GitError

NO_COMMITS = "none"

ingest_git_history_job = dg.define_asset_job(
    "ingest_git_history",
    selection=dg.AssetSelection.assets(git_decision_graph),
    description=f"Ingest the new commits of every repository in {REPOS_ENV} into the decision graph.",
)


def current_heads(git_repos: GitRepositories) -> str:
    """The HEAD of each repository, in configured order, comma-separated (``none`` for one without commits).

    This one string is both the cursor and the run key: a run is asked for once per distinct set of HEADs,
    and adding or removing a repository changes it too."""
    heads = []
    for path in git_repos.repositories():
        git = Git(path)
        if not path.is_dir() or not git.is_repository():
            raise GitError(f"{path} (from {REPOS_ENV}) is not a git repository")
        heads.append(git.head() or NO_COMMITS)
    return ",".join(heads)


@dg.sensor(
    job=ingest_git_history_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description=f"Reads the HEAD of each repository in {REPOS_ENV} and requests an ingest when any moved.",
)
def git_head_sensor(context: dg.SensorEvaluationContext, git_repos: GitRepositories) -> dg.SensorResult | dg.SkipReason:
    if not git_repos.repositories():
        return dg.SkipReason(f"{REPOS_ENV} names no repository")
    try:
        heads = current_heads(git_repos)
    except GitError as problem:
        return dg.SkipReason(str(problem))
    if heads == context.cursor:
        return dg.SkipReason("no HEAD moved since the last run was requested")
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=f"heads-{heads}")], cursor=heads)
