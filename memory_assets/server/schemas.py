"""What a request may hold: the fields of the REST bodies and the MCP tools' arguments.

Built from the server's limits (``ServerConfig``), so the OpenAPI document and the tools' JSON
schemas state the real bounds. Every model refuses unknown fields and wrong types (strict: a
number is not a string, ``"5"`` is not a number), so such a request is a 422 naming the field.
Text fields have a length bound and refuse NUL characters; what a user said must hold more
than whitespace. Dates are ISO dates written out (``YYYY-MM-DD``; the basic form ``20261206``
is refused, it reads too easily as something else); a turn's time is an ISO date-time (UTC when
it has no offset), read by the core's own rule (``turn_time``).

The time window: a turn's ``at`` and a search's ``today`` fall between ``EARLIEST`` (2000-01-01,
UTC) and a day past now (``FUTURE_SLACK``, the transcripts' own allowance for two machines'
clocks). A date outside it is a mistake a client makes (a zero date, a year typed wrong, a
timestamp read in the wrong unit), and writing it would open a daily log for that day; ``since``,
``until`` and a forgotten ``day`` only filter, and take any date of the years 1-9999.
"""

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from memory_assets.core.capture.transcripts import FUTURE_SLACK
from memory_assets.core.ops.write import turn_time
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.text import clean_text
from memory_assets.server.config import ServerConfig

AT_FORMAT = "YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][+HH:MM]"
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})?)?"
)
PAGE_LIMIT_CAP = 100
CURSOR_CHARS = 512
CHAT_ID_CHARS = 200


# Literals, not enums: a strict model takes a JSON string for them (an enum would want an instance).
# They spell the core's names (core/sources.py, core/knowledge/categories.py); a test keeps them equal.
SourceType = Literal["archive_log", "notebook", "core_file", "transcript", "legacy_direct"]
SOURCE_TYPES = 5  # how many there are: a filter lists at most that many
Category = Literal["personal", "preference", "goal", "context", "technical", "interaction", "general"]


def no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain a NUL character (U+0000)")
    return value


def said(value: str) -> str:
    """What a user said: more than whitespace (and control characters, which are kept as spaces)."""
    if not clean_text(value).strip():
        raise ValueError("holds only whitespace; give what was said (at least one visible character)")
    return value


def iso_date(value: str) -> date:
    if _DATE.fullmatch(value) is None:
        raise ValueError("is not an ISO date written YYYY-MM-DD (e.g. 2026-12-06)")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError("is not a date of the calendar (YYYY-MM-DD)") from None


def window() -> str:
    """The time window a turn's time and a search's day must fall in, as the errors name it."""
    latest = (datetime.now(UTC) + FUTURE_SLACK).date()
    return f"from {EARLIEST.date()} to {latest} (UTC; a day past today at most)"


def in_window(value: datetime) -> datetime:
    if not EARLIEST <= value <= datetime.now(UTC) + FUTURE_SLACK:
        raise ValueError(f"is outside the window this server accepts: give a time {window()}")
    return value


def iso_time(value: str) -> datetime:
    if _DATE_TIME.fullmatch(value) is None:
        raise ValueError(f"is not an ISO date-time ({AT_FORMAT})")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"is not a date-time of the calendar ({AT_FORMAT})") from None
    return in_window(turn_time(parsed))  # turn_time's ValueError names the years 1-9999 in UTC


def recent_day(value: date) -> date:
    """A search's ``today``: a day within the window (relative dates are counted from it)."""
    if not EARLIEST.date() <= value <= (datetime.now(UTC) + FUTURE_SLACK).date():
        raise ValueError(f"is outside the window this server accepts: give a day {window()}")
    return value


IsoDate = Annotated[
    str,
    Field(max_length=10, json_schema_extra={"format": "date"}, description="YYYY-MM-DD"),
    AfterValidator(iso_date),
]
Today = Annotated[
    str,
    Field(
        max_length=10, json_schema_extra={"format": "date"}, description="YYYY-MM-DD, 2000-01-01 to tomorrow"
    ),
    AfterValidator(iso_date),
    AfterValidator(recent_day),
]
IsoTime = Annotated[
    str,
    Field(max_length=40, json_schema_extra={"format": "date-time"}, description=AT_FORMAT),
    AfterValidator(iso_time),
]
ChatId = Annotated[
    str,
    Field(min_length=1, max_length=CHAT_ID_CHARS, description="the conversation's id"),
    AfterValidator(no_nul),
]
RowId = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(no_nul)]
Cursor = Annotated[str, Field(min_length=1, max_length=CURSOR_CHARS), AfterValidator(no_nul)]


@dataclass(frozen=True)
class Fields:
    """The bounded field types of one server (its limits baked in)."""

    text: Any  # a text field: 1..max_text_chars characters, no NUL
    said: Any  # what a user said: a text holding more than whitespace
    optional_text: Any  # the same, may be empty
    limit: Any  # a search's limit: 1..max_search_limit
    context: Any  # neighbouring lines: 0..max_context
    page_limit: Any  # a page of the memory list: 1..100


