"""The decision-graph asset and the HEAD sensor over real git repositories (tests/gitrepo.py): the asset ingests
incrementally into a real home, reports per repository, fails clearly on a folder that is not a repository;
the sensor asks for a run exactly when a HEAD moved."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pytest

from assets.gitgraph import GitRepositories, git_decision_graph, git_repositories_from_env
from assets.resources import EngramStores
from engramrag.gitgraph.store import gitgraph_reader, repo_id
from engramrag.store import Home
from pipelines.git_sensors import git_head_sensor, ingest_git_history_job
from tests.gitrepo import FixtureRepo, add_commits, build_fixture_repo, git


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory: pytest.TempPathFactory) -> FixtureRepo:
    return build_fixture_repo(tmp_path_factory.mktemp("gitrepo") / "service")


def stores(tmp_path: Path) -> EngramStores:
    (tmp_path / "vault").mkdir(exist_ok=True)
    return EngramStores(home=str(tmp_path / "home"), vault=str(tmp_path / "vault"))


def materialize(tmp_path: Path, repos: GitRepositories, raise_on_error: bool = True) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [git_decision_graph],
        resources={"engram": stores(tmp_path), "git_repos": repos},
        raise_on_error=raise_on_error,
    )


def metadata(result: dg.ExecuteInProcessResult) -> dict[str, object]:
    [event] = result.asset_materializations_for_node("git_decision_graph")
    return {key: value.value for key, value in event.metadata.items()}


def stored_commits(tmp_path: Path, root: Path) -> int:
    with gitgraph_reader(Home.at(tmp_path / "home")) as connection:
        return connection.execute("SELECT count(*) FROM commits WHERE repo_id = ?", [repo_id(root)]).fetchone()[0]


def test_asset_ingests_then_adds_only_the_new_commits(tmp_path: Path):
    repo = build_fixture_repo(tmp_path / "service")
    repos = GitRepositories(paths=str(repo.root))
    first = metadata(materialize(tmp_path, repos))
    report = first[str(repo.root.resolve())]
    assert report["mode"] == "full"
    assert report["commits_added"] == len(repo.shas()) == stored_commits(tmp_path, repo.root)
    assert report["decisions"] > 0 and report["head"] == repo.head
    assert first["repositories"] == 1 and first["commits_added"] == len(repo.shas())

    added = add_commits(repo, 2)
    second = metadata(materialize(tmp_path, repos))
    report = second[str(repo.root.resolve())]
    assert (report["mode"], report["commits_added"], report["head"]) == ("incremental", 2, added[-1])
    assert second["commits_added"] == 2
    assert stored_commits(tmp_path, repo.root) == len(repo.shas()) + 2

    third = metadata(materialize(tmp_path, repos))
    assert third[str(repo.root.resolve())]["mode"] == "unchanged" and third["commits_added"] == 0


def test_repositories_come_from_the_environment_separated_like_path(
    tmp_path: Path, fixture_repo: FixtureRepo, monkeypatch: pytest.MonkeyPatch
):
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    add_commits(other, 3)
    monkeypatch.setenv("ENGRAM_GIT_REPOS", os.pathsep.join([str(fixture_repo.root), "", str(other), str(other)]))
    result = metadata(materialize(tmp_path, git_repositories_from_env()))
    assert result["repositories"] == 2
    assert result[str(other.resolve())]["commits_added"] == 3
    assert result[str(fixture_repo.root.resolve())]["commits_added"] == len(fixture_repo.shas())
    assert stored_commits(tmp_path, other) == 3


def test_no_repository_configured_ingests_nothing(tmp_path: Path):
    result = metadata(materialize(tmp_path, GitRepositories(paths="")))
    assert result == {"repositories": 0, "commits_added": 0}
    assert not (tmp_path / "home" / "gitgraph.duckdb").exists()


def test_a_folder_that_is_not_a_repository_fails_with_its_path(tmp_path: Path):
    plain = tmp_path / "not-a-repo"
    plain.mkdir()
    result = materialize(tmp_path, GitRepositories(paths=str(plain)), raise_on_error=False)
    assert not result.success
    [failure] = [event for event in result.all_events if event.event_type == dg.DagsterEventType.STEP_FAILURE]
    message = failure.step_failure_data.error.message
    assert "ENGRAM_GIT_REPOS" in message and str(plain.resolve()) in message and "not a git repository" in message


def tick(repos: GitRepositories, cursor: str | None):
    context = dg.build_sensor_context(cursor=cursor, resources={"git_repos": repos})
    return git_head_sensor(context)


def test_sensor_requests_a_run_only_when_a_head_moved(tmp_path: Path):
    repo = build_fixture_repo(tmp_path / "service")
    repos = GitRepositories(paths=str(repo.root))

    first = tick(repos, None)
    [request] = first.run_requests
    assert first.cursor == repo.head and request.run_key == f"heads-{repo.head}"
    assert git_head_sensor.job_name == ingest_git_history_job.name == "ingest_git_history"
    assert git_head_sensor.default_status == dg.DefaultSensorStatus.STOPPED

    unchanged = tick(repos, first.cursor)
    assert isinstance(unchanged, dg.SkipReason) and "no HEAD moved" in unchanged.skip_message

    [moved_to] = add_commits(repo, 1)
    moved = tick(repos, first.cursor)
    [request] = moved.run_requests
    assert moved.cursor == moved_to and request.run_key == f"heads-{moved_to}" != f"heads-{first.cursor}"
    assert isinstance(tick(repos, moved.cursor), dg.SkipReason)


def test_sensor_skips_with_the_reason_when_a_path_is_not_a_repository(tmp_path: Path):
    plain = tmp_path / "plain"
    plain.mkdir()
    skipped = tick(GitRepositories(paths=str(plain)), None)
    assert isinstance(skipped, dg.SkipReason) and "not a git repository" in skipped.skip_message
    assert "names no repository" in tick(GitRepositories(paths=""), None).skip_message
