"""``run_memo.FilesKept``: what a process wrote to files is given back while the files are the ones it wrote."""

from __future__ import annotations

import os
from pathlib import Path

from engramrag.run_memo import FilesKept


def test_a_value_is_given_back_only_while_every_file_has_its_stamp(tmp_path: Path) -> None:
    rows, sources = tmp_path / "rows.arrow", tmp_path / "sources.arrow"
    rows.write_text("rows")
    sources.write_text("sources")
    kept: FilesKept[dict] = FilesKept(size=2)
    value = {"rows": 1}
    kept.put("home-a", (rows, sources), value)
    assert kept.get("home-a", (rows, sources)) is value
    assert kept.get("home-b", (rows, sources)) is None  # another home's folder
    # A folder renamed (an index published from its staging folder) keeps its files' stamps.
    published = tmp_path / "published"
    published.mkdir()
    os.replace(rows, published / "rows.arrow")
    os.replace(sources, published / "sources.arrow")
    assert kept.get("home-a", (published / "rows.arrow", published / "sources.arrow")) is value
    # One file written again (another process): read from the files.
    replacement = tmp_path / "new.arrow"
    replacement.write_text("other rows")
    os.replace(replacement, published / "rows.arrow")
    assert kept.get("home-a", (published / "rows.arrow", published / "sources.arrow")) is None
    assert kept.get("home-a", (tmp_path / "gone.arrow",)) is None
    # Two homes kept; a third put drops the one put longest ago.
    files = (published / "sources.arrow",)
    kept.put("home-a", files, {"a": 1})
    kept.put("home-b", files, {"b": 2})
    assert kept.get("home-a", files) == {"a": 1}
    kept.put("home-c", files, {"c": 3})
    assert kept.get("home-a", files) is None and kept.get("home-b", files) == {"b": 2}
    kept.clear()
    assert kept.get("home-c", (published / "sources.arrow",)) is None
