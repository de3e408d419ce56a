"""The agent's read and query_graph tools on a real build of the example vault."""

from __future__ import annotations

import hashlib
import http.server
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from engramrag.agent import destinations
from engramrag.agent.confirmations import Refused
from engramrag.agent.graph_query import QueryError, QueryRefused, QueryTimeout, query_form, query_graph
from engramrag.agent.reading import UnreadableNote, read_document
from engramrag.agent.workspace import Workspace
from engramrag.ontology.quadstore import QuadStore
from engramrag.ontology.vocab import document_iri, statement_iri
from engramrag.store import Home
from pipelines.build import run_build
from tests.conftest import EXAMPLE_VAULT, build_environment
from tests.test_converters import pdf_bytes

MINJI = "people/minji-park.md"
MINJI_GRAPH = str(document_iri(MINJI))


REPORT_PDF = pdf_bytes(
    [["Quarterly report of the Atlas project.", "Minji Park decided to adopt DuckDB for the catalog."]],
    title="Atlas Quarterly Report",
)
LAUNCH_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Atlas Launch Notes</title><script>var t = "TRACKER";</script></head>
<body><h1>Atlas launch</h1>
<p>Owner: Minji Park</p>
<p>Jonas Weber decided to keep LanceDB for the vectors.</p>
</body></html>
"""
TEAM_CSV = b"name,city,role\nMinji Park,Seoul,Tech Lead\nJonas Weber,Berlin,Engineer\n"
SOURCES = {
    "sources/report.pdf": REPORT_PDF,
    "sources/launch.html": LAUNCH_HTML,
    "sources/team.csv": TEAM_CSV,
    "sources/broken.pdf": REPORT_PDF[: len(REPORT_PDF) // 3],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Home, Path]:
    root = tmp_path_factory.mktemp("agent-reading")
    vault = root / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    (vault / "broken.md").write_text("---\ntitle: [never closed\n---\n\nStatus: draft\n", encoding="utf-8")
    (vault / "sources").mkdir()
    for path, raw in SOURCES.items():
        (vault / path).write_bytes(raw)
    with build_environment():
        home = Home.at(root / "home")
        assert run_build(home, vault).success
    return home, vault


def catalog_rows(home: Home, query: str, parameters: list) -> list[tuple]:
    with home.reading():
        connection = duckdb.connect(str(home.catalog_path), read_only=True)
        try:
            return connection.execute(query, parameters).fetchall()
        finally:
            connection.close()


def quad_count(home: Home) -> int:
    with home.reading(), QuadStore.opened(home.quads_path, read_only=True) as store:
        return store.quad_count()


# read_document ------------------------------------------------------------------------------------------------


def test_a_line_range_gives_exactly_those_lines_and_their_statements(built):
    home, vault = built
    result = read_document(home, vault, MINJI, start_line=12, end_line=16)
    file_lines = (vault / MINJI).read_text(encoding="utf-8").split("\n")
    assert [line["line"] for line in result["lines"]] == [12, 13, 14, 15, 16]
    assert [line["text"] for line in result["lines"]] == file_lines[11:16]
    assert result["lines"][0]["text"] == "Role: Tech Lead"
    assert (result["title"], result["stale"], result["in_catalog"], result["truncated"]) == (
        "Minji Park", False, True, False
    )
    assert result["total_lines"] == len(file_lines) - 1  # the file ends with a newline

    by_predicate = {statement["predicate"]: statement for statement in result["statements"]}
    role = by_predicate["role"]
    assert role["object"]["label"] == "Tech Lead" and role["object"]["kind"] == "Concept"
    assert (role["line_start"], role["line_end"]) == (12, 12)
    assert role["iri"] == str(statement_iri(MINJI, role["statement_id"]))
    assert by_predicate["email"]["object"] == {"value": "minji.park@nurilabs.example"}
    assert by_predicate["location"]["object"]["label"] == "판교-오피스"
    assert all(s["line_start"] <= 16 and s["line_end"] >= 12 for s in result["statements"])

    in_catalog = catalog_rows(
        home,
        """SELECT statement_id FROM statements JOIN documents USING (doc_id)
           WHERE path = ? AND line_start <= 16 AND line_end >= 12""",
        [MINJI],
    )
    assert {s["statement_id"] for s in result["statements"]} == {row[0] for row in in_catalog}
    assert "co_occurs_with" not in by_predicate  # the sentence on line 18 is outside the range

    entities = {entity["label"]: entity for entity in result["entities"]}
    assert {"Tech Lead", "Nuri Labs platform team", "판교-오피스"} <= set(entities)
    assert "statement" in entities["Tech Lead"]["seen_as"]
    assert "Responsibilities" not in entities  # a heading on line 23


def test_the_statement_iris_are_the_ones_in_the_graph(built):
    home, vault = built
    statement = read_document(home, vault, MINJI, 12, 12)["statements"][0]
    answer = query_graph(home, f"ASK {{ GRAPH <{MINJI_GRAPH}> {{ <{statement['iri']}> a engram:Statement }} }}")
    assert answer == {"form": "ask", "boolean": True, "elapsed_ms": answer["elapsed_ms"]}


def test_whole_document_and_truncation(built):
    home, vault = built
    whole = read_document(home, vault, MINJI)
    assert (whole["start_line"], whole["end_line"]) == (1, whole["total_lines"])
    assert len(whole["lines"]) == whole["total_lines"]

    short = read_document(home, vault, MINJI, 12, 20, max_chars=50)
    assert short["truncated"] is True
    assert [line["line"] for line in short["lines"]] == [12, 13]  # 15 + 29 characters fit, the next 34 do not
    assert short["next_line"] == 14
    assert {s["predicate"] for s in short["statements"]} == {"role", "team"}

    cut = read_document(home, vault, MINJI, 12, 20, max_chars=5)
    assert cut["lines"] == [{"line": 12, "text": "Role:", "cut": True}] and cut["truncated"] is True

    clamped = read_document(home, vault, MINJI, whole["total_lines"] - 1, 10_000)
    assert clamped["end_line"] == whole["total_lines"] and len(clamped["lines"]) == 2


def test_a_range_past_the_end_is_an_error_naming_the_length(built):
    home, vault = built
    total = read_document(home, vault, MINJI, 1, 1)["total_lines"]
    with pytest.raises(UnreadableNote, match=f"has {total} lines; line {total + 1} is past its end"):
        read_document(home, vault, MINJI, total + 1, total + 5)
    with pytest.raises(UnreadableNote, match="comes before"):
        read_document(home, vault, MINJI, 10, 5)


def test_paths_outside_the_vault_are_refused(built, tmp_path: Path):
    home, vault = built
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n", encoding="utf-8")
    for path in ("../secret.md", "people/../../secret.md", str(outside)):
        with pytest.raises(Refused):
            read_document(home, vault, path)
    link = vault / "people" / "link-out.md"
    link.symlink_to(outside)
    try:
        with pytest.raises(Refused, match="symlink"):
            read_document(home, vault, "people/link-out.md")
    finally:
        link.unlink()
    (vault / "notes.txt").write_text("plain text\n", encoding="utf-8")
    with pytest.raises(Refused, match="not a Markdown note"):
        read_document(home, vault, "notes.txt")
    with pytest.raises(UnreadableNote, match="does not exist"):
        read_document(home, vault, "people/nobody.md")


def test_an_edited_file_is_stale_and_still_read(built):
    home, vault = built
    note = vault / "tools" / "tern.md"
    original = note.read_bytes()
    assert read_document(home, vault, "tools/tern.md")["stale"] is False
    try:
        note.write_bytes(b"# Tern\n\nRewritten after the build: nothing here was extracted.\n")
        result = read_document(home, vault, "tools/tern.md")
        assert result["stale"] is True and result["in_catalog"] is True
        assert "changed since it was last extracted" in result["message"]
        assert result["lines"][2]["text"] == "Rewritten after the build: nothing here was extracted."
        assert result["total_lines"] == 3
    finally:
        note.write_bytes(original)
    assert read_document(home, vault, "tools/tern.md")["stale"] is False


def test_a_note_not_in_the_catalog_is_stale_with_no_statements(built):
    home, vault = built
    note = vault / "learned" / "waiting-for-approval.md"
    note.write_text("---\ntitle: Pending note\n---\n\nOwner: Minji Park\n", encoding="utf-8")
    try:
        result = read_document(home, vault, "learned/waiting-for-approval.md")
    finally:
        note.unlink()
    assert (result["stale"], result["in_catalog"], result["statements"], result["doc_id"]) == (True, False, [], None)
    assert "not in the catalog yet" in result["message"] and result["held_back"] is None
    assert result["title"] == "Pending note"
    assert result["lines"][-1] == {"line": 5, "text": "Owner: Minji Park"}


def test_a_note_the_build_held_back_says_why(built):
    home, vault = built
    result = read_document(home, vault, "broken.md")
    assert (result["stale"], result["in_catalog"], result["held_back"]) == (True, False, "broken_front_matter")
    assert "held it back" in result["message"] and "not valid YAML" in result["message"]
    assert result["lines"][-1] == {"line": 5, "text": "Status: draft"} and result["title"] == "broken"


def test_a_home_without_a_build_and_a_file_that_is_not_text(tmp_path: Path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nStatus: draft\n", encoding="utf-8")
    (vault / "b.md").write_bytes(b"# B\n\xff\xfe broken\n")
    home = Home.at(tmp_path / "home")
    result = read_document(home, vault, "a.md", 3, 3)
    assert result["lines"] == [{"line": 3, "text": "Status: draft"}]
    assert (result["stale"], result["in_catalog"], result["statements"]) == (True, False, [])
    assert "nothing has been built" in result["message"]
    with pytest.raises(UnreadableNote, match="not valid UTF-8"):
        read_document(home, vault, "b.md")


# read_document on converted originals ----------------------------------------------------------------------


def catalog_text(home: Home, path: str) -> str:
    [(text,)] = catalog_rows(home, "SELECT text FROM documents WHERE path = ? AND NOT gone", [path])
    return text


@pytest.mark.parametrize(
    ("path", "label", "words"),
    [
        ("sources/report.pdf", "PDF", "Minji Park decided to adopt DuckDB for the catalog."),
        ("sources/launch.html", "HTML", "Jonas Weber decided to keep LanceDB for the vectors."),
        ("sources/team.csv", "CSV", "| Minji Park | Seoul | Tech Lead |"),
    ],
)
def test_a_built_original_reads_as_its_catalog_markdown_with_statements(built, path: str, label: str, words: str):
    home, vault = built
    result = read_document(home, vault, path)
    text = catalog_text(home, path)
    assert [line["text"] for line in result["lines"]] == text.split("\n")[:-1]  # the note ends with a newline
    assert (result["converted_from"], result["original_path"], result["stale"], result["in_catalog"]) == (
        label, path, False, True
    )
    assert result["message"] is None and result["document_iri"] == str(document_iri(path))
    assert f"source_sha256: {hashlib.sha256(SOURCES[path]).hexdigest()}" in text.split("\n")
    number = next(line["line"] for line in result["lines"] if line["text"] == words)
    on_line = [s for s in result["statements"] if s["line_start"] <= number <= s["line_end"]]
    assert on_line, result["statements"]
    assert all(s["iri"] == str(statement_iri(path, s["statement_id"])) for s in on_line)
    in_catalog = catalog_rows(
        home,
        """SELECT statement_id FROM statements JOIN documents USING (doc_id)
           WHERE path = ? AND line_start <= ? AND line_end >= ?""",
        [path, number, number],
    )
    assert {s["statement_id"] for s in on_line} == {row[0] for row in in_catalog}

    one = read_document(home, vault, path, number, number)
    assert one["lines"] == [{"line": number, "text": words}] and one["total_lines"] == result["total_lines"]
    assert {s["statement_id"] for s in one["statements"]} == {s["statement_id"] for s in on_line}


def test_converted_statements_point_at_their_words(built):
    home, vault = built
    result = read_document(home, vault, "sources/report.pdf")
    assert result["title"] == "Atlas Quarterly Report"
    [decided] = [s for s in result["statements"] if s["predicate"] == "decided"]
    line = result["lines"][decided["line_start"] - 1]["text"]
    assert line == "Minji Park decided to adopt DuckDB for the catalog."
    assert decided["subject"]["label"] == "Minji Park"
    html = read_document(home, vault, "sources/launch.html")
    assert html["title"] == "Atlas Launch Notes"
    assert not any("TRACKER" in line["text"] for line in html["lines"])
    [owner] = [s for s in html["statements"] if s["predicate"] == "owner"]
    assert html["lines"][owner["line_start"] - 1]["text"] == "Owner: Minji Park"
    assert owner["object"]["label"] == "Minji Park"


def test_plain_notes_say_they_are_not_converted(built):
    home, vault = built
    result = read_document(home, vault, MINJI, 1, 1)
    assert (result["converted_from"], result["original_path"]) == (None, None)


def test_an_unbuilt_original_is_converted_now_and_stale(built):
    home, vault = built
    new = vault / "sources" / "crew.csv"
    new.write_bytes(b"name;ship\nSora Kim;Tern\n")
    try:
        result = read_document(home, vault, "sources/crew.csv")
    finally:
        new.unlink()
    assert (result["stale"], result["in_catalog"], result["doc_id"], result["statements"]) == (True, False, None, [])
    assert (result["converted_from"], result["original_path"], result["title"]) == ("CSV", "sources/crew.csv", "crew")
    texts = [line["text"] for line in result["lines"]]
    assert "| Sora Kim | Tern |" in texts and texts[0] == "---"
    assert "source_file: sources/crew.csv" in texts
    assert "not in the catalog yet (a new original)" in result["message"]
    assert "converted to Markdown just now" in result["message"]


def test_a_changed_original_is_stale_and_shows_its_current_conversion(built):
    home, vault = built
    csv = vault / "sources" / "team.csv"
    before = read_document(home, vault, "sources/team.csv")
    assert before["stale"] is False
    try:
        csv.write_bytes(TEAM_CSV + b"Sora Kim,Busan,Designer\n")
        result = read_document(home, vault, "sources/team.csv")
        assert (result["stale"], result["in_catalog"], result["doc_id"]) == (True, True, before["doc_id"])
        assert "changed since it was last extracted" in result["message"]
        assert "converted to Markdown just now" in result["message"]
        texts = [line["text"] for line in result["lines"]]
        assert texts[-1] == "| Sora Kim | Busan | Designer |"
        assert f"source_sha256: {hashlib.sha256(csv.read_bytes()).hexdigest()}" in texts
        assert "| Sora Kim | Busan | Designer |" not in catalog_text(home, "sources/team.csv")
        assert result["statements"]  # what the graph holds for the earlier version, flagged by stale
    finally:
        csv.write_bytes(TEAM_CSV)
    os.utime(csv, ns=(2_000_000_000, 2_000_000_000))  # same bytes, new time: judged by the bytes, as sync does
    assert read_document(home, vault, "sources/team.csv")["stale"] is False


def test_an_original_that_cannot_be_converted_is_unreadable_with_advice(built):
    home, vault = built
    held = catalog_rows(home, "SELECT reason FROM rejected_documents WHERE path = 'sources/broken.pdf'", [])
    assert held == [("conversion_failed",)]
    with pytest.raises(UnreadableNote) as unreadable:
        read_document(home, vault, "sources/broken.pdf")
    message = str(unreadable.value)
    assert message.startswith("sources/broken.pdf: could not be converted from PDF to Markdown")
    assert "damaged or truncated" in message and "To fix:" in message


def test_only_sources_originals_are_readable_and_writes_still_refuse_them(built, tmp_path: Path):
    home, vault = built
    (vault / "report.pdf").write_bytes(REPORT_PDF)
    try:
        with pytest.raises(Refused, match=r"not a Markdown note .* nor a file in sources/"):
            read_document(home, vault, "report.pdf")  # outside the sources folder nothing is converted
    finally:
        (vault / "report.pdf").unlink()
    with pytest.raises(Refused, match="climbs out"):
        read_document(home, vault, "sources/../../report.pdf")
    with pytest.raises(UnreadableNote, match="does not exist"):
        read_document(home, vault, "sources/missing.pdf")

    assert destinations.readable_parts("sources/report.pdf") == ("sources", "report.pdf")
    with pytest.raises(Refused, match="not a Markdown note"):
        destinations.relative_parts("sources/x.pdf")
    workspace = Workspace(home, vault)
    assert workspace.read("sources/report.pdf")["converted_from"] == "PDF"
    with pytest.raises(Refused, match="not a Markdown note"):
        workspace.write("sources/x.pdf", "# Not a PDF\n")
    with pytest.raises(Refused, match="not a Markdown note"):
        workspace.write("sources/report.pdf", "# Overwritten\n")
    assert not (vault / "sources" / "x.pdf").exists()
    assert (vault / "sources" / "report.pdf").read_bytes() == REPORT_PDF


# query_graph --------------------------------------------------------------------------------------------------


def test_select_with_a_row_limit_truncates(built):
    home, _ = built
    answer = query_graph(home, "SELECT ?statement WHERE { ?statement a engram:Statement }", limit=5)
    assert answer["form"] == "select" and answer["variables"] == ["statement"]
    assert len(answer["rows"]) == 5 and answer["truncated"] is True
    assert all(row["statement"]["type"] == "iri" for row in answer["rows"])

    capped = query_graph(home, "SELECT * WHERE { ?s ?p ?o }", limit=50_000)
    assert len(capped["rows"]) == 10_000 and capped["truncated"] is True


def test_select_sees_the_union_and_named_graphs(built):
    home, _ = built
    title = query_graph(home, f"SELECT ?t WHERE {{ <{MINJI_GRAPH}> dcterms:title ?t }}")
    assert title["rows"] == [{"t": {"type": "literal", "value": "Minji Park"}}] and title["truncated"] is False
    graphs = query_graph(
        home,
        """PREFIX x: <https://engramrag.org/ns#>
        SELECT DISTINCT ?g WHERE { GRAPH ?g { ?d x:path "people/minji-park.md" } }""",
    )
    assert graphs["rows"] == [{"g": {"type": "iri", "value": MINJI_GRAPH}}]
    typed = query_graph(
        home, f"SELECT ?start WHERE {{ GRAPH <{MINJI_GRAPH}> {{ ?s engram:spanStart ?start }} }} LIMIT 1"
    )
    assert typed["rows"][0]["start"]["datatype"] == "http://www.w3.org/2001/XMLSchema#integer"


def test_ask_and_construct(built):
    home, _ = built
    assert query_graph(home, "ASK { ?p a kind:Person }")["boolean"] is True
    assert query_graph(home, "ASK { ?p a kind:NoSuchKind }")["boolean"] is False
    answer = query_graph(
        home, f"CONSTRUCT {{ ?d dcterms:title ?t }} WHERE {{ GRAPH <{MINJI_GRAPH}> {{ ?d dcterms:title ?t }} }}"
    )
    assert answer["form"] == "construct" and answer["variables"] == ["subject", "predicate", "object"]
    assert answer["rows"] == [
        {
            "subject": {"type": "iri", "value": MINJI_GRAPH},
            "predicate": {"type": "iri", "value": "http://purl.org/dc/terms/title"},
            "object": {"type": "literal", "value": "Minji Park"},
        }
    ]


@pytest.mark.parametrize(
    "update",
    [
        "INSERT DATA { GRAPH <urn:g> { <urn:a> <urn:b> <urn:c> } }",
        "prefix ex: <http://example.org/#> # a comment\n insert data { ex:a ex:b ex:c }",
        "DELETE WHERE { ?s ?p ?o }",
        f"WITH <{MINJI_GRAPH}> DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o }}",
        "DROP ALL",
        "CLEAR DEFAULT",
        "LOAD <http://127.0.0.1:1/data.ttl>",
    ],
)
def test_updates_are_refused_and_the_store_is_unchanged(built, update: str):
    home, _ = built
    before = quad_count(home)
    with pytest.raises(QueryRefused, match="read-only"):
        query_graph(home, update)
    assert quad_count(home) == before


def test_update_words_inside_names_and_strings_are_not_updates(built):
    home, _ = built
    assert query_form('SELECT ?insert WHERE { ?insert rdfs:label "DELETE ALL" } # drop') == "select"
    assert query_form("PREFIX drop: <urn:insert#> ASK { ?s drop:load ?o }") == "ask"
    answer = query_graph(home, "SELECT ?delete WHERE { ?delete a engram:Statement ; rdfs:label 'drop' }")
    assert answer["rows"] == [] and answer["truncated"] is False
    before = quad_count(home)
    with pytest.raises(QueryError, match="syntax"):
        query_graph(home, "SELECT * WHERE { ?s ?p ?o } ; INSERT DATA { <urn:a> <urn:b> <urn:c> }")
    assert quad_count(home) == before


@pytest.fixture
def http_server() -> Iterator[tuple[str, list[str]]]:
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            self.send_response(500)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/sparql", requests
    finally:
        server.shutdown()
        server.server_close()


def test_service_is_refused_and_nothing_goes_out(built, http_server):
    home, _ = built
    url, requests = http_server
    with pytest.raises(QueryRefused, match="SERVICE"):
        query_graph(home, f"SELECT * WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}")
    with pytest.raises(QueryRefused, match="SERVICE"):
        query_graph(home, f"select * where {{ ?x ?y ?z . service silent <{url}> {{ ?s ?p ?o }} }}")
    assert requests == []


def test_a_syntax_error_carries_oxigraphs_message(built):
    home, _ = built
    with pytest.raises(QueryError, match=r"SPARQL syntax error: error at 1:\d+"):
        query_graph(home, "SELECT ?x WHERE { ?x ?y }")
    with pytest.raises(QueryError, match="not a SPARQL query"):
        query_graph(home, "SELEC ?x WHERE { ?x ?y ?z }")


def test_a_slow_query_is_killed_at_its_timeout(built):
    home, _ = built
    began = time.monotonic()
    with pytest.raises(QueryTimeout, match="1s limit") as timeout:
        query_graph(home, "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }", timeout_s=1)
    assert time.monotonic() - began < 30
    assert isinstance(timeout.value, QueryError)  # callers reporting bad queries report this one too
    pid = timeout.value.pid
    assert pid is not None and pid != os.getpid()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not Path(f"/proc/{pid}").exists()
    with home.writing(timeout_s=5):  # the reader's lock was released with the child
        pass
    assert query_graph(home, "ASK { ?s ?p ?o }")["boolean"] is True


def test_bad_arguments_and_a_home_without_a_store(tmp_path: Path, built):
    home, _ = built
    with pytest.raises(QueryError, match="limit"):
        query_graph(home, "ASK { ?s ?p ?o }", limit=0)
    with pytest.raises(QueryError, match="timeout_s"):
        query_graph(home, "ASK { ?s ?p ?o }", timeout_s=0)
    with pytest.raises(QueryError, match="empty"):
        query_graph(home, "  ")
    with pytest.raises(QueryError, match="no quad store yet"):
        query_graph(Home.at(tmp_path / "empty-home"), "ASK { ?s ?p ?o }")
