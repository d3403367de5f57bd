"""The MCP event streams (``GET /mcp``): a bounded pool per user, idle streams closed.

A client may open an event stream for what the server sends unasked. This server is stateless
and sends nothing on one (every answer goes back on its own ``POST``), so a stream only holds a
connection open; it is no request in flight and takes no request slot (``limits.py``). Instead:

* a user has at most ``max_streams_per_user`` streams open; a newer one closes that user's
  oldest (a client that reconnects without closing its old stream, by accident, replaces it
  rather than piling up, and one user's streams never reach another's);
* at most ``max_streams`` are open in all; one more is answered 503 ``busy`` with ``Retry-After``;
* a stream that carried no event for ``stream_idle_s`` is closed (keep-alive comments do not
  count). A client reconnects when it wants one again.

A stream closed by the pool ends as a normal end of its HTTP response (the terminating chunk):
the client sees the stream end, never a broken connection.
"""

import contextlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import count

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_assets.server.errors import error_bytes

_ids = count()


@dataclass
class _Stream:
    user: str
    cancel: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    closed_by: str | None = None  # why the pool closed it: "replaced", "idle", "stop"


def _is_event(chunk: bytes) -> bool:
    """Whether an SSE chunk holds an event (a line other than a ``:`` comment, the keep-alive)."""
    return any(line and not line.startswith(b":") for line in chunk.splitlines())


class StreamPool:
    def __init__(self, max_per_user: int, max_total: int, idle_s: float, retry_after_s: int) -> None:
        self.max_per_user = max(1, max_per_user)
        self.max_total = max(1, max_total)
        self.idle_s = idle_s
        self.retry_after_s = retry_after_s
        self._open: dict[str, OrderedDict[int, _Stream]] = {}
        self.closed = {"replaced": 0, "idle": 0}  # streams the pool closed, by why

    def __len__(self) -> int:
        return sum(len(s) for s in self._open.values())

    def open_for(self, user: str) -> int:
        return len(self._open.get(user, ()))

    async def serve(self, user: str, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one stream of ``user`` through ``app`` under the pool's rules."""
        mine = self._open.setdefault(user, OrderedDict())
        while len(mine) >= self.max_per_user:  # the user's oldest makes room
            _, oldest = mine.popitem(last=False)
            oldest.closed_by = "replaced"
            self.closed["replaced"] += 1
            oldest.cancel.cancel()
        if len(self) >= self.max_total:
            if not mine:
                self._open.pop(user, None)
            body = error_bytes(
                503,
                "busy",
                f"the server holds {self.max_total} event streams already",
                f"retry after {self.retry_after_s} s (Retry-After); the tools need no stream",
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"retry-after", str(self.retry_after_s).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        stream, key = _Stream(user), next(_ids)
        mine[key] = stream
        started = finished = False
        last_event = time.monotonic()

        async def tracked(message: Message) -> None:
            nonlocal started, finished, last_event
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body":
                if _is_event(message.get("body", b"")):
                    last_event = time.monotonic()
                finished = finished or not message.get("more_body", False)
            await send(message)

        async def idle_watch() -> None:
            while True:
                wait = last_event + self.idle_s - time.monotonic()
                if wait <= 0:
                    stream.closed_by = "idle"
                    self.closed["idle"] += 1
                    stream.cancel.cancel()
                    return
                await anyio.sleep(wait)

        try:
            with stream.cancel:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(idle_watch)
                    await app(scope, receive, tracked)
                    tg.cancel_scope.cancel()  # the stream ended by itself (the client went away)
        finally:
            mine.pop(key, None)
            if not mine and self._open.get(user) is mine:
                del self._open[user]
            if started and not finished:  # end the response cleanly: the client sees the stream end
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})

    def close_all(self) -> None:
        """Close every stream (the server is stopping)."""
        for mine in list(self._open.values()):
            for stream in list(mine.values()):
                stream.closed_by = "stop"
                stream.cancel.cancel()
