"""ASGI guards in front of the app: who is calling, then how much of the server they may hold.

* ``Admission``: on a server with tokens, a request to ``/v1`` or ``/mcp`` is authenticated from
  its headers before anything else, so a caller without a valid token is answered 401 at once,
  holding nothing and with its body never read. Then the request takes a slot: at most
  ``max_in_flight_per_client`` requests of one client are served at once (one more is a 429
  ``too_many_requests``), and at most ``max_in_flight`` of all clients (one more is a 503
  ``busy``), both with ``Retry-After``, so load past capacity never becomes an unbounded queue
  and no one client can take every slot. A client is the token's user (or admin); on a
  loopback server without tokens, the user the request names (``/v1/users/<id>/...``,
  ``/mcp?user=<id>``); otherwise (the probes, the API docs) the caller's address. ``/health``
  and ``/ready`` take no slot (a probe must answer under load), nor does an MCP event stream
  (``GET /mcp``): those have a pool of their own (``streams.py``).
* ``BodyLimit``: the body is read whole before the app sees any of it, then handed on. Larger
  than ``max_body_bytes``: 413, at once when its ``Content-Length`` says so, else as soon as the
  bytes read pass the limit (a chunked body). Not all there ``body_timeout_s`` after the request
  began: 408 ``body_timeout``, so a client that declares a body and sends it slowly (or never)
  gives its slot back. Both close the connection (what is left of the body is never read).
* ``LoopbackGuard``: on a loopback server without tokens every local process may call, but a web
  page must not: a request whose ``Host`` is not a loopback name (DNS rebinding) or whose
  ``Origin`` is not a loopback origin (a page's cross-site request) is answered 403.

Every answer keeps the JSON shape of ``errors.py``.
"""

import asyncio
import re
from collections import Counter
from urllib.parse import parse_qs, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_assets.server.auth import OPEN, PRINCIPAL_KEY, TokenFile, principal_of
from memory_assets.server.config import is_loopback
from memory_assets.server.errors import ApiError, error_bytes
from memory_assets.server.middleware import HttpMiddleware

PROBES = ("/health", "/ready")
CLOSE = (b"connection", b"close")
_USER_PATH = re.compile(r"/v1/users/([^/]{1,64})(?:/|$)")


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def is_stream(scope: Scope) -> bool:
    """An MCP event stream: ``GET /mcp`` (held open by the server; ``streams.py`` bounds them)."""
    return scope.get("method") == "GET" and scope.get("path", "").rstrip("/") == "/mcp"


class Admission(HttpMiddleware):
    def __init__(
        self,
        app: ASGIApp,
        tokens: TokenFile | None,
        max_in_flight: int,
        max_in_flight_per_client: int,
        retry_after_s: int,
    ) -> None:
        super().__init__(app)
        self.tokens = tokens
        self.max_in_flight = max_in_flight
        self.max_per_client = max_in_flight_per_client
        self.retry_after_s = retry_after_s
        self.in_flight = 0
        self.by_client: Counter[str] = Counter()  # requests in flight, per client (one event loop: no lock)

    def client_of(self, scope: Scope, headers: dict[str, str]) -> str:
        """The client a request counts against (see the module docstring); authenticates it on a
        server with tokens (an ``ApiError`` 401 without a valid token)."""
        path = scope.get("path", "")
        guarded = path.startswith("/v1/") or path.rstrip("/") == "/mcp"
        if self.tokens is not None and guarded:
            principal = principal_of(self.tokens, headers.get("authorization"))
            scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
            return "admin" if principal.admin else f"user:{principal.user}"
        if self.tokens is None and guarded:
            scope.setdefault("state", {})[PRINCIPAL_KEY] = OPEN
            if (m := _USER_PATH.match(path)) is not None:
                return f"user:{m.group(1)}"
            if path.rstrip("/") == "/mcp":
                asked = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("user", ["default"])
                return f"user:{asked[-1][:64]}"
        client = scope.get("client")
        return f"address:{client[0] if client else 'unknown'}"

    def applies(self, scope: Scope) -> bool:
        return scope.get("path") not in PROBES

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            client = self.client_of(scope, _headers(scope))
        except ApiError as exc:  # answered before the body is read: the connection closes after it
            await exc.response()(scope, receive, _closing(send))
            return
        if is_stream(scope):
            await self.app(scope, receive, send)
            return
        retry = [(b"retry-after", str(self.retry_after_s).encode())]
        if self.by_client[client] >= self.max_per_client:
            body = error_bytes(
                429,
                "too_many_requests",
                f"this client has {self.max_per_client} requests in flight already, the most one "
                "client may have (the others' share of the server is kept for them)",
                f"wait for an answer before sending more, or retry after {self.retry_after_s} s (Retry-After)",
            )
            await _answer(send, 429, body, [*retry, CLOSE])
            return
        if self.in_flight >= self.max_in_flight:
            body = error_bytes(
                503,
                "busy",
                f"the server is serving {self.max_in_flight} requests already",
                f"retry after {self.retry_after_s} s (Retry-After)",
            )
            await _answer(send, 503, body, [*retry, CLOSE])
            return
        self.in_flight += 1
        self.by_client[client] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.by_client[client] -= 1
            if self.by_client[client] <= 0:
                del self.by_client[client]


