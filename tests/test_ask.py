"""`engram ask` and the dashboard's Ask page against a real local chat server that plays a tool-calling model.

A small git repository with three ADRs is built and ingested. The server speaks ``POST /v1/chat/completions`` on
127.0.0.1 (http.server in a thread), and the real ``openai`` client talks to it: the model first calls tools, then
reads the tool messages it was sent and answers with JSON citing an id and a quote from them. Honest answers are
verified (exit 0); an id no tool returned, a quote that is not verbatim and a figure that is not in the evidence
are each FAILED with that check (exit 6) and the answer is not shown; a closed port fails at once with the reason.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from engramrag.gitgraph.ingest import ingest
from engramrag.store import Home
from tests.gitrepo import commit, git

APP = Path(__file__).resolve().parents[1] / "dashboards" / "app.py"
PAGE = "views/ask.py"
NYGARD = "# {number}. {title}\n\n## Status\n\n{status}\n\n## Context\n\n{context}\n\n## Decision\n\n{decision}\n"
ADR_1 = "docs/adr/0001-use-sqlite-for-the-catalog.md"
ADR_2 = "docs/adr/0002-move-the-catalog-to-postgres.md"
ADR_3 = "docs/adr/0003-adopt-ruff.md"
ADR_2_ID = f"{ADR_2}#move the catalog to postgres"
QUESTION = "Why does the catalog use Postgres?"
# The record wraps this sentence; the model quotes it on one line (whitespace-normalised, still verbatim).
QUOTE = "because 3 services write to it at once"
ANSWER = "The catalog moved from SQLite to Postgres (ADR-0002) because 3 services write to it at once."
TOOLS = {"why", "what_breaks", "disproven", "who_knows", "trace", "origin", "told", "review", "rank", "path"}
LLM_SETTINGS = ("BASE_URL", "MODEL", "API_KEY", "TIMEOUT_S", "MAX_RETRIES", "TEMPERATURE")


# --- the repository ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Home]:
    base = tmp_path_factory.mktemp("ask")
    root = base / "repo"
    root.mkdir()
    git(root, "init", "-q")
    sqlite = NYGARD.format(number=1, title="Use SQLite for the catalog", status="Accepted",
                           context="One process writes the catalog.",
                           decision="We keep the catalog in SQLite. A page holds at most 500 rows.")  # fmt: skip
    commit(root, "alice", "2024-02-01T10:00:00+00:00", "Keep the catalog in SQLite",
           {ADR_1: sqlite, "src/catalog.py": "import sqlite3\n\n\ndef open_catalog(path):\n"
            "    return sqlite3.connect(path)\n"})  # fmt: skip
    postgres = NYGARD.format(
        number=2,
        title="Move the catalog to Postgres",
        status="Accepted",
        context="Supersedes [ADR-0001](0001-use-sqlite-for-the-catalog.md).",
        decision="We move the catalog to Postgres because 3 services\nwrite to it at once.",
    )
    commit(root, "bob", "2024-03-10T10:00:00+00:00", "Move the catalog to Postgres", {
        ADR_1: sqlite.replace("Accepted", "Superseded by [ADR-0002](0002-move-the-catalog-to-postgres.md)"),
        ADR_2: postgres,
        "src/catalog.py": "import psycopg\n\n\ndef open_catalog(path):\n    return psycopg.connect(path)\n",
    })  # fmt: skip
    commit(root, "carol", "2024-04-02T10:00:00+00:00", "Adopt ruff", {
        ADR_3: NYGARD.format(number=3, title="Adopt ruff", status="Accepted", context="Two linters disagree.",
                             decision="We lint with ruff."),
    })  # fmt: skip
    home = Home.at(base / "home")
    ingest(root, home, progress=False)
    return root, home


# --- a model server ---------------------------------------------------------------------------------------------

Model = Callable[[dict[str, Any]], dict[str, Any]]


def tool_call(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        for index, (name, arguments) in enumerate(calls)
    ]}  # fmt: skip


def final(answer: str, citations: list[dict[str, str]]) -> dict[str, Any]:
    return {"role": "assistant", "content": json.dumps({"answer": answer, "citations": citations})}


def tool_results(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool messages the model was sent, by the name of the tool that was called."""
    names = {call["id"]: call["function"]["name"] for message in request["messages"]
             for call in message.get("tool_calls") or ()}  # fmt: skip
    return {names[message["tool_call_id"]]: json.loads(message["content"])
            for message in request["messages"] if message["role"] == "tool"}  # fmt: skip


