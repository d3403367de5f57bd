"""Every error the server answers is JSON ``{"error", "detail", "fix"}``.

``error`` is a stable machine-readable code (``invalid_user_id``, ``unknown_user``,
``validation_error``, ...), ``detail`` says what was wrong (naming the field), ``fix`` what to do.
Bad input is a 4xx, never a 500 and never a traceback; an unexpected failure is a 500 with the
same shape, logged on the server without the request's body. Request bodies and tokens never
reach a log line.
"""

import json
import logging
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("memory_assets.server")


class ApiError(Exception):
    """An answer other than success: status, code, what went wrong, and the fix."""

    def __init__(
        self, status: int, error: str, detail: str, fix: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.fix = fix
        self.headers = dict(headers or {})

    def body(self) -> dict[str, str]:
        return {"error": self.error, "detail": self.detail, "fix": self.fix}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def error_bytes(status: int, error: str, detail: str, fix: str) -> bytes:
    """The JSON body of an error, for the ASGI guards that answer before the app."""
    return json.dumps({"error": error, "detail": detail, "fix": fix}).encode()


def field_problems(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic's errors as one line naming each field (never echoing the value sent)."""
    parts = []
    for err in errors[:10]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 10} more)" if len(errors) > 10 else ""
    return "; ".join(parts) + more


JSON_FIX = "send a JSON object, encoded in UTF-8, with Content-Type: application/json"


def invalid_json(problem: str) -> ApiError:
    return ApiError(400, "invalid_json", f"the request body is not valid JSON: {problem}", JSON_FIX)


def validation_error(errors: Sequence[Mapping[str, Any]]) -> ApiError:
    """A request that did not validate: invalid JSON is a 400, anything else a 422."""
    for err in errors:
        if err.get("type") == "json_invalid":
            loc = err.get("loc") or ()
            at = f" at character {loc[-1]}" if loc and isinstance(loc[-1], int) else ""
            return invalid_json(f"{(err.get('ctx') or {}).get('error', 'malformed')}{at}")
    return ApiError(
        422,
        "validation_error",
        field_problems(errors),
        "correct the named fields (types, lengths and ranges are in the OpenAPI document at /openapi.json)",
    )


HTTP_CODES = {
    404: ("not_found", "no such route", "see /docs or /openapi.json for the routes"),
    405: ("method_not_allowed", "this route does not take this method", "see /docs for the methods"),
    413: (
        "body_too_large",
        "the request body is larger than the server's limit",
        "send a smaller body (the limit is MEMORY_SERVER_MAX_BODY_BYTES on the server)",
    ),
}


def unparsable_body(cause: BaseException | None) -> ApiError | None:
    """What a body FastAPI could not read as JSON holds, when the cause says (it raises a generic
    400 "error parsing the body" for anything but a syntax error)."""
    if isinstance(cause, UnicodeDecodeError):
        return invalid_json(
            f"byte {cause.start} (0x{cause.object[cause.start]:02x}) is not valid UTF-8"
            if isinstance(cause.object, bytes) and cause.start < len(cause.object)
            else "it is not valid UTF-8"
        )
    if isinstance(cause, RecursionError):
        return invalid_json(
            "its arrays and objects nest too deeply to read (the bodies of this API are one object "
            "whose values are strings, numbers or lists of strings)"
        )
    if isinstance(cause, ValueError):
        return invalid_json("it could not be read")
    return None


def install(app: FastAPI) -> None:
    """Answer every error in the one JSON shape."""

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_error(exc.errors()).response()

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and (named := unparsable_body(exc.__cause__)) is not None:
            return named.response()
        code, detail, fix = HTTP_CODES.get(exc.status_code, ("http_error", str(exc.detail), "see /docs"))
        return ApiError(exc.status_code, code, detail, fix, exc.headers).response()

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        return internal_error(f"{request.method} {request.url.path}", exc).response()


def internal_error(what: str, exc: BaseException) -> ApiError:
    """A failure of the server: logged in full (never a body) under an id the answer names, and
    answered with that id only: no exception, path or stack of the server reaches a client."""
    incident = secrets.token_hex(4)
    log.error(f"{what} failed [{incident}]: {type(exc).__name__}: {exc}", exc_info=exc)
    return ApiError(
        500,
        "internal_error",
        f"the server failed on this request (incident {incident})",
        f"retry; if it persists, the server's log names the cause under incident {incident}",
    )
