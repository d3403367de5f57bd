"""A home's writes as a face asks for them, one call each over a ``Home``.

* ``write_turn``: a conversation turn through the write path (``process_turn``);
* ``add_memory``: one fact through the classifier, no extraction (``remember``);
* ``ingest``: the transcripts' user turns the write path has not read yet (``ingest_transcripts``);
* ``turn_time``: a turn's time as a face reads it (an ``--at``, a request's ``at``).

Each writes with the home's store, the configured extractor (``make_extractor``: the chat model
when ``MEMORY_LLM_URL`` is set, else the rules) and the write path's embedder
(``Home.write_path_embedder``: loaded now, or None when the model cannot load, so a write never
waits on it or fails for it; design §7 invariant 5). The results are the write path's own.
"""

from datetime import UTC, datetime

from memory_assets.core.home import Home
from memory_assets.core.write_path.extraction import Turn
from memory_assets.core.write_path.extractor_choice import make_extractor
from memory_assets.core.write_path.ingest import IngestResult, ingest_transcripts
from memory_assets.core.write_path.process import TurnResult, process_turn
from memory_assets.core.write_path.remember import DEFAULT_IMPORTANCE, remember


def write_turn(
    home: Home, user: str, assistant: str = "", chat_id: str = "default", at: datetime | None = None
) -> TurnResult:
    """The turn (what the user said, what the assistant answered, its chat and time; None: now)
    kept, its facts extracted, classified, appended and reindexed."""
    return process_turn(
        Turn(user, assistant, chat_id, at),
        home.settings,
        extractor=make_extractor(home.settings),
        store=home.store,
        embedder=home.write_path_embedder(),
    )


def add_memory(
    home: Home,
    text: str,
    *,
    category: str | None = None,
    importance: float = DEFAULT_IMPORTANCE,
    chat_id: str = "default",
    at: datetime | None = None,
) -> TurnResult:
    """``text`` written as one fact through the classifier (``ValueError`` for no words or an
    importance outside [0, 1])."""
    return remember(
        text,
        home.settings,
        category=category,
        importance=importance,
        chat_id=chat_id,
        at=at,
        store=home.store,
        embedder=home.write_path_embedder(),
    )


def ingest(home: Home, sessions: set[str] | None = None, limit: int | None = None) -> IngestResult:
    """Every user turn of the home's transcripts (``sessions``: only those; ``limit``: at most that
    many turns) not yet through the write path, put through it exactly once."""
    return ingest_transcripts(
        home.settings,
        make_extractor(home.settings),
        store=home.store,
        embedder=home.write_path_embedder(),
        sessions=sessions,
        limit=limit,
    )


def turn_time(value: datetime) -> datetime:
    """A turn's time as given (an ISO date-time read by a face): UTC when it has no offset. Its UTC
    time picks the day's log, so it must fall in the years 1-9999 in UTC; a ``ValueError`` names
    the range otherwise (a far offset on 0001-01-01 or 9999-12-31 leaves it)."""
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(
            f"{value.isoformat()} is outside the years 1-9999 in UTC; give a date-time from "
            "0001-01-01 to 9999-12-31 in UTC"
        ) from None
