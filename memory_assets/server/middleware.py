"""The shape every ASGI guard of the service shares: it wraps the app, lets every scope that is
not an HTTP request (lifespan, websocket) and every request it does not ``apply`` to straight
through, and ``handle``s the rest (answering, or calling ``self.app`` itself)."""

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpMiddleware:
    """A pure ASGI middleware over HTTP requests; subclasses override ``handle`` and, when they
    guard only some requests, ``applies``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def applies(self, scope: Scope) -> bool:
        """Whether this HTTP request is this middleware's to handle (all, unless overridden)."""
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.applies(scope):
            await self.app(scope, receive, send)
            return
        await self.handle(scope, receive, send)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError
