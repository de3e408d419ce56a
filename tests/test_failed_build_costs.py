"""The cost page after a build whose every model call failed (issue 19, item 5): it must not say the extractor
"calls no model", and must not chart a time "per extracted document" when none was extracted. One `openai` build
of two notes against a port on 127.0.0.1 where nothing listens."""

from __future__ import annotations

import math
import socket

import pytest
from streamlit.testing.v1 import AppTest

from engramrag.metrics.lifecycle import read_lifecycle_metrics
from engramrag.store import Home
from pipelines.exit_codes import ALL_FAILED
from tests.conftest import build_environment
from tests.test_dashboard_costs import costs_page
from tests.test_llm_lifecycle import MODEL, llm_environment, run_cli, write_prices, write_vault

NOTES = {
    "alpha.md": "# Alpha\n\nAlpha Project keeps its catalog in DuckDB.\n",
    "beta.md": "# Beta\n\nBeta Team reviews Alpha Project every Monday.\n",
}


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def failed_home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    root = tmp_path_factory.mktemp("failed-costs")
    vault = write_vault(root / "vault", NOTES)
    home = Home.at(root / "home")
    with build_environment(), pytest.MonkeyPatch.context() as patch:
        llm_environment(patch, f"http://127.0.0.1:{closed_port()}/v1", write_prices(root / "prices.json"))
        code, _ = run_cli("build", "--vault", str(vault), "--home", str(home.root), "--extractor", "openai")
    assert code == ALL_FAILED
    return home


def test_a_build_that_extracted_nothing_has_no_time_per_extracted_document(failed_home: Home) -> None:
    times = read_lifecycle_metrics(failed_home).rebuild_times
    assert times["extracted"].tolist() == [0] and times["failed"].tolist() == [2]
    assert math.isnan(times["seconds_per_document"].iloc[0])
    assert times["extraction_seconds"].iloc[0] >= 0  # the failed attempts' time is still shown in total


def test_the_cost_page_says_the_model_calls_failed(failed_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    app: AppTest = costs_page(monkeypatch, failed_home.root)
    assert not app.exception
    infos = [info.value for info in app.info]
    assert not any("calls no model" in text for text in infos)
    assert any(f"all 2 extraction(s) that called a model ({MODEL}) failed" in text for text in infos)


def test_the_message_without_a_model_and_from_the_cache() -> None:
    import pandas as pd

    from dashboards.views.costs import no_tokens_message

    rules = pd.DataFrame({"extractor": ["rules"], "model": [None], "status": ["extracted"]})
    assert "used rules, which calls no model" in no_tokens_message(rules)
    cached = pd.DataFrame({"extractor": ["openai"], "model": [MODEL], "status": ["extracted"]})
    assert "response cache" in no_tokens_message(cached)
