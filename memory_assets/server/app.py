"""The ASGI app: FastAPI (so ``/openapi.json``) with the REST routes, MCP's streamable HTTP at
``/mcp``, and the guards in front.

The API's pages, ``/docs`` (Swagger UI) and ``/redoc``, load their scripts and styles from the
server itself (``/static-offline-docs/``, the files the pinned ``fastapi-offline`` package ships),
never from a CDN: a self-hosted memory often runs where nothing may leave the network, and a
page that waits on a CDN there is blank. Swagger UI's validator badge (a request to a public
validator) is off, and both pages are answered with a Content-Security-Policy that lets the
browser load nothing from any other origin (``OwnOriginOnly``: Redoc's footer links a logo on
Redocly's CDN, which the browser then never asks for).

``/mcp`` is served by the SDK's session manager, stateless (every call stands alone and is
authorised alone) with JSON answers. In front of it, ``McpEndpoint`` resolves whose memory the
call is for, exactly as the REST routes do, and leaves the answer on the request's scope for the
tools (``mcp_tools.py``): the token's user; for an admin token, or a loopback server without
tokens, the ``user`` query parameter (default ``default``); a user token naming another user is
a 403. An event stream (``GET /mcp``) is served through that user's pool (``streams.py``).

The lifespan starts the SDK's session manager, then loads the model in the background and
catches the homes up (``MemoryService.start``); on SIGTERM uvicorn stops accepting, finishes the
requests in flight (their writes included), writes the rows of the turns acknowledged but not yet
indexed (``HomeCache.flush``), then the lifespan ends.
"""

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from memory_assets.server import errors
from memory_assets.server.access_log import AccessLog
from memory_assets.server.auth import PRINCIPAL_KEY, Principal, TokenFile, principal_of
from memory_assets.server.config import ServerConfig
from memory_assets.server.errors import ApiError
from memory_assets.server.limits import Admission, BodyLimit, LoopbackGuard, is_stream
from memory_assets.server.mcp_tools import build_mcp
from memory_assets.server.middleware import HttpMiddleware
from memory_assets.server.routes import build_router, reach
from memory_assets.server.service import MemoryService
from memory_assets.server.streams import StreamPool

DEFAULT_MCP_USER = "default"
STATE_KEY = "memory_user"


def user_from_scope(ctx: Context) -> str:
    """The user ``McpEndpoint`` resolved for this call."""
    request = ctx.request_context.request
    state = getattr(request, "scope", {}).get("state") or {}
    user = state.get(STATE_KEY)
    if not isinstance(user, str):  # only reachable if the endpoint was bypassed
        raise ApiError(
            401, "missing_user", "no user was resolved for this call", "call /mcp through the server"
        )
    return user


class McpEndpoint:
    """Resolves the caller of ``/mcp`` (see the module docstring), then hands the request on."""

    def __init__(self, app: StreamableHTTPASGIApp, tokens: TokenFile | None, streams: StreamPool) -> None:
        self.app = app
        self.tokens = tokens
        self.streams = streams

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        try:
            known = scope.get("state", {}).get(PRINCIPAL_KEY)  # the admission guard's answer
            principal = (
                known
                if isinstance(known, Principal)
                else principal_of(self.tokens, headers.get("authorization"))
            )
            asked = query.get("user", [None])[-1]
            user = asked or (principal.user if not principal.admin else None) or DEFAULT_MCP_USER
            reach(principal, user)
        except ApiError as exc:
            await exc.response()(scope, receive, send)
            return
        scope.setdefault("state", {})[STATE_KEY] = user
        send = json_errors(send)
        if is_stream(scope):
            await self.streams.serve(user, self.app, scope, receive, send)
        else:
            await self.app(scope, receive, send)


# The SDK's transport checks answer in plain text; these are the same answers in the API's JSON.
SDK_REFUSALS = {
    "Invalid Host header": (
        "invalid_host",
        "address the server by the name and port it listens on (http://127.0.0.1:<port>)",
    ),
    "Invalid Origin header": ("invalid_origin", "call /mcp from no web origin but the server's own"),
    "Invalid Content-Type header": ("invalid_content_type", "send Content-Type: application/json"),
    "Request body too large": ("body_too_large", "send a smaller body (MEMORY_SERVER_MAX_BODY_BYTES)"),
}


def json_errors(send: Send) -> Send:
    """``send`` with an error the SDK answers in plain text rewritten as ``{error, detail, fix}``."""
    held: dict[str, Any] = {}

    async def rewritten(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] >= 400:
            kind = dict(message.get("headers", [])).get(b"content-type", b"")
            if b"json" not in kind and b"event-stream" not in kind:
                held["start"], held["body"] = message, b""
                return
        if "start" in held and message["type"] == "http.response.body":
            held["body"] += message.get("body", b"")
            if message.get("more_body", False):
                return
            text = held["body"].decode("utf-8", "replace").strip()
            code, fix = SDK_REFUSALS.get(text, ("mcp_refused", "see the MCP specification's streamable HTTP"))
            status = held.pop("start")["status"]
            body = errors.error_bytes(status, code, text or "the MCP transport refused the request", fix)
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return rewritten


DOCS_PAGES = ("/docs", "/redoc")
DOCS_POLICY = (
    b"default-src 'self'; script-src 'self' 'unsafe-inline' blob:; style-src 'self' 'unsafe-inline'; "
    b"img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; "
    b"object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
)


class OwnOriginOnly(HttpMiddleware):
    """The API's pages answered with a policy that keeps the browser on the server's own origin."""

    def applies(self, scope: Scope) -> bool:
        return scope.get("path") in DOCS_PAGES

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:

        async def with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (b"content-security-policy", DOCS_POLICY)]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_policy)


def build_app(config: ServerConfig) -> FastAPI:
    tokens = TokenFile(config.tokens_file) if config.tokens_file is not None else None
    service = MemoryService(config)
    mcp = build_mcp(service, config, user_from_scope)
    mcp.streamable_http_app(  # builds the session manager the endpoint below serves through
        stateless_http=True,
        json_response=True,
        max_request_body_size=config.max_body_bytes,
        host=config.host,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            service.start()
            try:
                yield
            finally:
                await service.stop()

    app = FastAPIOffline(
        title="memory-assets",
        summary="Long-term memory for AI assistants: one home per user, REST and MCP",
        lifespan=lifespan,
        swagger_ui_parameters={"validatorUrl": None},
    )
    streams = StreamPool(
        config.max_streams_per_user, config.max_streams, config.stream_idle_s, config.retry_after_s
    )
    app.state.service = service
    app.state.config = config
    app.state.streams = streams
    errors.install(app)
    app.include_router(build_router(service, config, tokens))
    endpoint = McpEndpoint(StreamableHTTPASGIApp(mcp.session_manager), tokens, streams)
    app.router.routes.append(Route("/mcp", endpoint=endpoint, methods=["GET", "POST", "DELETE"]))
    app.add_middleware(OwnOriginOnly)
    app.add_middleware(BodyLimit, max_body_bytes=config.max_body_bytes, body_timeout_s=config.body_timeout_s)
    app.add_middleware(
        Admission,
        tokens=tokens,
        max_in_flight=config.max_in_flight,
        max_in_flight_per_client=config.max_in_flight_per_client,
        retry_after_s=config.retry_after_s,
    )
    if tokens is None:
        app.add_middleware(LoopbackGuard)
    app.add_middleware(AccessLog)  # outermost: every request, answered or refused
    return app
