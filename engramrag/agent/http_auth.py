"""The MCP server over streamable HTTP, behind a bearer token on every request.

Any process on the machine can open a TCP connection to 127.0.0.1, so "bound to loopback" is not "only the
agent's client": without a token, any local program could call the tools (and, before one-time codes, confirm
writes). So every HTTP request must carry ``Authorization: Bearer <token>``; anything else gets 401 before the
MCP layer sees it. The token is given by the operator (a file, or ``ENGRAM_MCP_TOKEN``) or generated at start
and printed once on the server's standard error for the operator to hand to the agent's client.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
MIN_TOKEN_CHARS = 16


class BearerGate:
    """ASGI middleware: HTTP requests without the right bearer token are answered 401 and go no further."""

    def __init__(self, app: App, token: str) -> None:
        if len(token) < MIN_TOKEN_CHARS:
            raise ValueError(f"the HTTP bearer token must be at least {MIN_TOKEN_CHARS} characters long")
        self.app = app
        self._digest = _digest(token.encode("utf-8"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not self._allowed(scope):
            body = json.dumps({"error": "unauthorized", "message": (
                "this EngramRAG MCP server needs `Authorization: Bearer <token>` on every request; the operator "
                "gets the token from `engram mcp` (printed at start, or the --http-token-file it was given)."
            )}).encode("utf-8")
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="engram-mcp"'),
                (b"content-length", str(len(body)).encode("ascii")),
            ]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        for name, value in scope.get("headers") or []:
            if name.lower() == b"authorization":
                scheme, _, credential = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(_digest(credential.strip()), self._digest)
        return False


def new_token() -> str:
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; a wildcard (0.0.0.0, ::) or any other address is not."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(server: Any, host: str, port: int, token: str) -> None:
    """Run ``server`` (an ``MCPServer``) over streamable HTTP at ``/mcp``, every request checked for ``token``."""
    import uvicorn

    app = BearerGate(server.streamable_http_app(host=host), token)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _digest(value: bytes) -> bytes:
    return hashlib.blake2b(value, digest_size=32).digest()


__all__ = ["BearerGate", "is_loopback", "new_token", "serve"]
