"""Screenshot every dashboard page: `python -m dashboards.screenshots --home DIR --out DIR`.

Starts `streamlit run dashboards/app.py` headless on a free 127.0.0.1 port, waits until it answers, opens each
page of ``dashboards.app.PAGES`` in headless Chromium, saves ``<url_path>.png`` per page and stops the server.

Chromium comes from the system (Debian: `apt-get install -y chromium`), driven through Playwright
(`pip install playwright`) with ``executable_path``; `playwright install chromium` is not needed and cannot work
on a machine that reaches only package registries. A browser build that Playwright downloaded itself is used
when no system Chromium is found. Korean text needs a CJK font on the system (Debian: fonts-noto-cjk).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dashboards.app import PageSpec

DASHBOARDS = Path(__file__).resolve().parent

CHROMIUM_ENV = "ENGRAM_CHROMIUM"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# A page counts as drawn when no spinner or skeleton shows and its content stopped changing for this long.
SETTLE_SECONDS = 1.5
VIEWPORT_WIDTH = 1440
MIN_VIEWPORT_HEIGHT = 800
MARGIN = 40  # white space kept below the last element


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def find_chromium(given: str | None = None) -> str | None:
    """A Chromium binary: the one given, ENGRAM_CHROMIUM, or the first of the usual names on PATH."""
    for candidate in (given, os.environ.get(CHROMIUM_ENV)):
        if candidate:
            if not Path(candidate).is_file():
                raise FileNotFoundError(f"Chromium not found at {candidate}")
            return candidate
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


@contextmanager
def streamlit_server(home: Path, log_path: Path, timeout_s: float = 90.0) -> Iterator[str]:
    """A headless Streamlit serving the dashboard for ``home``; yields its base URL and stops it afterwards."""
    port = free_port()
    command = [
        sys.executable, "-m", "streamlit", "run", str(DASHBOARDS / "app.py"),
        "--server.headless=true", "--server.address=127.0.0.1", f"--server.port={port}",
        "--browser.gatherUsageStats=false", "--server.fileWatcherType=none", "--client.toolbarMode=viewer",
        "--", "--home", str(home),
    ]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                  cwd=DASHBOARDS.parent)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_healthy(url, server, log_path, timeout_s)
        yield url
    finally:
        _stop(server)


def _wait_until_healthy(url: str, server: subprocess.Popen, log_path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with {server.returncode}: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    raise TimeoutError(f"streamlit did not answer on {url} within {timeout_s:.0f}s; see {log_path}")


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


# Where the page's content really ends, in page pixels. Streamlit scrolls inside its own containers, and their
# scroll heights count what is hidden: a scrolled st.dataframe keeps an invisible scroller as tall as all its rows,
# a collapsed expander or fixed-height st.code keeps its overflow, so the document ends 2,000-3,000 px below the
# last thing shown. The layout boxes of the main block's top-level children (and of the sidebar's content) are
# what is drawn; the lowest of their bottoms plus a margin is the height kept.
CONTENT_BOTTOM = """(margin) => {
    const scroller = document.querySelector('[data-testid="stMain"]');
    const offset = scroller ? scroller.scrollTop : 0;
    const bottoms = [];
    const container = document.querySelector('[data-testid="stMainBlockContainer"]');
    if (container) {
        const block = container.querySelector('[data-testid="stVerticalBlock"]') || container;
        for (const child of block.children) {
            const box = child.getBoundingClientRect();
            if (box.height > 0 && getComputedStyle(child).display !== 'none') bottoms.push(box.bottom + offset);
        }
    }
    const sidebar = document.querySelector('[data-testid="stSidebarUserContent"]');
    if (sidebar) bottoms.push(sidebar.getBoundingClientRect().bottom);
    return bottoms.length ? Math.ceil(Math.max(...bottoms)) + margin : -1;
}"""

BUSY = """() => Boolean(document.querySelector(
    '[data-testid="stSpinner"], [data-testid="stSkeleton"], [data-testid="stAppSkeleton"]'
)) || !document.querySelector('[data-testid="stMainBlockContainer"]')"""

CONTENT = """() => { const main = document.querySelector('[data-testid="stMainBlockContainer"]');
    return main ? main.innerHTML.length : -1; }"""


def screenshot_pages(
    base_url: str, out: Path, pages: list[PageSpec], chromium: str | None, timeout_s: float = 90.0
) -> list[Path]:
    """Open each page and save a PNG of all its content, cut just below the last element; returns the files."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        try:
            context = browser.new_context(viewport={"width": VIEWPORT_WIDTH, "height": 1000}, device_scale_factor=1)
            page = context.new_page()
            for index, spec in enumerate(pages):
                # st.navigation serves its first page at the root: its own path answers "page not found".
                page.goto(f"{base_url}/{'' if index == 0 else spec.url_path}", wait_until="domcontentloaded")
                _wait_until_drawn(page, timeout_s)
                height = _fit_viewport(page, timeout_s)
                target = out / f"{spec.url_path}.png"
                page.screenshot(path=str(target), clip={"x": 0, "y": 0, "width": VIEWPORT_WIDTH, "height": height})
                written.append(target)
        finally:
            browser.close()
    return written


def _fit_viewport(page, timeout_s: float) -> int:
    """Grow the viewport until it holds the whole content (Streamlit scrolls inside the page, so a full-page
    screenshot alone would show one screen) and return the content height. Re-measured after each resize, since
    a page may lay out differently in a taller window; a few rounds settle it."""
    height = int(page.evaluate(CONTENT_BOTTOM, MARGIN))
    for _ in range(4):
        if height <= 0:
            raise RuntimeError(f"{page.url}: no content to measure")
        page.set_viewport_size({"width": VIEWPORT_WIDTH, "height": max(height, MIN_VIEWPORT_HEIGHT)})
        _wait_until_drawn(page, timeout_s)
        measured = int(page.evaluate(CONTENT_BOTTOM, MARGIN))
        if measured == height:
            break
        height = measured
    return height


def _wait_until_drawn(page, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last, stable_since = None, time.monotonic()
    while time.monotonic() < deadline:
        size = -1 if page.evaluate(BUSY) else page.evaluate(CONTENT)
        now = time.monotonic()
        if size != last:
            last, stable_since = size, now
        elif size > 0 and now - stable_since >= SETTLE_SECONDS:
            return
        time.sleep(0.25)
    raise TimeoutError(f"{page.url} did not finish drawing within {timeout_s:.0f}s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", required=True, type=Path, help="the home folder the dashboard shows")
    parser.add_argument("--out", required=True, type=Path, help="folder for one PNG per page")
    parser.add_argument("--chromium", help=f"Chromium binary (default: ${CHROMIUM_ENV}, else chromium on PATH)")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the server and each page")
    args = parser.parse_args(argv)
    try:
        import playwright  # noqa: F401
    except ImportError:
        parser.error("needs Playwright: pip install playwright (and a Chromium: apt-get install -y chromium)")
    # Importing the page list outside a running app makes Streamlit's cache warn that no runtime exists.
    import streamlit  # noqa: F401 - sets up its loggers, which the next line then quietens

    logging.getLogger("streamlit.runtime.caching.cache_data_api").setLevel(logging.ERROR)
    from dashboards.app import PAGES

    chromium = find_chromium(args.chromium)
    home = args.home.expanduser().resolve()
    with streamlit_server(home, args.out / "streamlit.log", args.timeout) as url:
        written = screenshot_pages(url, args.out, PAGES, chromium, args.timeout)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
