"""Read-only access to a home's stores for the dashboard's pages.

Which home the dashboard shows is chosen once, in the sidebar, and every page reads it from here. Reading never
creates or changes anything: a home folder that does not exist is shown as "nothing built yet" instead of being
created, and the catalog is opened read-only under the home's shared lock, so a page waits for a running build
rather than reading half of it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from engramrag.metrics.lifecycle import (
    LifecycleMetrics,
    ModelPrice,
    Prices,
    load_prices,
    read_lifecycle_metrics,
)
from engramrag.store import DEFAULT_HOME, Home

HOME_KEY = "engram_home"
PRICES_ENV = "ENGRAM_PRICES"
# Long enough that moving between pages does not re-read the catalog, short enough that a finished build shows.
CACHE_SECONDS = 30


def default_home_dir(argv: Sequence[str] | None = None) -> str:
    """``--home DIR`` given after ``streamlit run dashboards/app.py --``, else ENGRAM_HOME, else ``.engram``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--home")
    known, _ = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    return known.home or os.environ.get("ENGRAM_HOME") or DEFAULT_HOME


def choose_home() -> Path:
    """Draw the sidebar's home picker and return the chosen folder (resolved, possibly not existing)."""
    if HOME_KEY not in st.session_state:
        st.session_state[HOME_KEY] = default_home_dir()
    st.sidebar.text_input(
        "Home folder",
        key=HOME_KEY,
        help="The folder `engram build --home` wrote to. Defaults to --home, then ENGRAM_HOME, then .engram.",
    )
    chosen = current_home_dir()
    if not chosen.is_dir():
        st.sidebar.caption(f"`{chosen}` does not exist yet.")
    return chosen


def current_home_dir() -> Path:
    """The folder picked in the sidebar, or the default one when a page runs on its own."""
    raw = st.session_state.get(HOME_KEY) or default_home_dir()
    return Path(str(raw)).expanduser().resolve()


def existing_home(path: Path) -> Home | None:
    """The home at ``path`` if the folder exists; never creates it (``Home.at`` would)."""
    return Home(path) if path.is_dir() else None


def configured_prices() -> Prices:
    """Model prices from the file named by ENGRAM_PRICES (JSON or YAML), or none."""
    path = os.environ.get(PRICES_ENV, "").strip()
    return load_prices(path) if path else {}


def nothing_built_message(path: Path) -> str:
    return (
        f"Nothing is built in `{path}` yet. Run `engram build --vault VAULT --home {path}` "
        "(or pick another home folder in the sidebar), then reload this page."
    )


def lifecycle_metrics(home: Home) -> LifecycleMetrics | None:
    """The lifecycle tables of ``home``, cached briefly and re-read as soon as the catalog file changes."""
    prices = configured_prices()
    price_key = tuple(sorted((model, price.input_per_million, price.output_per_million)
                             for model, price in prices.items()))
    return _cached_metrics(str(home.root), _stamp(home.catalog_path), price_key)


@st.cache_data(ttl=CACHE_SECONDS, show_spinner=False)
def _cached_metrics(root: str, catalog_stamp: tuple[int, int], price_key: tuple) -> LifecycleMetrics | None:
    # catalog_stamp is only part of the cache key: a new build changes it, so the tables are read again.
    prices = {model: ModelPrice(input_price, output_price) for model, input_price, output_price in price_key}
    return read_lifecycle_metrics(Home(Path(root)), prices)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return (0, 0)
    return (stat.st_mtime_ns, stat.st_size)
