"""A real OpenAI-compatible chat server on 127.0.0.1 for tests and benchmarks of the ``openai`` extractor.

``LLMServer`` answers ``POST /v1/chat/completions`` on a free port from a background thread
(``ThreadingHTTPServer``: concurrent requests are answered concurrently). What it answers comes, in order, from:

1. its capabilities: a server made with ``json_schema=False`` (or ``json_object=False``) rejects a request with
   that ``response_format`` with HTTP 400, as vLLM, llama.cpp or an older OpenAI model do;
2. a script of behaviours queued with ``server.script(...)``, one per request: ``Reply`` (a completion, with or
   without ``usage``, optionally slow), ``Status`` (an HTTP error, e.g. 429 or 500), ``Drop`` (the connection
   is closed without an answer) and ``Raw`` (a 200 whose body is not a completion);
3. otherwise ``responder(request_json)``, which returns a behaviour or an extraction dict; by default an empty
   extraction. ``latency_s`` delays every answer (the benchmark's fixed-latency mode).

Every request body is kept in ``server.requests`` (its headers, lower-cased, in ``server.headers``), so tests count
requests and read prompts; ``server.usages`` holds the (prompt_tokens, completion_tokens) of every reply that
reported them.

Retry delays: the ``openai`` client honours a positive ``Retry-After`` (``retry-after-ms`` first) and backs off
0.5 s and more otherwise, so ``rate_limited()`` and ``server_error()`` send ``Retry-After: 0`` plus
``retry-after-ms: 1`` to keep retries fast.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAST_RETRY = {"Retry-After": "0", "retry-after-ms": "1"}


@dataclass
class Reply:
    """A 200 completion whose message content is ``content`` (a dict is sent as JSON text)."""

    content: str | dict[str, Any]
    prompt_tokens: int | None = None  # None: about a quarter of the prompt's characters
    completion_tokens: int | None = None  # None: about a quarter of the content's characters
    usage: bool = True
    delay_s: float = 0.0
    finish_reason: str = "stop"


@dataclass
class Status:
    """An HTTP error answer in the OpenAI error shape."""

    code: int
    message: str = "error"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Drop:
    """Read the request, then close the connection without answering."""


@dataclass
class Raw:
    """A 200 answer whose body is not a chat completion (a proxy's error page, a half-written body)."""

    body: bytes
    content_type: str = "text/html"


Behaviour = Reply | Status | Drop | Raw
Responder = Callable[[dict[str, Any]], "Behaviour | dict[str, Any]"]


def extraction(
    entities: Iterable[dict[str, Any]] = (),
    relations: Iterable[dict[str, Any]] = (),
    decisions: Iterable[dict[str, Any]] = (),
) -> dict[str, Any]:
    return {"entities": list(entities), "relations": list(relations), "decisions": list(decisions)}


def entity(label: str, kind: str, quote: str) -> dict[str, Any]:
    return {"label": label, "kind": kind, "quote": quote}


def relation(subject: str, wording: str, obj: str, quote: str, object_is_entity: bool = True) -> dict[str, Any]:
    return {
        "subject": subject, "relation": wording, "object": obj, "object_is_entity": object_is_entity, "quote": quote
    }  # fmt: skip


def decision(title: str, date: str | None, status: str | None, quote: str) -> dict[str, Any]:
    return {"title": title, "date": date, "status": status, "quote": quote}


def malformed(text: str = '{"entities": [{"label": "Dagster", "kind": ') -> Reply:
    return Reply(text)


def rate_limited() -> Status:
    return Status(429, "Rate limit reached, slow down", dict(FAST_RETRY))


def server_error(code: int = 500) -> Status:
    return Status(code, "the model crashed", dict(FAST_RETRY))


def schema_unsupported() -> Status:
    return Status(400, "response_format json_schema is not supported by this server")


def segment_of(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON document of the segment a request asks about (path, part, known_entities, text)."""
    for message in request.get("messages", []):
        if message.get("role") == "user":
            try:
                document = json.loads(message.get("content") or "")
            except ValueError:
                continue
            if isinstance(document, dict) and "text" in document:
                return document
    raise AssertionError("the request carries no segment document")


_NAME = re.compile(r"\b[A-Z][A-Za-z0-9]{2,}\b|[가-힣]{2,}")


def echo_responder(request: dict[str, Any]) -> dict[str, Any]:
    """A valid extraction of any segment: its first five capitalised or Hangul words as Concept entities, each
    quoting itself, and one relation between the first two (the benchmark's model)."""
    text = segment_of(request)["text"]
    names = list(dict.fromkeys(_NAME.findall(text)))[:5]
    relations = [relation(names[0], "mentions", names[1], names[0])] if len(names) >= 2 else []
    return extraction([entity(name, "Concept", name) for name in names], relations)


class InFlight:
    """A model that answers every segment with ``echo_responder`` after ``delay_s`` seconds (HTTP 500 for the
    document named ``failing``) and counts the most requests it held at once (``most``)."""

    def __init__(self, delay_s: float, failing: str | None = None) -> None:
        self.delay_s = delay_s
        self.failing = failing
        self.now = self.most = 0
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Any:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(self.delay_s)
            if self.failing is not None and segment_of(request)["document"] == self.failing:
                return server_error(500)
            return echo_responder(request)
        finally:
            with self.lock:
                self.now -= 1


class LLMServer:
    """Start with ``with LLMServer() as server:`` (or ``start()``/``stop()``); ``server.url`` ends in ``/v1``."""

    def __init__(
        self,
        latency_s: float = 0.0,
        responder: Responder | None = None,
        json_schema: bool = True,
        json_object: bool = True,
    ) -> None:
        self.latency_s = latency_s
        self.responder = responder
        self.json_schema = json_schema
        self.json_object = json_object
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.usages: list[tuple[int, int]] = []
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle ----------------------------------------------------------------------------------------------

    def start(self) -> LLMServer:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="llm-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the server is not running"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # behaviour ----------------------------------------------------------------------------------------------

    def script(self, *behaviours: Behaviour | dict[str, Any]) -> None:
        """Queue answers for the next requests, in order (a dict is a Reply with that extraction)."""
        with self._lock:
            self._script.extend(b if isinstance(b, Behaviour) else Reply(b) for b in behaviours)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def segments(self) -> list[dict[str, Any]]:
        """The segment document of every request, in arrival order."""
        return [segment_of(request) for request in self.requests]

    def _behaviour(self, request: dict[str, Any]) -> Behaviour:
        response_format = (request.get("response_format") or {}).get("type")
        if (response_format == "json_schema" and not self.json_schema) or (
            response_format == "json_object" and not self.json_object
        ):
            return Status(400, f"response_format {response_format} is not supported by this server")
        with self._lock:
            if self._script:
                return self._script.popleft()
        answer = self.responder(request) if self.responder is not None else extraction()
        return answer if isinstance(answer, Behaviour) else Reply(answer)

    def _record(self, request: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the benchmark opens many connections at once
    owner: LLMServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            request = json.loads(raw)
        except ValueError:
            self._send(400, {"error": {"message": "the body is not JSON", "type": "invalid_request_error"}})
            return
        owner._record(request, {name.lower(): value for name, value in self.headers.items()})
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        behaviour = owner._behaviour(request)
        delay = owner.latency_s + getattr(behaviour, "delay_s", 0.0)
        if delay:
            time.sleep(delay)
        if isinstance(behaviour, Drop):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if isinstance(behaviour, Raw):
            self._send_bytes(200, behaviour.body, behaviour.content_type)
            return
        if isinstance(behaviour, Status):
            payload = {"error": {"message": behaviour.message, "type": "server_error", "code": behaviour.code}}
            self._send(behaviour.code, payload, behaviour.headers)
            return
        self._send(200, self._completion(owner, request, behaviour))

    def _completion(self, owner: LLMServer, request: dict[str, Any], reply: Reply) -> dict[str, Any]:
        content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content, ensure_ascii=False)
        prompt_chars = sum(len(str(message.get("content") or "")) for message in request.get("messages", []))
        prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_chars // 4 + 1
        completion_tokens = reply.completion_tokens if reply.completion_tokens is not None else len(content) // 4 + 1
        body: dict[str, Any] = {
            "id": f"chatcmpl-{len(owner.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        if reply.usage:
            body["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
            with owner._lock:
                owner.usages.append((prompt_tokens, completion_tokens))
        return body

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), "application/json", headers)

    def _send_bytes(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up waiting (a timeout test)

    def log_message(self, *args: object) -> None:
        pass


__all__ = [
    "Drop",
    "LLMServer",
    "Raw",
    "Reply",
    "Status",
    "decision",
    "echo_responder",
    "entity",
    "extraction",
    "malformed",
    "rate_limited",
    "relation",
    "schema_unsupported",
    "segment_of",
    "server_error",
]
