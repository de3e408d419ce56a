"""The dashboard's frame and its Lifecycle costs page, run by Streamlit's AppTest on a real built home; the
screenshot script's server on a real 127.0.0.1 port."""

from __future__ import annotations

import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboards.screenshots import find_chromium, screenshot_pages, streamlit_server
from dashboards.stores import HOME_KEY, default_home_dir
from engramrag.store import Home
from pipelines.build import run_build
from tests.conftest import build_environment

REPOSITORY = Path(__file__).resolve().parents[1]
APP = REPOSITORY / "dashboards" / "app.py"
EXAMPLE_VAULT = REPOSITORY / "examples" / "vault"
COSTS_PAGE = "views/costs.py"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    """A home with two builds: the example vault, then one edited document and one unreadable file."""
    root = tmp_path_factory.mktemp("dashboard")
    vault = root / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    with build_environment():
        home = Home.at(root / "home")
        assert run_build(home, vault).success
        with open(vault / "projects" / "falcon.md", "a", encoding="utf-8") as handle:
            handle.write("\nThe Falcon review moved to Thursday.\n")
        (vault / "broken.md").write_bytes(b"\x00\x01binary")
        assert run_build(home, vault).success
        yield home


def costs_page(monkeypatch: pytest.MonkeyPatch, home_dir: Path) -> AppTest:
    monkeypatch.setenv("ENGRAM_HOME", str(home_dir))
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.switch_page(COSTS_PAGE)
    return app.run()


def test_costs_page_draws_the_charts_and_tables_of_a_built_home(
    built: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = costs_page(monkeypatch, built.root)
    assert not app.exception
    assert [title.value for title in app.title] == ["Lifecycle costs"]
    assert app.sidebar.text_input(key=HOME_KEY).value == str(built.root)
    charts = app.get("vega_lite_chart")
    assert len(charts) == 5  # documents per build, latency, extraction time, time per document, store sizes
    subheaders = [header.value for header in app.subheader]
    assert subheaders == ["Documents per build", "Extraction latency per build", "Incremental vs full builds",
                          "Tokens and cost", "Store sizes", "Failures"]
    runs = app.dataframe[0].value
    assert runs["mode"].tolist() == ["full", "incremental"]
    assert runs["extracted"].tolist()[1] == 1
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Builds"] == "2" and metrics["Extracted in the last build"] == "1"
    assert any("No tokens were spent" in info.value for info in app.info)
    failures = app.dataframe[-1].value
    assert failures["path"].tolist() == ["broken.md"] and failures["reason"].tolist() == ["binary"]


def test_empty_home_says_to_run_engram_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "not-built"
    app = costs_page(monkeypatch, missing)
    assert not app.exception
    assert len(app.info) == 1 and f"engram build --vault VAULT --home {missing}" in app.info[0].value
    assert not app.get("vega_lite_chart") and not app.dataframe
    assert not missing.exists()  # the dashboard never creates a home

    created = tmp_path / "created-but-empty"
    created.mkdir()
    assert "engram build" in costs_page(monkeypatch, created).info[0].value


def test_the_home_is_selectable_in_the_sidebar(built: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = costs_page(monkeypatch, tmp_path / "elsewhere")
    assert not app.get("vega_lite_chart")
    app.sidebar.text_input(key=HOME_KEY).set_value(str(built.root)).run()
    assert not app.exception
    assert len(app.get("vega_lite_chart")) == 5
    assert f"`{built.root}`" in app.caption[0].value


def test_default_home_comes_from_the_argument_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_HOME", "/from/env")
    assert default_home_dir(["--home", "/from/arg"]) == "/from/arg"
    assert default_home_dir(["--unrelated", "x"]) == "/from/env"
    monkeypatch.delenv("ENGRAM_HOME")
    assert default_home_dir([]) == ".engram"


def test_no_pages_folder_beside_the_app() -> None:
    """Streamlit runs a ``pages/`` folder next to the entry script in its old multipage mode: a page opened by
    URL then runs without the frame (no home picker) and st.navigation is bypassed. Pages live in views/."""
    assert not (APP.parent / "pages").exists()


def test_screenshot_server_answers_on_loopback_and_stops(built: Home, tmp_path: Path) -> None:
    with streamlit_server(built.root, tmp_path / "streamlit.log", timeout_s=60) as url:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as response:
            assert response.read() == b"ok"
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)


def test_screenshot_of_the_costs_page(built: Home, tmp_path: Path) -> None:
    pytest.importorskip("playwright", reason="screenshots need: pip install playwright")
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("screenshots need a Chromium: apt-get install -y chromium")
    from PIL import Image

    from dashboards.app import PAGES

    with streamlit_server(built.root, tmp_path / "streamlit.log", timeout_s=60) as url:
        written = screenshot_pages(url, tmp_path / "shots", PAGES[:1], chromium, timeout_s=60)
    assert written == [tmp_path / "shots" / "costs.png"]
    with Image.open(written[0]) as image:
        assert image.format == "PNG"
        assert image.width == 1440 and image.height > 1500  # the whole page, charts included
