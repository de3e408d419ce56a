"""Where pending documents are parsed and extracted: in the build's own process, on threads (an extractor that
waits on a model server), or in worker processes (a CPU-bound extractor, so a build uses every core).

Whatever the mode, ``attempts(bucket)`` returns a bucket's documents in the order they were submitted (path
order), so the stores a build writes do not depend on the mode or on which worker finished first. Writing stays
with the caller, in one process.

Worker processes are started with ``spawn`` (the build process holds DuckDB, LanceDB and Dagster threads, which
a fork would copy mid-flight), get the extractor once when they start, and receive one document per task. Only
a bounded window of documents is in flight, so a 100,000-note build does not hold every extraction in memory
while the writer catches up. If a worker dies (killed, out of memory), the documents it had not returned are
extracted in the build's own process, and the run goes on.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from engramrag.extract.base import Extraction, Extractor
from engramrag.ontology.graphs import EncodedGraphs, build_document_graphs
from engramrag.vault.config import VaultConfig
from engramrag.vault.dates import DocumentDate
from engramrag.vault.document import Document
from engramrag.vault.markdown import parse_document

log = logging.getLogger(__name__)

# One pending document: (doc_id, vault-relative path, text, the catalog's date of it).
PendingRow = tuple[str, str, str, DocumentDate | None]


@dataclass(frozen=True)
class ExtractionConfig:
    processes: int = field(
        default=0,
        metadata={
            "help": "Worker processes that parse and extract documents for a CPU-bound extractor (rules); 0: one "
            "per core; 1: in the build's own process. An extractor that calls a server uses its own concurrency "
            "on threads instead."
        },
    )
    min_documents: int = field(
        default=64,
        metadata={
            "help": "Fewer pending documents than this are extracted in the build's own process: starting the "
            "workers costs about a second, more than a one-note edit takes."
        },
    )
    window: int = field(
        default=512, metadata={"help": "Documents handed to worker processes and not yet written, at most."}
    )

    def worker_count(self) -> int:
        return self.processes if self.processes > 0 else max(1, os.cpu_count() or 1)


@dataclass
class Attempt:
    """One pending document after parsing, extracting and building its graphs (in whichever process or thread
    did that)."""

    doc_id: str
    path: str
    document: Document | None
    extraction: Extraction | None
    graphs: EncodedGraphs | None
    error: Exception | None
    seconds: float
    calls: list[Any]


def attempt(extractor: Extractor, config: VaultConfig, row: PendingRow) -> Attempt:
    """Parse and extract one document and build its named graphs; a failure is returned with the document,
    never raised."""
    doc_id, path, text, dated = row
    started = time.perf_counter()
    document = extraction = None
    try:
        document = parse_document(text.encode("utf-8"), path, config)
        extraction = extractor.extract(document)
        graphs = build_document_graphs(document, extraction, dated).encoded()
    except Exception as error:  # one document's failure must not stop the bucket
        made = list(getattr(error, "calls", None) or getattr(extraction, "calls", None) or [])
        return Attempt(doc_id, path, document, None, None, error, time.perf_counter() - started, made)
    made = list(getattr(extraction, "calls", None) or [])
    return Attempt(doc_id, path, document, extraction, graphs, None, time.perf_counter() - started, made)


def pool_mode(extractor: Extractor, pending: int, config: ExtractionConfig) -> tuple[str, int]:
    """("threads", n) for an extractor with a ``concurrency`` above 1, ("processes", n) for a CPU-bound one
    (``cpu_bound = True``) with enough pending documents and more than one worker, else ("inline", 1)."""
    threads = thread_workers(extractor)
    if threads > 1:
        return "threads", threads
    processes = config.worker_count()
    if getattr(extractor, "cpu_bound", False) and processes > 1 and pending >= config.min_documents:
        return "processes", processes
    return "inline", 1


def thread_workers(extractor: Extractor) -> int:
    """How many documents the extractor may have in flight at once (its ``concurrency``, 1 when it has none)."""
    try:
        return max(1, int(getattr(extractor, "concurrency", 1) or 1))
    except (TypeError, ValueError):
        return 1


class DocumentPool:
    """Parses and extracts pending documents of several buckets; ``attempts(bucket)`` waits for one bucket's
    and returns them in submission order. Leaving the pool early (an interrupted or failed run) cancels what has
    not started; what a model extractor finished is kept by its cache."""

    def __init__(
        self, extractor: Extractor, config: VaultConfig, pending: int, extraction: ExtractionConfig | None = None
    ) -> None:
        self.extractor, self.config = extractor, config
        self.extraction = extraction or ExtractionConfig()
        self.mode, self.workers = pool_mode(extractor, pending, self.extraction)
        self._executor: Executor | None = None
        if self.mode == "threads":
            self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="engram-extract")
        elif self.mode == "processes":
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(extractor, config, os.getpid()),
            )
        self._queued: deque[tuple[int, list[PendingRow]]] = deque()
        self._running: dict[int, list[tuple[PendingRow, Future[Attempt]]]] = {}
        self._in_flight = 0
        self.broken = False  # a worker process died: the rest is extracted here

    @property
    def spans_buckets(self) -> bool:
        """Whether later buckets' documents are worth submitting before the first bucket is written."""
        return self._executor is not None

    def __enter__(self) -> DocumentPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)

    def submit(self, bucket: int, rows: list[PendingRow]) -> None:
        self._queued.append((bucket, rows))
        self._fill()

    def attempts(self, bucket: int) -> list[Attempt]:
        while bucket not in self._running and any(queued == bucket for queued, _ in self._queued):
            self._start(*self._queued.popleft())
        found = [self._result(row, future) for row, future in self._running.pop(bucket, [])]
        self._in_flight -= len(found)
        self._fill()
        return found

    def _fill(self) -> None:
        """Start queued buckets while the window has room (threads and inline: all of them at once)."""
        limit = self.extraction.window if self.mode == "processes" else None
        while self._queued and (limit is None or self._in_flight < limit or not self._running):
            self._start(*self._queued.popleft())

    def _start(self, bucket: int, rows: list[PendingRow]) -> None:
        self._running[bucket] = [(row, self._submit_one(row)) for row in rows]
        self._in_flight += len(rows)

    def _submit_one(self, row: PendingRow) -> Future[Attempt]:
        if self._executor is None or self.broken:
            return _done(lambda: attempt(self.extractor, self.config, row))
        if self.mode == "processes":
            return self._executor.submit(_attempt_in_worker, row)
        return self._executor.submit(attempt, self.extractor, self.config, row)

    def _result(self, row: PendingRow, future: Future[Attempt]) -> Attempt:
        try:
            return future.result()
        except BrokenProcessPool:
            if not self.broken:
                log.warning(
                    "an extraction worker process died; the remaining documents are extracted in the build's "
                    "own process (slower, same result)"
                )
                self.broken = True
            return attempt(self.extractor, self.config, row)


