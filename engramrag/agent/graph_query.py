"""The agent's ``query_graph`` tool: read-only SPARQL over the documents' named graphs, bounded in rows and time.

An agent writes SPARQL it has not tested, and one careless join over a large store can run for hours. So the
query runs in a child process started fresh ("forkserver": no inherited locks, threads or store handles),
which the parent kills when the time is up; pyoxigraph cannot interrupt a running query any other way. The
child opens the store in Oxigraph's read-only mode while the parent holds the home's shared lock, so no build
writes underneath it, and it sends back at most ``limit + 1`` rows so the parent can say ``truncated``
without the child materialising a huge answer.

Updates are refused before anything runs: ``Store.query`` would not execute them, but an agent deserves a
message saying the graph is derived from the Markdown and changes only through it. ``SERVICE`` is refused
too, because Oxigraph would send the query to that URL: a read tool must not be a way onto the network.

The default graph is the union of the named graphs, so ``SELECT ?s WHERE { ?s ?p ?o }`` sees every
document; ``GRAPH ?g { ... }`` still names the document a triple came from. The project's prefixes
(``engram:``, ``rel:``, ``kind:``, ``prov:``, ``pav:`` ...) are predeclared; a query's own PREFIX wins.

Memory is bounded too: a join or an ORDER BY over a cross product can take gigabytes in seconds, long before
the timeout. The child caps its own address space (``RLIMIT_AS``) at what it uses once the store is open plus
``memory_mb``, so such a query fails inside the child and the parent says which limit it passed.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from engramrag.ontology.vocab import (
    AGENT_BASE,
    DCTERMS,
    ENGRAM,
    KIND,
    PAV,
    PROV,
    RDF,
    RDFS,
    REL,
    SKOS,
    VAULT_BASE,
    XSD,
)
from engramrag.store import Home

MAX_LIMIT = 10_000
MAX_TIMEOUT_S = 120.0
MAX_QUERY_CHARS = 100_000
DEFAULT_MEMORY_MB = 1024
MAX_MEMORY_MB = 16 * 1024
STARTUP_LIMIT_S = 60.0  # starting the child and opening the store, not counted against the query's timeout
BATCH_ROWS = 256
START_METHOD = "forkserver"

READ_FORMS = ("select", "ask", "construct", "describe")
UPDATE_KEYWORDS = frozenset(
    {"insert", "delete", "load", "clear", "drop", "create", "add", "move", "copy", "with"}
)
PREFIXES = {
    "engram": str(ENGRAM),
    "rel": str(REL),
    "kind": str(KIND),
    "vault": VAULT_BASE,
    "agent": AGENT_BASE,
    "prov": str(PROV),
    "pav": str(PAV),
    "rdf": str(RDF),
    "rdfs": str(RDFS),
    "skos": str(SKOS),
    "xsd": str(XSD),
    "dcterms": str(DCTERMS),
}

# What can hide a keyword: strings (long ones first), IRIs (no spaces, so "?a < ?b" is not one), comments and
# language tags. Removed before looking at the words, so "<urn:insert>" or "# delete" is not an update.
_OPAQUE = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*'"
    r'|<[^<>"{}|^`\\\x00-\x20]*>'
    r"|#[^\n]*"
    r"|@[A-Za-z]+(?:-[A-Za-z0-9]+)*",
    re.DOTALL,
)
# Variables and prefixed names are tokens of their own, so ?service or ex:insert is not a keyword.
_TOKEN = re.compile(r"[?$]\w+|[A-Za-z_][\w.\-]*:[\w.\-:%\\]*|:[\w.\-:%\\]*|[A-Za-z_]\w*")


class QueryError(ValueError):
    """The query could not run: a syntax error (Oxigraph's message), an unusable argument, or no store yet."""


class QueryRefused(QueryError):
    """The query would change the graph or reach outside it; nothing was run."""


class QueryMemoryExceeded(QueryError, MemoryError):
    """The query needed more memory than its limit; its process stopped and nothing was returned."""


class QueryTimeout(QueryError, TimeoutError):
    """The query ran past its time limit and its process (``pid``) was killed. Also a QueryError, so a caller
    that reports bad queries to the agent reports this one too."""

    def __init__(self, message: str, pid: int | None = None) -> None:
        super().__init__(message)
        self.pid = pid


def query_graph(
    home: Home, sparql: str, limit: int = 200, timeout_s: float = 10.0, memory_mb: int = DEFAULT_MEMORY_MB
) -> dict[str, Any]:
    """Run a read-only SPARQL query over the home's quad store.

    Returns ``{"form", "variables", "rows", "truncated", "elapsed_ms"}``; a row maps each bound variable to
    ``{"type": "iri"|"literal"|"bnode", "value", "datatype"?, "language"?}`` (SPARQL JSON results: plain
    strings carry no datatype). ASK gives ``{"form": "ask", "boolean"}``; CONSTRUCT and DESCRIBE give rows of
    subject, predicate and object. ``limit`` (at most 10,000) caps the rows and ``timeout_s`` (at most 120)
    the time the query may run, ``memory_mb`` the memory it may take beyond the open store. Raises
    QueryRefused, QueryError, QueryTimeout or QueryMemoryExceeded."""
    limit = _bounded_int(limit, "limit", MAX_LIMIT)
    memory_mb = _bounded_int(memory_mb, "memory_mb", MAX_MEMORY_MB)
    timeout_s = _bounded_seconds(timeout_s)
    form = query_form(sparql)
    if not home.quads_path.exists():
        raise QueryError(f"{home.root} has no quad store yet; run `engram build` first.")
    with home.reading():
        return _run_in_child(home.quads_path, sparql, form, limit, timeout_s, memory_mb)


def query_form(sparql: str) -> str:
    """The query form ("select", "ask", "construct", "describe") after the prologue, or QueryRefused for an
    update or a SERVICE call, or QueryError when the text is not a query at all."""
    if not isinstance(sparql, str) or not sparql.strip():
        raise QueryError("the query is empty; write a SPARQL SELECT, ASK, CONSTRUCT or DESCRIBE query.")
    if len(sparql) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(sparql):,} characters long; the limit is {MAX_QUERY_CHARS:,}.")
    words = [token.lower() for token in _TOKEN.findall(_OPAQUE.sub(" ", sparql)) if _is_keyword(token)]
    if "service" in words:
        raise QueryRefused(
            "SERVICE is refused: it would send the query to another endpoint over the network, and query_graph "
            "reads only this home's graph. Drop the SERVICE clause."
        )
    form = next((word for word in words if word not in ("prefix", "base")), None)
    if form in UPDATE_KEYWORDS:
        raise QueryRefused(
            f"{form.upper()} is a SPARQL update and query_graph is read-only: the graph is derived from the "
            "Markdown vault and changes only when the documents do. Edit the note (the agent write tools) and "
            "let a build re-extract it; use SELECT, ASK, CONSTRUCT or DESCRIBE to read."
        )
    if form not in READ_FORMS:
        found = f"it starts with {form.upper()!r}" if form else "no query form was found"
        raise QueryError(f"not a SPARQL query: {found}; use SELECT, ASK, CONSTRUCT or DESCRIBE.")
    return form