def _closing(send: Send) -> Send:
    """``send`` with ``Connection: close`` on the answer (a body that was not read is never parsed)."""

    async def closing(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), CLOSE]}
        await send(message)

    return closing


class LoopbackGuard(HttpMiddleware):
    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        host = urlsplit("//" + headers.get("host", "")).hostname or ""
        origin = headers.get("origin")
        origin_host = urlsplit(origin).hostname if origin and origin != "null" else None
        if not is_loopback(host) or (origin is not None and not is_loopback(origin_host or "")):
            body = error_bytes(
                403,
                "not_loopback",
                "this server runs without tokens, so it answers only requests addressed to a loopback "
                "name (Host 127.0.0.1, localhost or [::1]) from no web origin but a loopback one",
                "call it as http://127.0.0.1:<port>; to serve other hosts or browsers, give it a token file",
            )
            await _answer(send, 403, body, [CLOSE])
            return
        await self.app(scope, receive, send)


class BodyLimit(HttpMiddleware):
    def __init__(self, app: ASGIApp, max_body_bytes: int, body_timeout_s: float) -> None:
        super().__init__(app)
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s

    def _too_large(self, size: str) -> bytes:
        return error_bytes(
            413,
            "body_too_large",
            f"the request body is {size} bytes; the limit is {self.max_body_bytes} bytes",
            "send a smaller body (the limit is MEMORY_SERVER_MAX_BODY_BYTES on the server)",
        )

    def _too_slow(self, received: int, declared: bytes | None) -> bytes:
        of = f" of the {declared.decode()}" if declared is not None and declared.isdigit() else ""
        return error_bytes(
            408,
            "body_timeout",
            f"the request body did not arrive within {self.body_timeout_s:g} s ({received}{of} bytes came)",
            "send the whole body right after the headers; the time limit is MEMORY_SERVER_BODY_TIMEOUT_S "
            "on the server",
        )

    def applies(self, scope: Scope) -> bool:
        return scope.get("method") not in ("GET", "HEAD", "OPTIONS")

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = next((v for k, v in scope.get("headers", []) if k.lower() == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await _answer(send, 413, self._too_large(declared.decode()), [CLOSE])
            return
        # Read the body (at most the limit, within the time limit) before the app sees any of it.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout_s
        chunks, size = [], 0
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                await _answer(send, 408, self._too_slow(size, declared), [CLOSE])
                return
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await _answer(send, 413, self._too_large(f"over {self.max_body_bytes}"), [CLOSE])
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()  # after the body: the disconnect, when it comes

        await self.app(scope, replay, send)
