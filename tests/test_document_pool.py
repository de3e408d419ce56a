"""Where documents are extracted: worker processes give the same attempts, in the same order, as the build's own
process, and a worker that dies costs speed, not documents."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from engramrag.extract.rules import RulesExtractor
from engramrag.lifecycle.document_pool import DocumentPool, ExtractionConfig, pool_mode
from engramrag.vault.config import VaultConfig
from engramrag.vault.dates import DocumentDate

CONFIG = VaultConfig()


def _rows(count: int, start: int = 0) -> list[tuple[str, str, str, DocumentDate | None]]:
    return [
        (f"doc{i}", f"notes/note-{i:03d}.md",
         f"---\ntitle: Note {i}\nauthor: Dana\n---\n# Note {i}\n\nMinji Park owns [[Ledger {i % 3}]] with Kevin Han.\n"
         f"Owner: Person {i % 5}\n",
         DocumentDate("2026-01-02", "front_matter") if i % 2 else None)
        for i in range(start, start + count)
    ]  # fmt: skip


def _essence(attempts) -> list[tuple]:
    return [(a.doc_id, a.path, a.error, a.graphs.nquads, [s.subject for s in a.extraction.statements])
            for a in attempts]  # fmt: skip


class ExitingExtractor(RulesExtractor):
    """Kills the worker process it runs in on one document (as the OOM killer would)."""

    def extract(self, document):
        if document.path.endswith("note-003.md") and os.environ.get("ENGRAM_TEST_IN_WORKER") is None:
            os._exit(3)
        return super().extract(document)


def test_the_mode_follows_the_extractor_and_the_amount_of_work() -> None:
    config = ExtractionConfig(processes=2, min_documents=10)
    assert pool_mode(RulesExtractor(), 10, config) == ("processes", 2)
    assert pool_mode(RulesExtractor(), 9, config) == ("inline", 1)  # a one-note edit spawns nothing
    assert pool_mode(RulesExtractor(), 500, ExtractionConfig(processes=1)) == ("inline", 1)

    class Server:
        name, version, concurrency = "server", "1", 4

    assert pool_mode(Server(), 500, config) == ("threads", 4)


def test_worker_processes_give_what_the_build_process_gives_in_order() -> None:
    buckets = {0: _rows(7), 1: _rows(5, start=7), 2: []}
    inline = ExtractionConfig(processes=1)
    parallel = ExtractionConfig(processes=2, min_documents=1, window=4)  # a window smaller than a bucket
    found = {}
    for name, settings in (("inline", inline), ("processes", parallel)):
        with DocumentPool(RulesExtractor(), CONFIG, 12, settings) as pool:
            assert pool.mode == name
            for bucket, rows in buckets.items():
                pool.submit(bucket, rows)
            found[name] = {bucket: _essence(pool.attempts(bucket)) for bucket in (0, 1, 2)}
    assert found["processes"] == found["inline"]
    assert [row[0] for row in found["processes"][0]] == [f"doc{i}" for i in range(7)]
    assert all(row[2] is None and row[3] for rows in found["processes"].values() for row in rows)


def test_a_dead_worker_costs_speed_not_documents() -> None:
    rows = _rows(8)
    with DocumentPool(ExitingExtractor(), CONFIG, 8, ExtractionConfig(processes=2, min_documents=1)) as pool:
        pool.submit(0, rows)
        os.environ["ENGRAM_TEST_IN_WORKER"] = "no"  # the fallback runs in this process: it must not exit
        try:
            attempts = pool.attempts(0)
        finally:
            del os.environ["ENGRAM_TEST_IN_WORKER"]
        assert pool.broken  # the worker did die
    assert [a.doc_id for a in attempts] == [row[0] for row in rows]
    assert all(a.error is None and a.graphs is not None for a in attempts)


KILLED_BUILD = """
import os, signal, sys
from engramrag.extract.rules import RulesExtractor
from engramrag.lifecycle.document_pool import DocumentPool, ExtractionConfig
from engramrag.vault.config import VaultConfig
pool = DocumentPool(RulesExtractor(), VaultConfig(), 8, ExtractionConfig(processes=2, min_documents=1))
pool.submit(0, [("d", "n.md", "# Note\\n\\nMinji Park owns the ledger.\\n", None)] * 4)
list(pool.attempts(0))  # the workers are up
me = os.getpid()
print(open(f"/proc/{me}/task/{me}/children").read().strip(), flush=True)
os.kill(me, signal.SIGKILL)  # as the OOM killer or `kill -9` would end a build
"""


def test_the_workers_of_a_killed_build_end_with_it() -> None:
    repository = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", KILLED_BUILD], capture_output=True, text=True, timeout=120,
                          cwd=repository, env={**os.environ, "PYTHONPATH": str(repository)}, check=False)  # fmt: skip
    children = [int(pid) for pid in done.stdout.split()]
    assert done.returncode == -9 and len(children) >= 2, done.stderr  # two workers (and the resource tracker)
    deadline = time.monotonic() + 15
    alive = children
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in children if Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)]
    assert alive == [], f"still running after the build was killed: {alive}"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "Z"