def _is_keyword(token: str) -> bool:
    return token[0] not in "?$" and ":" not in token


def _bounded_int(value: int, name: str, ceiling: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise QueryError(f"{name} must be a whole number of at least 1, not {value!r}.")
    return min(value, ceiling)


def _bounded_seconds(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise QueryError(f"timeout_s must be a positive number of seconds, not {value!r}.")
    return min(float(value), MAX_TIMEOUT_S)


def _run_in_child(
    quads_path: Path, sparql: str, form: str, limit: int, timeout_s: float, memory_mb: int
) -> dict[str, Any]:
    context = multiprocessing.get_context(START_METHOD)
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(
        target=_child_main, args=(sender, str(quads_path), sparql, limit, memory_mb), name="engram-query-graph",
        daemon=True,
    )
    process.start()
    sender.close()
    try:
        return _collect(receiver, process, form, limit, timeout_s, memory_mb)
    finally:
        receiver.close()
        if process.is_alive():
            process.kill()
        process.join(10)


def _collect(
    receiver: Connection, process, form: str, limit: int, timeout_s: float, memory_mb: int
) -> dict[str, Any]:
    deadline = time.monotonic() + STARTUP_LIMIT_S
    started: float | None = None
    variables: list[str] = []
    rows: list[dict[str, Any]] = []
    boolean: bool | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _stopped(process, started is not None, timeout_s)
        if not receiver.poll(remaining):
            continue
        try:
            message = receiver.recv()
        except EOFError:
            process.join(5)
            if started is not None:
                raise _over_memory(memory_mb, f"exit code {process.exitcode}") from None
            raise QueryError(
                f"the query process ended before the store was open (exit code {process.exitcode}); try again."
            ) from None
        kind = message[0]
        if kind == "ready":
            started = time.monotonic()
            deadline = started + timeout_s
        elif kind == "variables":
            variables = message[1]
        elif kind == "rows":
            rows.extend(message[1])
        elif kind == "boolean":
            boolean = message[1]
        elif kind == "error":
            raise QueryError(message[1])
        elif kind == "memory":
            raise _over_memory(memory_mb, "out of memory")
        elif kind == "done":
            elapsed_ms = round((time.monotonic() - (started or time.monotonic())) * 1000, 1)
            if form == "ask":
                return {"form": form, "boolean": bool(boolean), "elapsed_ms": elapsed_ms}
            return {
                "form": form,
                "variables": variables,
                "rows": rows[:limit],
                "truncated": len(rows) > limit,
                "elapsed_ms": elapsed_ms,
            }


def _stopped(process, was_running: bool, timeout_s: float) -> QueryTimeout:
    """Kill the child (it holds nothing the parent needs) and say what to change."""
    process.kill()
    process.join(10)
    if not was_running:
        return QueryTimeout(
            f"the graph store did not open within {STARTUP_LIMIT_S:.0f}s; the machine may be overloaded, try again.",
            process.pid,
        )
    return QueryTimeout(
        f"the query ran past its {timeout_s:g}s limit and was stopped. Add a LIMIT, narrow it to one document "
        "with GRAPH <document IRI> { ... }, or bind more of each triple pattern so fewer triples are joined.",
        process.pid,
    )


def _over_memory(memory_mb: int, how: str) -> QueryMemoryExceeded:
    return QueryMemoryExceeded(
        f"refused (memory): the query needed more than its {memory_mb:,} MiB memory limit and was stopped ({how}); "
        "nothing was returned. Add a LIMIT, avoid ORDER BY or GROUP BY over a cross product, or narrow it to one "
        "document with GRAPH <document IRI> { ... }."
    )


def _cap_memory(memory_mb: int) -> None:
    """Limit this process's address space to what it uses now plus ``memory_mb`` (Linux; elsewhere no cap)."""
    import resource

    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            in_use = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return
    ceiling = in_use + memory_mb * 1024 * 1024
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))


