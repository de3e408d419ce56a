"""A real HTTP server on a free port of 127.0.0.1 for the evals' stand-in endpoints (a model server, a SPARQL
target), served from a daemon thread until ``close``."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalServer:
    def __init__(self, handler: type[BaseHTTPRequestHandler], path: str = "") -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.path = path
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{self.path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def send_body(handler: BaseHTTPRequestHandler, body: bytes, content_type: str) -> None:
    """Answer 200 with ``body``."""
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