def answering(make_answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Model:
    """A model that first asks why and trace, then answers from trace's result with ``make_answer(decision)``."""

    def model(request: dict[str, Any]) -> dict[str, Any]:
        results = tool_results(request)
        if "trace" not in results:
            return tool_call(("why", {"path": "src/catalog.py"}), ("trace", {"decision": "ADR-2"}))
        decision = next(item for item in results["trace"]["evidence"]["decisions"] if item["id"] == ADR_2_ID)
        assert " ".join(QUOTE.split()) in " ".join(decision["text"].split())
        return make_answer(decision)

    return model


honest = answering(lambda decision: final(ANSWER, [{"id": decision["id"], "quote": QUOTE}]))
unknown_id = answering(lambda decision: final(ANSWER, [{"id": f"{ADR_3}#use mysql", "quote": QUOTE}]))
not_verbatim = answering(lambda decision: final(
    ANSWER, [{"id": decision["id"], "quote": "since 3 services write to it at once"}]))  # fmt: skip
wrong_figure = answering(lambda decision: final(
    ANSWER.replace("3 services", "4 services"), [{"id": decision["id"], "quote": QUOTE}]))  # fmt: skip


def never_done(request: dict[str, Any]) -> dict[str, Any]:
    return tool_call(("rank", {"top": 3}))


class ChatServer:
    """OpenAI's /v1/chat/completions on a free port of 127.0.0.1; ``model`` writes each reply's message."""

    def __init__(self) -> None:
        self.model: Model = honest
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                server.requests.append(request)
                message = server.model(request)
                body = json.dumps({
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": 0,
                    "model": request["model"],
                    "choices": [{"index": 0, "message": message,
                                 "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


@pytest.fixture
def server(chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> ChatServer:
    """The server with a fresh log and the honest model, and ENGRAM_LLM_* naming it (nothing else of the shell's)."""
    for name in LLM_SETTINGS:
        monkeypatch.delenv(f"ENGRAM_LLM_{name}", raising=False)
    monkeypatch.setenv("ENGRAM_LLM_BASE_URL", chat_server.url)
    monkeypatch.setenv("ENGRAM_LLM_MODEL", "tool-caller")
    monkeypatch.setenv("ENGRAM_LLM_MAX_RETRIES", "0")
    chat_server.requests.clear()
    chat_server.model = honest
    return chat_server


def run_cli(capsys: pytest.CaptureFixture[str], ingested: tuple[Path, Home], *argv: str) -> tuple[int, str, str]:
    from pipelines.cli import main

    root, home = ingested
    code = main(["ask", *argv, "--repo", str(root), "--home", str(home.root)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- the command line -------------------------------------------------------------------------------------------


def test_a_verified_answer_shows_the_tool_calls_and_the_answer(server, ingested, capsys) -> None:
    code, out, _ = run_cli(capsys, ingested, QUESTION)
    assert code == 0, out
    lines = out.splitlines()
    assert "[1] why(path='src/catalog.py')" in lines and "[1] trace(decision='ADR-2')" in lines
    assert any(line.startswith("    -> Move the catalog to Postgres (accepted, undated") for line in lines)
    assert lines.index("[1] trace(decision='ADR-2')") < lines.index(ANSWER)
    assert any(line.startswith("VERIFIED (citations-given, cited-id-returned, quote-verbatim") for line in lines)
    assert f"  [1] {ADR_2_ID}" in lines and f"      | {QUOTE}" in lines
    assert "FAILED" not in out
    # What the model was sent: every decision-graph tool, then the tool messages with the evidence.
    first, second = server.requests
    assert {tool["function"]["name"] for tool in first["tools"]} == TOOLS
    assert first["model"] == "tool-caller" and first["messages"][-1] == {"role": "user", "content": QUESTION}
    assert [message["role"] for message in second["messages"]] == ["system", "user", "assistant", "tool", "tool"]


def test_json_prints_the_whole_transcript(server, ingested, capsys) -> None:
    code, out, _ = run_cli(capsys, ingested, QUESTION, "--json")
    assert code == 0
    run = json.loads(out)
    assert run["status"] == "verified" and run["verified"] and run["rejected"] is None
    assert run["answer"] == {"answer": ANSWER, "citations": [{"id": ADR_2_ID, "quote": QUOTE}]}
    assert [event["kind"] for event in run["events"]] == [
        "tool_call", "tool_result", "tool_call", "tool_result", "answer", "verification"]  # fmt: skip
    assert run["verification"]["accepted"] and not run["verification"]["failures"]
    trace = next(call for call in run["tool_calls"] if call["name"] == "trace")
    assert trace["arguments"] == {"decision": "ADR-2"} and trace["result"]["decision"] == ADR_2_ID
    assert run["steps"] == 2 and run["messages"][-1]["role"] == "assistant"


@pytest.mark.parametrize(
    ("model", "check", "detail"),
    [
        (unknown_id, "cited-id-returned", f"{ADR_3}#use mysql was not returned by any tool in this run"),
        (not_verbatim, "quote-verbatim", "'since 3 services write to it at once' is not verbatim in what the tools "
         f"returned for {ADR_2_ID}"),
        (wrong_figure, "figure-in-quote", "4 is in the answer but in no cited quote or evidence"),
    ],
    ids=["unknown-id", "quote-not-verbatim", "figure-not-in-evidence"],
)  # fmt: skip
def test_an_answer_that_fails_a_check_is_failed_not_shown(server, ingested, capsys, model, check, detail) -> None:
    server.model = model
    code, out, _ = run_cli(capsys, ingested, QUESTION)
    assert code == 6, out
    assert "FAILED: the answer did not pass verification, so it is not shown as an answer." in out
    assert f"  {check}: {detail}" in out.splitlines()
    assert "VERIFIED" not in out and "moved from SQLite to Postgres" not in out
    code, out, _ = run_cli(capsys, ingested, QUESTION, "--json")
    run = json.loads(out)
    assert code == 6 and run["status"] == "failed" and run["answer"] is None
    assert run["rejected"]["citations"] and [item["check"] for item in run["verification"]["failures"]] == [check]


def test_a_model_that_never_answers_stops_at_max_steps(server, ingested, capsys) -> None:
    server.model = never_done
    code, out, err = run_cli(capsys, ingested, QUESTION, "--max-steps", "2")
    assert code == 1 and len(server.requests) == 2
    assert out.count("rank(top=3)") == 2
    assert err.strip() == "engram: no final answer after 2 model call(s); raise --max-steps or ask a narrower question"


def test_a_closed_port_fails_at_once_with_the_reason(server, ingested, capsys, monkeypatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("ENGRAM_LLM_BASE_URL", f"http://127.0.0.1:{port}/v1")
    started = time.monotonic()
    code, out, err = run_cli(capsys, ingested, QUESTION)
    assert code == 1 and time.monotonic() - started < 10
    assert err.count("could not reach the model server") == 1, err
    assert f"at http://127.0.0.1:{port}/v1" in err and "Check ENGRAM_LLM_BASE_URL" in err
    assert "VERIFIED" not in out and "FAILED" not in out


def test_without_a_model_server_it_says_what_to_set(server, ingested, capsys, monkeypatch) -> None:
    monkeypatch.delenv("ENGRAM_LLM_BASE_URL")
    code, _, err = run_cli(capsys, ingested, QUESTION)
    assert code == 1 and "ENGRAM_LLM_BASE_URL" in err and "ENGRAM_LLM_MODEL" in err
    assert not server.requests


def test_a_reply_that_is_not_the_json_is_asked_again(server, ingested, capsys) -> None:
    def chatty(request: dict[str, Any]) -> dict[str, Any]:
        if "trace" in tool_results(request) and request["messages"][-1]["role"] == "tool":
            return {"role": "assistant", "content": "Postgres, because several services write to it."}
        return honest(request)

    server.model = chatty
    code, out, _ = run_cli(capsys, ingested, QUESTION)
    assert code == 0 and len(server.requests) == 3
    assert "[2] the reply was not the answer's JSON (not valid JSON" in out
    assert server.requests[-1]["messages"][-1]["content"].startswith("Your reply was not the JSON object asked for")


def test_files_and_identifiers_an_answer_names_must_exist(ingested) -> None:
    from engramrag.gitgraph.ask.verify import verify
    from engramrag.gitgraph.tools import why

    root, home = ingested
    results = [why(home, root, "src/catalog.py")]
    change = results[0]["evidence"]["commits"][0]
    citation = {"id": change["sha"][:9], "quote": change["subject"]}  # a commit by a prefix, quoting its subject
    named = verify({"answer": "`src/catalog.py` has `catalog.open_catalog`", "citations": [citation]}, results, root)
    assert named.accepted, named.reason
    wrong = verify({"answer": "see `src/none.py` and `catalog.close_catalog`", "citations": [citation]}, results, root)
    assert wrong.failed_checks == ["file-at-commit", "identifier-exists"]
    assert verify({"answer": "Postgres.", "citations": []}, results, root).failed_checks == ["citations-given"]


# --- the dashboard ----------------------------------------------------------------------------------------------


def open_page(monkeypatch: pytest.MonkeyPatch, home: Home) -> AppTest:
    monkeypatch.setenv("ENGRAM_HOME", str(home.root))
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.switch_page(PAGE)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def ask_on_page(app: AppTest) -> AppTest:
    app.text_area(key="ask_question").set_value(QUESTION)
    app.button(key="ask_button").click().run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_the_page_shows_the_tool_calls_a_verified_answer_and_its_checks(server, ingested, monkeypatch) -> None:
    app = ask_on_page(open_page(monkeypatch, ingested[1]))
    assert "`trace(decision='ADR-2')`" in [block.value.split("** ", 1)[-1] for block in app.markdown]
    assert any(block.value.startswith("Verified") for block in app.success)
    assert any(block.value == ANSWER for block in app.markdown) and not app.error
    citations, checks = (frame.value for frame in app.dataframe)
    assert citations.to_dict("records") == [{"id": ADR_2_ID, "quote": QUOTE}]
    assert checks["passed"].all() and {"cited-id-returned", "quote-verbatim", "figure-in-quote"} <= set(checks["check"])


def test_the_page_shows_a_failed_answer_as_failed(server, ingested, monkeypatch) -> None:
    server.model = wrong_figure
    app = ask_on_page(open_page(monkeypatch, ingested[1]))
    assert [block.value for block in app.error] == [
        "FAILED: the model's answer did not pass verification (figure-in-quote), so it is not shown as an answer."
    ]
    assert not app.success and not any("4 services" in block.value for block in app.markdown)
    checks = app.dataframe[0].value.set_index("check")
    assert not checks.loc["figure-in-quote", "passed"] and checks.loc["cited-id-returned", "passed"]
    assert "4 is in the answer but in no cited quote or evidence" in checks.loc["figure-in-quote", "detail"]


def test_the_page_says_how_to_configure_a_model_server(server, ingested, monkeypatch) -> None:
    monkeypatch.delenv("ENGRAM_LLM_BASE_URL")
    monkeypatch.delenv("ENGRAM_LLM_MODEL")
    app = open_page(monkeypatch, ingested[1])
    assert any("No model server is configured" in block.value and "ENGRAM_LLM_BASE_URL" in block.value
               for block in app.info)  # fmt: skip
    assert app.button(key="ask_button").disabled and not server.requests