def _child_main(sender: Connection, quads_path: str, sparql: str, limit: int, memory_mb: int) -> None:
    """The child process: open the store read-only, cap its memory, run the query, stream up to ``limit + 1``
    rows."""
    import pyoxigraph as ox

    from engramrag.ontology.quadstore import QuadStore

    try:
        try:
            store = QuadStore(Path(quads_path), read_only=True)
        except OSError as error:
            sender.send(("error", f"the quad store at {quads_path} could not be opened read-only: {error}"))
            return
        _cap_memory(memory_mb)
        sender.send(("ready",))
        try:
            # QuadStore.query takes no options; the union default graph and prefixes need the store's own call.
            result = store.query(sparql, use_default_graph_as_union=True, prefixes=PREFIXES)
            if isinstance(result, ox.QueryBoolean):
                sender.send(("boolean", bool(result)))
            elif isinstance(result, ox.QuerySolutions):
                names = [variable.value for variable in result.variables]
                sender.send(("variables", names))
                _stream(sender, (_solution(solution, names) for solution in result), limit)
            else:
                sender.send(("variables", ["subject", "predicate", "object"]))
                _stream(sender, (_triple(triple) for triple in result), limit)
        except SyntaxError as error:
            sender.send(("error", f"SPARQL syntax error: {error}"))
            return
        except MemoryError:
            sender.send(("memory",))
            return
        except OSError as error:
            sender.send(("error", f"the query failed while reading the store: {error}"))
            return
        except Exception as error:  # an evaluation error must reach the agent as a message, not a dead process
            sender.send(("error", f"the query failed: {type(error).__name__}: {error}"))
            return
        sender.send(("done",))
    finally:
        sender.close()


def _stream(sender: Connection, rows, limit: int) -> None:
    batch: list[dict[str, Any]] = []
    for count, row in enumerate(rows, start=1):
        batch.append(row)
        if len(batch) >= BATCH_ROWS:
            sender.send(("rows", batch))
            batch = []
        if count > limit:
            break
    if batch:
        sender.send(("rows", batch))


def _solution(solution, names: list[str]) -> dict[str, Any]:
    row = {}
    for name in names:
        value = solution[name]
        if value is not None:
            row[name] = term_json(value)
    return row


def _triple(triple) -> dict[str, Any]:
    return {
        "subject": term_json(triple.subject),
        "predicate": term_json(triple.predicate),
        "object": term_json(triple.object),
    }


def term_json(term) -> dict[str, Any]:
    """One RDF term in the shape of SPARQL 1.1 JSON results (a plain xsd:string literal has no datatype)."""
    import pyoxigraph as ox

    if isinstance(term, ox.NamedNode):
        return {"type": "iri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        literal: dict[str, Any] = {"type": "literal", "value": term.value}
        if term.language:
            literal["language"] = term.language
        elif term.datatype.value != str(XSD.string):
            literal["datatype"] = term.datatype.value
        return literal
    if isinstance(term, ox.Triple):
        return {"type": "triple", "value": _triple(term)}
    raise TypeError(f"unexpected RDF term {term!r}")


__all__ = [
    "MAX_LIMIT",
    "MAX_TIMEOUT_S",
    "PREFIXES",
    "QueryError",
    "QueryMemoryExceeded",
    "QueryRefused",
    "QueryTimeout",
    "query_form",
    "query_graph",
    "term_json",
]