def _done(compute: Callable[[], Attempt]) -> Future[Attempt]:
    future: Future[Attempt] = Future()
    future.set_result(compute())
    return future


# --- inside a worker process -------------------------------------------------------------------------------

_worker: dict[str, Any] = {}


def _start_worker(extractor: Extractor, config: VaultConfig, build: int) -> None:
    _worker["extractor"], _worker["config"] = extractor, config
    # The build's pid comes from the build: a worker still starting when the build was killed already has
    # another parent by the time it gets here.
    threading.Thread(target=_exit_with_parent, args=(build,), name="engram-orphan-watch", daemon=True).start()


def _exit_with_parent(parent: int, every_s: float = 1.0) -> None:
    """End this worker when the build that started it is gone (killed with SIGKILL, say): its queue's pipe
    stays open in the other workers, so a worker would otherwise wait for work forever (seen: spawned workers
    of a killed build still alive an hour later)."""
    while os.getppid() == parent:
        time.sleep(every_s)
    os._exit(0)


def _attempt_in_worker(row: PendingRow) -> Attempt:
    found = attempt(_worker["extractor"], _worker["config"], row)
    if found.error is not None:
        try:
            pickle.dumps(found.error)
        except Exception:  # an exception that cannot cross the process boundary is sent as its message
            found.error = RuntimeError(f"{type(found.error).__name__}: {found.error}")
    return found
