"""The Entity timeline page, run by Streamlit's AppTest on a home really built from a small vault where the billing
service's owner changes twice (once in a Korean note that names it by its alias) and its vendor once: the chart's
data, the current values, the table, which note replaced which, the property filter and the empty states. The page
must write nothing, so the catalog file is compared before and after."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from streamlit import dataframe_util
from streamlit.testing.v1 import AppTest

from engramrag.store import Home
from pipelines.build import run_build
from tests.conftest import build_environment

APP = Path(__file__).resolve().parents[1] / "dashboards" / "app.py"
PAGE = "views/history.py"
NAMES = {"Billing service", "billing service", "결제 서비스"}
SERVICE = "services/billing-service.md"
SYNC = "meetings/2024-03-04-billing-sync.md"
KOREAN = "meetings/2024-06-10-결제-회의.md"
NOTES = {
    SERVICE: "---\ntitle: Billing service\nupdated: 2024-01-10\naliases: [결제 서비스]\n---\n# Billing service\n\n"
             "Owner: Minji Park\nVendor: Stripe\n",
    SYNC: "# Billing sync\n\n- Billing service owner: Daniel Cho\n",
    KOREAN: "# 결제 회의\n\n- 결제 서비스 담당자: 이서연\n- Billing service vendor: Adyen\n",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    root = tmp_path_factory.mktemp("history_page")
    vault = root / "vault"
    for path, text in NOTES.items():
        (vault / path).parent.mkdir(parents=True, exist_ok=True)
        (vault / path).write_text(text, encoding="utf-8")
    with build_environment():
        home = Home.at(root / "home")
        assert run_build(home, vault).success
        yield home


def open_page(monkeypatch: pytest.MonkeyPatch, home_dir: Path) -> AppTest:
    monkeypatch.setenv("ENGRAM_HOME", str(home_dir))
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.switch_page(PAGE)
    return checked(app.run())


def checked(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    return app


def chart_data(app: AppTest) -> pd.DataFrame:
    charts = app.get("vega_lite_chart")
    assert len(charts) == 1
    datasets = charts[0].proto.datasets
    assert len(datasets) == 1  # every layer draws the same rows
    return dataframe_util.convert_arrow_bytes_to_pandas_df(datasets[0].data.data)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_choosing_the_billing_service_shows_its_owners_and_vendors_over_time(
    built: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = digest(built.catalog_path)
    app = open_page(monkeypatch, built.root)
    assert [title.value for title in app.title] == ["Entity timeline"]
    picker = app.selectbox(key="history_subject")
    assert len(picker.options) == 1 and picker.options[0] in NAMES  # the one entity whose values changed
    checked(picker.set_value(picker.options[0]).run())

    data = chart_data(app)
    owner = data[data["property"] == "owner"]
    assert owner["value"].tolist() == ["Minji Park", "Daniel Cho", "이서연"]
    assert owner["current"].tolist() == [False, False, True]
    assert owner["start"].tolist() == ["2024-01-10", "2024-03-04", "2024-06-10"]
    assert owner["end"].tolist()[:2] == ["2024-03-04", "2024-06-10"]  # each value holds until the next one
    assert owner["end"].tolist()[2] >= "2024-06-10"
    assert owner["document"].tolist() == [f"{SERVICE}:8", f"{SYNC}:3", f"{KOREAN}:3"]
    assert owner["date_source"].tolist()[0] == "front_matter:updated"
    assert owner["quote"].tolist()[2] == "- 결제 서비스 담당자: 이서연"
    vendor = data[data["property"] == "vendor"]
    assert vendor["value"].tolist() == ["Stripe", "Adyen"] and vendor["current"].tolist() == [False, True]

    assert {metric.label: metric.value for metric in app.metric} == {"owner": "이서연", "vendor": "Adyen"}
    table = app.dataframe[0].value
    assert table[["date", "property", "value", "current"]].values.tolist() == [
        ["2024-01-10", "owner", "Minji Park", False],
        ["2024-03-04", "owner", "Daniel Cho", False],
        ["2024-06-10", "owner", "이서연", True],
        ["2024-01-10", "vendor", "Stripe", False],
        ["2024-06-10", "vendor", "Adyen", True],
    ]
    assert table["document"].tolist()[1] == f"{SYNC}:3"
    assert table["quote"].tolist()[1] == "- Billing service owner: Daniel Cho"
    assert table["why"].tolist()[1] == "replaced on 2024-06-10" and table["why"].tolist()[2] == "latest version"

    replaced = next(block.value for block in app.markdown if "replaced" in block.value).splitlines()
    assert len(replaced) == 4  # three owner pairs (each later note replaces every earlier one) and one vendor pair
    assert any(f"`{KOREAN}` replaced `{SYNC}`" in line and "Daniel Cho → **이서연**" in line for line in replaced)
    assert all("a later note gives another value" in line for line in replaced)
    assert any("결제 서비스" in caption.value and "Written in the notes as" in caption.value
               for caption in app.caption)
    assert digest(built.catalog_path) == before


def test_an_alias_typed_in_korean_and_the_property_filter(built: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    app = open_page(monkeypatch, built.root)
    checked(app.text_input(key="history_name").set_value("결제 서비스").run())
    assert len(chart_data(app)) == 5
    checked(app.selectbox(key="history_property").set_value("vendor").run())
    assert chart_data(app)["value"].tolist() == ["Stripe", "Adyen"]
    assert app.dataframe[0].value["value"].tolist() == ["Stripe", "Adyen"]
    assert {metric.label for metric in app.metric} == {"vendor"}
    replaced = next(block.value for block in app.markdown if "replaced" in block.value).splitlines()
    assert len(replaced) == 1 and "Stripe → **Adyen**" in replaced[0]


def test_an_unknown_name_suggests_the_entities_that_have_versions(built: Home, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:  # fmt: skip
    app = open_page(monkeypatch, built.root)
    checked(app.text_input(key="history_name").set_value("Payroll service").run())
    assert not app.get("vega_lite_chart") and not app.dataframe
    message = app.info[0].value
    assert message.startswith("No versions for “Payroll service”; try one of")
    assert any(name in message for name in NAMES)


def test_an_unbuilt_home_says_to_run_engram_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "not-built"
    app = open_page(monkeypatch, missing)
    assert len(app.info) == 1 and "engram build" in app.info[0].value
    assert not missing.exists()  # the dashboard never creates a home

    empty = tmp_path / "empty"
    empty.mkdir()
    app = open_page(monkeypatch, empty)
    assert len(app.info) == 1 and f"engram build --vault VAULT --home {empty}" in app.info[0].value
    assert not app.get("vega_lite_chart") and not app.dataframe
    assert not Home(empty).catalog_path.exists()  # reading creates no catalog
