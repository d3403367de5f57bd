"""The MCP tools, over the same operations as the REST routes (``service.py``).

One ``MCPServer`` (the official ``mcp`` SDK) with these tools, each with a description an agent
can act on and a JSON schema for its input (from the type hints; the same bounds as the REST
bodies): ``add_memory``, ``record_turn``, ``search_memory``, ``list_memories``, ``forget_memory``,
``unforget_memory`` and ``memory_status``.

Whose memory a call reads or writes is never an argument: ``user_of(ctx)`` decides it. Over HTTP
(``app.py``) the endpoint at ``/mcp`` resolves the caller before the SDK sees the request (the
token's user; an admin token or a server without tokens names it with ``/mcp?user=ID``, default
``default``); over stdio (``memory-assets mcp --user ID``) it is the user the process was started
for. A failing call is a tool error whose text holds the error code, what went wrong and the fix.

The arguments follow the REST bodies' rules (``MemoryMCP``): an argument a tool does not take is
refused (the tools' schemas say ``additionalProperties: false``), and a validation error names
the arguments and what is wrong with them, never the values sent (they are the caller's words).
"""

from collections.abc import Awaitable, Callable
from datetime import date, datetime
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult
from mcp.types import Tool as McpTool
from pydantic import Field, ValidationError

from memory_assets.core.ops.forget import Target
from memory_assets.core.search.filters import FilterError, SearchFilters
from memory_assets.server.config import ServerConfig
from memory_assets.server.errors import ApiError, field_problems
from memory_assets.server.schemas import (
    SOURCE_TYPES,
    Category,
    ChatId,
    Cursor,
    IsoDate,
    IsoTime,
    RowId,
    SourceType,
    fields,
)
from memory_assets.server.service import MemoryService

T = TypeVar("T")
UserOf = Callable[[Context], str]

INSTRUCTIONS = (
    "Long-term memory of the user you are talking with. Before answering, call search_memory with "
    "the question to recall what you know about them. After each exchange in which the user told "
    "you something about themselves (a fact, a preference, a plan, a change), call record_turn "
    "with what they said, so the memory extracts and keeps the facts; call add_memory for one fact "
    "you want kept word for word. A repeat of a known fact is recognised and counted, not stored "
    "twice; an update is always kept. Use forget_memory when the user asks you to forget something."
)


ARGUMENTS_FIX = "correct the named arguments (their types, lengths and ranges are in the tool's input schema)"


