"""Running the service: ``memory-assets serve`` (uvicorn, one process) and ``memory-assets mcp``
(MCP over stdio for a desktop client, one user).

``serve`` refuses to listen beyond loopback without a token file (``ServerConfig.check_bind``)
before it loads anything. uvicorn serves the app (``app.py``) with one worker, so the model is
loaded once; SIGTERM (or Ctrl-C) stops accepting connections, lets the requests in flight finish
(their writes are durable when answered), then exits.

``mcp`` speaks MCP on stdin and stdout for one user (``--user``, default ``default``) of the root;
it logs to stderr only, so nothing but the protocol reaches stdout.
"""

import logging
import sys

import anyio
import uvicorn

from memory_assets.core.ops.users import check_user_id
from memory_assets.server.config import ServerConfig
from memory_assets.server.protocol import http_protocol

log = logging.getLogger("memory_assets.server")


def serve(config: ServerConfig) -> None:
    config.check_bind()
    log.setLevel(logging.INFO)  # the model's load, the catch-up's errors (never a body or a token)
    # One line a request from server/access_log.py (method, route template, status, time), to
    # stderr in place of uvicorn's, which writes the path and query as sent.
    access = logging.getLogger("memory_assets.server.access")
    access.setLevel(logging.INFO)
    if not access.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
        access.addHandler(handler)
        access.propagate = False
    from memory_assets.server.app import build_app

    app = build_app(config)
    print(
        f"memory-assets: serving {config.root} on http://{config.host}:{config.port} "
        f"({'tokens from ' + str(config.tokens_file) if config.tokens_file else 'no tokens: loopback only'}); "
        "REST under /v1, MCP at /mcp, API docs at /docs",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(
        app,
        host=config.host,
        port=config.port,
        log_level="info",
        access_log=False,
        workers=1,
        lifespan="on",
        http=http_protocol(),  # a request uvicorn cannot parse is answered in JSON too
    )


def run_stdio(config: ServerConfig, user_id: str) -> None:
    check_user_id(user_id)
    from memory_assets.server.mcp_tools import build_mcp
    from memory_assets.server.service import MemoryService

    async def main() -> None:
        service = MemoryService(config)
        mcp = build_mcp(service, config, lambda ctx: user_id)
        service.start()
        try:
            await mcp.run_stdio_async()
        finally:
            await service.stop()

    anyio.run(main)
