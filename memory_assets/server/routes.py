"""The REST API under ``/v1``, and the probes: each route checks who may call it, then hands its
validated input to the service (``service.py``) and its result back as JSON.

Order of the checks, the same on every user route: the token (401 without a valid one, when the
server has a token file), the user id (400 unless it matches the rule; no path is built from
it), the token's reach (403 for another user's route), then the body (400 for invalid JSON, 422
for a field of the wrong type, length or range, or an unknown field), then the operation (404
for a user or memory that does not exist on a read).
"""

import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from memory_assets.core.ops.forget import Target
from memory_assets.core.ops.users import USER_ID_RULE, UserIdError, check_user_id
from memory_assets.server.auth import PRINCIPAL_KEY, Principal, TokenFile, principal_of
from memory_assets.server.config import ServerConfig
from memory_assets.server.errors import ApiError
from memory_assets.server.idempotency import HEADER, REPLAYED_HEADER, BadKey, Keyed
from memory_assets.server.schemas import SOURCE_TYPES, Cursor, IsoDate, RowId, SourceType, bodies, fields
from memory_assets.server.service import MemoryService


def reach(principal: Principal, user_id: str) -> str:
    """``user_id`` once it is valid and the caller may act for it (400, 403 otherwise)."""
    try:
        check_user_id(user_id)
    except UserIdError as exc:
        raise ApiError(400, "invalid_user_id", str(exc), f"use a user id of {USER_ID_RULE}") from None
    if not principal.may(user_id):
        raise ApiError(
            403,
            "forbidden",
            f"this token is for user {principal.user!r}, not {user_id!r}",
            "use a token of this user, or an admin token",
        )
    return user_id