def fields(config: ServerConfig) -> Fields:
    n = config.max_text_chars
    return Fields(
        text=Annotated[str, Field(min_length=1, max_length=n), AfterValidator(no_nul)],
        said=Annotated[str, Field(min_length=1, max_length=n), AfterValidator(no_nul), AfterValidator(said)],
        optional_text=Annotated[str, Field(max_length=n), AfterValidator(no_nul)],
        limit=Annotated[int, Field(ge=1, le=config.max_search_limit)],
        context=Annotated[int, Field(ge=0, le=config.max_context)],
        page_limit=Annotated[int, Field(ge=1, le=PAGE_LIMIT_CAP)],
    )


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


@dataclass(frozen=True)
class Bodies:
    turn: type[BaseModel]
    memory: type[BaseModel]
    search: type[BaseModel]
    text: type[BaseModel]
    erase: type[BaseModel]


def bodies(config: ServerConfig) -> Bodies:
    """The request bodies of the REST routes, bounded by ``config``."""
    f = fields(config)

    class TurnIn(Strict):
        """One conversation turn: what the user said, and what the assistant answered (context only)."""

        user: f.said  # type: ignore[valid-type]
        assistant: f.optional_text = ""  # type: ignore[valid-type]
        chat_id: ChatId = "default"
        at: IsoTime | None = None

    class MemoryIn(Strict):
        """One fact, put through the classifier with no extraction."""

        text: f.text  # type: ignore[valid-type]
        category: Category | None = None
        importance: Annotated[float, Field(ge=0, le=1)] = 0.5
        chat_id: ChatId = "default"
        at: IsoTime | None = None

    class SearchIn(Strict):
        """A hybrid search of the user's memory: the query, and the filters (``SearchFilters``)."""

        query: f.text  # type: ignore[valid-type]
        limit: f.limit = 10  # type: ignore[valid-type]
        context: f.context = 0  # type: ignore[valid-type]
        since: IsoDate | None = None
        until: IsoDate | None = None
        source_types: Annotated[list[SourceType], Field(max_length=SOURCE_TYPES)] | None = None
        # The day relative dates in the query ("last week") and the recency of facts are measured
        # from (default: today, UTC): a replayed conversation asks as of its own day.
        today: Today | None = None

        @model_validator(mode="after")
        def checked(self) -> "SearchIn":
            self.filters()  # the core's own rules (since on or before until), a 422 naming the field
            return self

        def filters(self) -> SearchFilters:
            """The body's one translation into the core's filters: each field keeps its name
            (limit, context, since, until, source_types, today); the query stays apart."""
            return SearchFilters(
                limit=self.limit,
                context=self.context,
                since=self.since,  # type: ignore[arg-type]  (validated into a date)
                until=self.until,  # type: ignore[arg-type]
                source_types=self.source_types,
                today=self.today,  # type: ignore[arg-type]
            )

    class TextIn(Strict):
        """What to forget (or bring back): a fact's text (matched whole, case and spacing aside;
        every turn holding it goes too), or a whole chat (``chat_id``), or a day of talk (``day``,
        UTC) with the facts written from it. Exactly one."""

        text: f.text | None = None  # type: ignore[valid-type]
        chat_id: ChatId | None = None
        day: IsoDate | None = None
        # forget: hide the text however much of the home holds it (more than MEMORY_FORGET_MAX_SHARE)
        force: bool = False

        @model_validator(mode="after")
        def one_of(self) -> "TextIn":
            given = [n for n in ("text", "chat_id", "day") if getattr(self, n) is not None]
            if len(given) != 1:
                raise ValueError(
                    f"give exactly one of text, chat_id and day (got {', '.join(given) or 'none'})"
                )
            return self

    class EraseIn(Strict):
        """What to erase, irreversibly: a text (found inside longer text too, case and spacing
        aside), a row by ``id`` (a turn's row: the whole turn), a whole chat (``chat_id``), or a day
        (``day``, UTC: its log, its turns and their facts). Exactly one. Without ``"confirm": true``
        nothing is changed: the answer is the plan. ``force`` (with confirm): erase a text however
        much of the home holds it."""

        text: f.text | None = None  # type: ignore[valid-type]
        id: RowId | None = None
        chat_id: ChatId | None = None
        day: IsoDate | None = None
        confirm: bool = False
        force: bool = False

        @model_validator(mode="after")
        def one_of(self) -> "EraseIn":
            given = [n for n in ("text", "id", "chat_id", "day") if getattr(self, n) is not None]
            if len(given) != 1:
                raise ValueError(
                    f"give exactly one of text, id, chat_id and day (got {', '.join(given) or 'none'})"
                )
            if self.force and not self.confirm:
                raise ValueError("force goes with confirm: true; ask without either first to see the plan")
            return self

    return Bodies(TurnIn, MemoryIn, SearchIn, TextIn, EraseIn)