class MemoryMCP(MCPServer):
    """The SDK's server, with the REST API's rules for a tool's arguments (module docstring)."""

    _arguments: dict[str, list[str]] | None = None

    async def list_tools(self) -> list[McpTool]:
        tools = await super().list_tools()
        return [
            tool.model_copy(update={"input_schema": {**tool.input_schema, "additionalProperties": False}})
            for tool in tools
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        if self._arguments is None:
            self._arguments = {
                t.name: list(t.input_schema.get("properties", {})) for t in await super().list_tools()
            }
        taken = self._arguments.get(name)
        unknown = sorted(set(arguments) - set(taken)) if taken is not None else []
        if taken is not None and unknown:
            shown = ", ".join(repr(a[:40]) for a in unknown[:5])
            raise ToolError(
                f"validation_error: {shown}: not an argument of {name} (it takes "
                f"{', '.join(taken) or 'none'}). Fix: {ARGUMENTS_FIX}"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):  # pydantic's text quotes the values sent
                raise ToolError(
                    f"validation_error: {field_problems(cause.errors())}. Fix: {ARGUMENTS_FIX}"
                ) from cause
            raise


async def _call(operation: Awaitable[T]) -> T:
    try:
        return await operation
    except ApiError as exc:
        raise ToolError(f"{exc.error}: {exc.detail}. Fix: {exc.fix}") from None


def build_mcp(service: MemoryService, config: ServerConfig, user_of: UserOf) -> MCPServer:
    f = fields(config)
    # WARNING: the SDK logs a failed call's message at INFO, and ours can quote the caller's text.
    mcp: MCPServer = MemoryMCP("memory-assets", instructions=INSTRUCTIONS, log_level="WARNING")

    @mcp.tool(
        name="add_memory",
        description=(
            'Keep one fact about the user, stated as a short third-person sentence ("Lives in '
            'Lisbon."), exactly as given. It is compared with what is already known: a word-for-word '
            "restatement is counted as a confirmation, anything else is written. Returns the fact's "
            "outcome (new, revision or confirmation)."
        ),
    )
    async def add_memory(
        text: Annotated[f.text, Field(description="the fact, one sentence")],  # type: ignore[valid-type]
        ctx: Context,
        category: Annotated[
            Category | None,
            Field(description="personal, preference, goal, context, technical or interaction"),
        ] = None,
        importance: Annotated[
            float, Field(ge=0, le=1, description="0-1; 0.7 or more also refreshes the core memory file")
        ] = 0.5,
    ) -> dict[str, Any]:
        answer, _ = await _call(
            service.add_memory(user_of(ctx), text, category=category, importance=importance)
        )
        return answer

    @mcp.tool(
        name="record_turn",
        description=(
            "Record one exchange of the conversation so the memory can extract the facts the user "
            "stated (only the user's words are a source of facts; the assistant's reply is context). "
            "Call it after each reply in which the user told you something about themselves. Returns "
            "each fact found with its outcome (new, revision, confirmation)."
        ),
    )
    async def record_turn(
        user: Annotated[f.said, Field(description="what the user said")],  # type: ignore[valid-type]
        ctx: Context,
        assistant: Annotated[f.optional_text, Field(description="what you answered")] = "",  # type: ignore[valid-type]
        chat_id: ChatId = "default",
        at: Annotated[IsoTime | None, Field(description="when it was said (ISO; default now)")] = None,
    ) -> dict[str, Any]:
        when: datetime | None = at  # type: ignore[assignment]  (validated into a datetime)
        answer, _ = await _call(service.record_turn(user_of(ctx), user, assistant, chat_id, when))
        return answer

    @mcp.tool(
        name="search_memory",
        description=(
            "Find what is known about the user that bears on a question or topic: the best "
            "matching facts and notes, best first, each with its source and date. Ask in plain "
            'words ("where does the user live?", "food allergies"); a question naming dates '
            '("last week", "in March") favours facts of those days.'
        ),
    )
    async def search_memory(
        query: Annotated[f.text, Field(description="the question or topic")],  # type: ignore[valid-type]
        ctx: Context,
        limit: Annotated[f.limit, Field(description="how many results")] = 10,  # type: ignore[valid-type]
        context: Annotated[f.context, Field(description="neighbouring lines to add to each result")] = 0,  # type: ignore[valid-type]
        since: Annotated[IsoDate | None, Field(description="only facts on or after this date")] = None,
        until: Annotated[IsoDate | None, Field(description="only facts on or before this date")] = None,
        source_types: Annotated[list[SourceType] | None, Field(max_length=SOURCE_TYPES)] = None,
    ) -> dict[str, Any]:
        try:  # the arguments' one translation into the core's filters: each keeps its name
            filters = SearchFilters(
                limit=limit,
                context=context,
                since=_day(since),
                until=_day(until),
                source_types=source_types,
            )
        except FilterError as exc:  # names the argument and the fix, never the value sent
            raise ToolError(f"validation_error: {exc.field}: {exc.problem}. Fix: {exc.fix}") from None
        hits = await _call(service.search(user_of(ctx), query, filters))
        return {"hits": hits}

    @mcp.tool(
        name="list_memories",
        description=(
            "List the user's memories, newest fact first, with where each comes from (file, date, "
            "conversation or section, how often it was stated). Pass next_cursor from one page to "
            "get the next; it is null on the last page."
        ),
    )
    async def list_memories(
        ctx: Context,
        cursor: Cursor | None = None,
        limit: Annotated[f.page_limit, Field(description="memories per page")] = 50,  # type: ignore[valid-type]
        source_types: Annotated[list[SourceType] | None, Field(max_length=SOURCE_TYPES)] = None,
        since: IsoDate | None = None,
        until: IsoDate | None = None,
    ) -> dict[str, Any]:
        return await _call(
            service.list_memories(
                user_of(ctx),
                cursor=cursor,
                limit=limit,
                source_types=source_types,
                since=_day(since),
                until=_day(until),
            )
        )

    @mcp.tool(
        name="forget_memory",
        description=(
            "Forget what the user asked you to forget: give a fact's full text as search_memory or "
            "list_memories showed it (every turn that holds it goes too), or the id of its result, "
            "or a whole chat (chat_id), or a day of talk (day, UTC). It stops being recalled at "
            "once; the history is kept, and unforget_memory brings it back."
        ),
    )
    async def forget_memory(
        ctx: Context,
        text: Annotated[f.text | None, Field(description="the fact's full text")] = None,  # type: ignore[valid-type]
        id: Annotated[RowId | None, Field(description="a result's id")] = None,
        chat_id: Annotated[ChatId | None, Field(description="forget this whole chat")] = None,
        day: Annotated[IsoDate | None, Field(description="forget every turn of this day (UTC)")] = None,
        force: Annotated[bool, Field(description="however much of the memory holds the text")] = False,
    ) -> dict[str, Any]:
        if sum(v is not None for v in (text, id, chat_id, day)) != 1:
            raise ToolError("invalid_arguments: give exactly one of text, id, chat_id and day")
        return await _call(
            service.forget(
                user_of(ctx), Target(text=text, row_id=id, chat=chat_id, day=_day(day)), force=force
            )
        )

    @mcp.tool(
        name="erase_memory",
        description=(
            "Erase the user's words for good, when the user asks for them to be deleted (not only "
            "forgotten): a text (found inside longer text too), a result's id, a whole chat "
            "(chat_id) or a day (day, UTC). Irreversible: first call it without confirm to see "
            "what would be removed, tell the user, and call it again with confirm true only once "
            "they agree. The answer is a receipt of every place changed."
        ),
    )
    async def erase_memory(
        ctx: Context,
        text: Annotated[f.text | None, Field(description="the text to erase")] = None,  # type: ignore[valid-type]
        id: Annotated[RowId | None, Field(description="a result's id")] = None,
        chat_id: Annotated[ChatId | None, Field(description="erase this whole chat")] = None,
        day: Annotated[IsoDate | None, Field(description="erase this day (UTC)")] = None,
        confirm: Annotated[bool, Field(description="true to erase; false: the plan only")] = False,
        force: Annotated[
            bool, Field(description="with confirm: however much of the memory holds it")
        ] = False,
    ) -> dict[str, Any]:
        if sum(v is not None for v in (text, id, chat_id, day)) != 1:
            raise ToolError("invalid_arguments: give exactly one of text, id, chat_id and day")
        if force and not confirm:
            raise ToolError("invalid_arguments: force goes with confirm true; ask without either first")
        target = Target(text=text, row_id=id, chat=chat_id, day=_day(day))
        erasing = service.erase(user_of(ctx), target, confirm=confirm, force=force)
        return await _call(erasing)

    @mcp.tool(
        name="unforget_memory",
        description=(
            "Bring back what was forgotten earlier: the text exactly as it was forgotten, or the "
            "chat_id or day a chat or a day of talk was forgotten by."
        ),
    )
    async def unforget_memory(
        ctx: Context,
        text: Annotated[f.text | None, Field(description="the forgotten fact's text")] = None,  # type: ignore[valid-type]
        chat_id: Annotated[ChatId | None, Field(description="a chat forgotten whole")] = None,
        day: Annotated[IsoDate | None, Field(description="a day of talk forgotten")] = None,
    ) -> dict[str, Any]:
        if sum(v is not None for v in (text, chat_id, day)) != 1:
            raise ToolError("invalid_arguments: give exactly one of text, chat_id and day")
        return await _call(service.unforget(user_of(ctx), text, chat=chat_id, day=_day(day)))

    @mcp.tool(
        name="memory_status",
        description=(
            "What the user's memory holds: days of conversation logged, notes consolidated, rows "
            "indexed, what is pending consolidation."
        ),
    )
    async def memory_status(ctx: Context) -> dict[str, Any]:
        return await _call(service.status(user_of(ctx)))

    return mcp


def _day(value: object) -> date | None:
    return value if isinstance(value, date) else None