def build_router(service: MemoryService, config: ServerConfig, tokens: TokenFile | None) -> APIRouter:
    f = fields(config)
    b = bodies(config)

    # async: FastAPI runs a plain def dependency on a worker thread, a hop each request would pay
    async def caller(request: Request) -> Principal:
        known = request.scope.get("state", {}).get(PRINCIPAL_KEY)  # the admission guard's answer
        return (
            known
            if isinstance(known, Principal)
            else principal_of(tokens, request.headers.get("authorization"))
        )

    async def user(user_id: str, principal: Annotated[Principal, Depends(caller)]) -> str:
        return reach(principal, user_id)

    User = Annotated[str, Depends(user)]
    router = APIRouter()

    @router.get("/health", tags=["probes"], summary="The process is up")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @router.get(
        "/ready", tags=["probes"], summary="The model is loaded, the root writable and its disk not full"
    )
    async def ready() -> Any:
        state = await service.ready()
        return state if state["ready"] else JSONResponse(state, status_code=503)

    @router.get("/v1/users", tags=["admin"], summary="Every user with a home (admin only)")
    async def users(principal: Annotated[Principal, Depends(caller)]) -> dict[str, list[str]]:
        if not principal.admin:
            raise ApiError(403, "forbidden", "listing users needs an admin token", "use an admin token")
        return {"users": await service.users()}

    @router.post("/v1/users/{user_id}/turns", tags=["write"], summary="Record a conversation turn")
    async def record_turn(user_id: User, body: b.turn, key: IdempotencyKey = None) -> JSONResponse:  # type: ignore[valid-type]
        answer, replayed = await service.record_turn(
            user_id,
            body.user,  # type: ignore[attr-defined]
            body.assistant,  # type: ignore[attr-defined]
            body.chat_id,  # type: ignore[attr-defined]
            body.at,  # type: ignore[attr-defined]
            keyed=keyed(key, "turns", body),
        )
        return written(answer, replayed)

    @router.post("/v1/users/{user_id}/memories", tags=["write"], summary="Add one memory (no extraction)")
    async def add_memory(user_id: User, body: b.memory, key: IdempotencyKey = None) -> JSONResponse:  # type: ignore[valid-type]
        answer, replayed = await service.add_memory(
            user_id,
            body.text,  # type: ignore[attr-defined]
            category=body.category,  # type: ignore[attr-defined]
            importance=body.importance,  # type: ignore[attr-defined]
            chat_id=body.chat_id,  # type: ignore[attr-defined]
            at=body.at,  # type: ignore[attr-defined]
            keyed=keyed(key, "memories", body),
        )
        return written(answer, replayed)

    @router.post("/v1/users/{user_id}/search", tags=["read"], summary="Search the user's memory")
    async def search(user_id: User, body: b.search) -> dict[str, Any]:  # type: ignore[valid-type]
        hits = await service.search(user_id, body.query, body.filters())  # type: ignore[attr-defined]
        return {"hits": hits}

    @router.get("/v1/users/{user_id}/memories", tags=["read"], summary="List memories, newest fact first")
    async def list_memories(
        user_id: User,
        cursor: Annotated[Cursor | None, Query()] = None,
        limit: Annotated[f.page_limit, Query()] = 50,  # type: ignore[valid-type]
        source_type: Annotated[list[SourceType] | None, Query(max_length=SOURCE_TYPES)] = None,
        since: Annotated[IsoDate | None, Query()] = None,
        until: Annotated[IsoDate | None, Query()] = None,
    ) -> dict[str, Any]:
        return await service.list_memories(
            user_id, cursor=cursor, limit=limit, source_types=source_type, since=since, until=until
        )

    @router.get(
        "/v1/users/{user_id}/memories/{memory_id}",
        tags=["read"],
        summary="One memory, its provenance and its lineage",
        description=(
            "`lineage`: where the memory came from, back to what was said. A daily-log fact: its "
            "`log_lines` (file, line, fold state) and each one's `turns` (transcript, byte offset, "
            "what was said); a vault chunk: its `bullets` (page, line) with the log lines folded "
            "into them; a turn: its `turns`; a MEMORY.md chunk: its `zone` (who writes it, and for "
            "each generated line the claims or facts it was made from). `notes` say where the "
            "chain stops and why; what a person forgot is never shown."
        ),
    )
    async def get_memory(user_id: User, memory_id: RowId) -> dict[str, Any]:
        return await service.get_memory(user_id, memory_id)

    @router.delete(
        "/v1/users/{user_id}/memories/{memory_id}", tags=["write"], summary="Forget a memory by id"
    )
    async def delete_memory(user_id: User, memory_id: RowId) -> dict[str, Any]:
        return await service.forget(user_id, Target(row_id=memory_id))

    @router.post(
        "/v1/users/{user_id}/forget",
        tags=["write"],
        summary="Forget a fact by its text, a chat, or a day of talk",
    )
    async def forget(user_id: User, body: b.text) -> dict[str, Any]:  # type: ignore[valid-type]
        return await service.forget(user_id, _target(body), force=body.force)  # type: ignore[attr-defined]

    @router.post(
        "/v1/users/{user_id}/erase",
        tags=["write"],
        summary="Erase a text, a memory, a chat or a day, irreversibly (the plan without confirm)",
    )
    async def erase(user_id: User, body: b.erase) -> dict[str, Any]:  # type: ignore[valid-type]
        return await service.erase(
            user_id,
            _target(body),
            confirm=body.confirm,  # type: ignore[attr-defined]
            force=body.force,  # type: ignore[attr-defined]
        )

    @router.post("/v1/users/{user_id}/unforget", tags=["write"], summary="Bring a forgotten fact back")
    async def unforget(user_id: User, body: b.text) -> dict[str, Any]:  # type: ignore[valid-type]
        return await service.unforget(
            user_id,
            body.text,  # type: ignore[attr-defined]
            chat=body.chat_id,  # type: ignore[attr-defined]
            day=body.day,  # type: ignore[attr-defined]
        )

    @router.get("/v1/users/{user_id}/status", tags=["read"], summary="What the user's home holds")
    async def status(user_id: User) -> dict[str, Any]:
        return await service.status(user_id)

    @router.get(
        "/v1/users/{user_id}/upkeep",
        tags=["admin"],
        summary="What the user's home needs: the upkeep's look, nothing done (admin only)",
        description=(
            "What `memory-assets upkeep --dry-run --root ROOT --user ID` finds: the index keys the "
            "index is behind on, the transcript sessions the write path is behind on, the dream's "
            "decision, a hand-off to retire, the dedup measurement, an optimize and the failed steps "
            "due again (`work`), the days whose logs grew, and whether a request of the upkeep's "
            "planner is in flight. Ids, file names, days and counts only: never a person's words."
        ),
    )
    async def upkeep(user_id: User, principal: Annotated[Principal, Depends(caller)]) -> dict[str, Any]:
        if not principal.admin:
            raise ApiError(
                403, "forbidden", "what a home needs is asked with an admin token", "use an admin token"
            )
        return await service.look(user_id)

    @router.delete(
        "/v1/users/{user_id}",
        tags=["write"],
        summary="Delete the user: the home and every trace at the root, irreversibly (confirm=true)",
    )
    async def delete_user(user_id: User, confirm: Annotated[bool, Query()] = False) -> dict[str, Any]:
        return await service.delete_user(user_id, confirm=confirm)

    @router.api_route(
        "/v1/users/{rest:path}",
        methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        include_in_schema=False,
    )
    async def elsewhere(rest: str, request: Request) -> None:
        """A path no route above took: a user id holding a '/' (sent as %2F), or a wrong method."""
        m = USER_PATH.fullmatch(rest)
        if m is None and request.method != "DELETE":
            raise ApiError(404, "not_found", "no such route", "see /docs or /openapi.json for the routes")
        try:  # a DELETE of a user whose id holds a '/' names it whole
            check_user_id(m.group("user") if m is not None else rest.rstrip("/"))
        except UserIdError as exc:
            raise ApiError(400, "invalid_user_id", str(exc), f"use a user id of {USER_ID_RULE}") from None
        raise ApiError(405, "method_not_allowed", "this route does not take this method", "see /docs")

    return router


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=HEADER,
        description=(
            "a key of the client's choosing (1-255 printable ASCII characters), one per request: "
            "a retry with the same key and body gets the first answer and writes nothing"
        ),
    ),
]


def _target(body: BaseModel) -> Target:
    """What a forget or an erase body aims at: its ``text``, ``id`` (erase only), ``chat_id`` or ``day``."""
    return Target(
        text=body.text,  # type: ignore[attr-defined]
        row_id=getattr(body, "id", None),
        chat=body.chat_id,  # type: ignore[attr-defined]
        day=body.day,  # type: ignore[attr-defined]
    )


def keyed(key: str | None, route: str, body: BaseModel) -> Keyed | None:
    """The request's key record (``idempotency.py``); a 400 for a key that cannot be one."""
    if key is None:
        return None
    try:
        return Keyed.of(key, route, body.model_dump(mode="json"))
    except BadKey as exc:
        raise ApiError(
            400, "invalid_idempotency_key", str(exc), f"send {HEADER} as 1 to 255 printable ASCII characters"
        ) from None


def written(answer: dict[str, Any], replayed: bool) -> JSONResponse:
    """A write's answer; a replayed one says so (``Idempotent-Replayed: true``)."""
    return JSONResponse(answer, headers={REPLAYED_HEADER: "true"} if replayed else None)


# The user routes' shape: what a path that matched none of them holds as its user id.
USER_PATH = re.compile(
    r"(?P<user>.*?)/(?:turns|memories(?:/[^/]*)?|search|forget|unforget|erase|status|upkeep)/?", re.S
)
