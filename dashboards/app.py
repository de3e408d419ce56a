"""The EngramRAG review and metrics dashboard: `streamlit run dashboards/app.py [-- --home DIR]`.

This file is only the frame: the page list, the page setup and the home picker in the sidebar. Each page is a
script in ``dashboards/views/``; adding one is one line in ``PAGES``. The screenshot script reads ``PAGES``
too, so a new page is also photographed without further changes.

The folder is ``views/`` and must not be called ``pages/``: Streamlit treats a ``pages/`` folder beside the
entry script as its older multipage mode and then runs a page opened by URL without this frame (no home
picker, no layout), ignoring ``st.navigation``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from dashboards.stores import choose_home

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class PageSpec:
    """One page: its script (relative to this folder), its title in the navigation and its icon."""

    script: str
    title: str
    icon: str

    @property
    def url_path(self) -> str:
        return Path(self.script).stem


PAGES: list[PageSpec] = [
    PageSpec("views/costs.py", "Lifecycle costs", ":material/monitoring:"),
    PageSpec("views/merges.py", "Merge queue", ":material/merge:"),
    PageSpec("views/supersessions.py", "Supersession queue", ":material/update:"),
    PageSpec("views/history.py", "Entity timeline", ":material/timeline:"),
    PageSpec("views/provenance.py", "Provenance explorer", ":material/account_tree:"),
    PageSpec("views/agent_writes.py", "Agent writes", ":material/edit_note:"),
    PageSpec("views/decisions.py", "Decisions", ":material/gavel:"),
    PageSpec("views/ask.py", "Ask", ":material/question_answer:"),
]


def main() -> None:
    st.set_page_config(page_title="EngramRAG", page_icon=":material/hub:", layout="wide")
    page = st.navigation(
        [st.Page(HERE / spec.script, title=spec.title, icon=spec.icon, url_path=spec.url_path) for spec in PAGES]
    )
    choose_home()
    page.run()


if __name__ == "__main__":
    main()
