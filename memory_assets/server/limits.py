"""ASGI guards in front of the app: bounded work, and the loopback guard.

* ``InFlightLimit``: at most ``max_in_flight`` requests are served at once; one more is answered
  503 with ``Retry-After`` at once, so load past capacity never becomes an unbounded queue.
  ``/health`` and ``/ready`` are not counted (a probe must answer under load).
* ``LoopbackGuard``: on a loopback server without tokens every local process may call, but a web
  page must not: a request whose ``Host`` is not a loopback name (DNS rebinding) or whose
  ``Origin`` is not a loopback origin (a page's cross-site request) is answered 403.

* ``BodyLimit``: a request body larger than ``max_body_bytes`` is answered 413: at once when its
  ``Content-Length`` says so, else as soon as the bytes read pass the limit (a chunked body). The
  body (at most the limit) is read before the app sees it, then handed on whole.

Every answer keeps the JSON shape of ``errors.py``.
"""

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_assets.server.config import is_loopback
from memory_assets.server.errors import error_bytes

PROBES = ("/health", "/ready")


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


class InFlightLimit:
    def __init__(self, app: ASGIApp, max_in_flight: int, retry_after_s: int) -> None:
        self.app = app
        self.max_in_flight = max_in_flight
        self.retry_after_s = retry_after_s
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in PROBES:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_in_flight:
            body = error_bytes(
                503,
                "busy",
                f"the server is serving {self.max_in_flight} requests already",
                f"retry after {self.retry_after_s} s (Retry-After)",
            )
            await _answer(send, 503, body, [(b"retry-after", str(self.retry_after_s).encode())])
            return
        self.in_flight += 1  # one event loop: no lock needed
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


class LoopbackGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
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
            await _answer(send, 403, body, [])
            return
        await self.app(scope, receive, send)


class BodyLimit:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    def _too_large(self, size: str) -> bytes:
        return error_bytes(
            413,
            "body_too_large",
            f"the request body is {size} bytes; the limit is {self.max_body_bytes} bytes",
            "send a smaller body (the limit is MEMORY_SERVER_MAX_BODY_BYTES on the server)",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = next((v for k, v in scope.get("headers", []) if k.lower() == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await _answer(send, 413, self._too_large(declared.decode()), [(b"connection", b"close")])
            return
        # Read the body (at most the limit) before the app sees any of it, then replay it.
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await _answer(
                    send, 413, self._too_large(f"over {self.max_body_bytes}"), [(b"connection", b"close")]
                )
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
