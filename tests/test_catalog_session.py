"""A resident build's catalog session (``catalog.connection.catalog_session``): the catalog attached once for a small
build, its writers and readers on that attachment, other readers kept out until it ends. A real DuckDB file, no
build."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from engramrag.catalog.connection import catalog_reader, catalog_session, catalog_writer
from engramrag.store import Home, StoreBusy


def test_a_session_attaches_the_catalog_once_and_keeps_other_readers_out_until_it_ends(tmp_path) -> None:
    home = Home.at(tmp_path / "home")
    with catalog_writer(home, 4) as catalog:
        catalog.execute("INSERT OR REPLACE INTO meta VALUES ('probe', 'before')")
    outside: list[object] = []
    names = set()
    with catalog_session(home, 4):
        for _ in range(3):
            with catalog_writer(home, 4) as catalog:
                catalog.execute("INSERT OR REPLACE INTO meta VALUES ('probe', 'inside')")
                names.add(catalog.execute("SELECT current_database()").fetchone()[0])
            with catalog_reader(home) as catalog:
                assert catalog.execute("SELECT value FROM meta WHERE key = 'probe'").fetchone() == ("inside",)
                names.add(catalog.execute("SELECT current_database()").fetchone()[0])
        assert len(names) == 1  # every use on the session's one attachment (each attaching makes a new alias)

        def read_elsewhere() -> None:  # another thread is another reader: it waits, as another process does
            try:
                with home.reading(timeout_s=0.3):
                    outside.append("read")
            except StoreBusy as busy:
                outside.append(busy)

        reader = threading.Thread(target=read_elsewhere)
        reader.start()
        reader.join()
        assert isinstance(outside[0], StoreBusy)
    # Detached at the end, with what it wrote in the file: another process reads it.
    probe = (f"from engramrag.catalog.connection import catalog_reader; from engramrag.store import Home\n"
             f"with catalog_reader(Home.at({str(home.root)!r})) as c: "
             "print(c.execute(\"SELECT value FROM meta WHERE key = 'probe'\").fetchone()[0])")  # fmt: skip
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert shown.stdout.strip() == "inside"


def test_a_session_ends_its_attachment_when_the_block_raises(tmp_path) -> None:
    home = Home.at(tmp_path / "home")
    with pytest.raises(RuntimeError, match="a step failed"), catalog_session(home, 4):
        with catalog_writer(home, 4) as catalog:
            catalog.execute("INSERT OR REPLACE INTO meta VALUES ('probe', 'written')")
        raise RuntimeError("a step failed")
    with home.reading(timeout_s=1), catalog_reader(home) as catalog:  # the lock is free and the file readable
        assert catalog.execute("SELECT value FROM meta WHERE key = 'probe'").fetchone() == ("written",)
