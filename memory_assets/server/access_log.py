"""The service's access log: one line a request, naming no user's words.

uvicorn's own access log writes the request's path and query as sent; this one writes the method,
the route's template (``/v1/users/{user_id}/memories/{memory_id}``, never the ids, the query or
the body), the status and the time, on the ``memory_assets.server.access`` logger:
``POST /v1/users/{user_id}/turns 200 41.2 ms``. A request no route matched is logged as
``(no route)``. ``serve`` turns uvicorn's access log off and this one on.
"""

import logging
import time

from starlette.types import Message, Receive, Scope, Send

from memory_assets.server.middleware import HttpMiddleware

log = logging.getLogger("memory_assets.server.access")
NO_ROUTE = "(no route)"


def template_of(scope: Scope) -> str:
    """The template of the route that answered (set on the scope by the router), else ``(no route)``."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    return "/mcp" if scope.get("path", "").startswith("/mcp") else NO_ROUTE


class AccessLog(HttpMiddleware):
    """The outermost middleware: logs each HTTP request once its answer's status is known."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            elapsed = (time.perf_counter() - start) * 1000.0
            log.info(f"{scope.get('method', '-')} {template_of(scope)} {status} {elapsed:.1f} ms")
