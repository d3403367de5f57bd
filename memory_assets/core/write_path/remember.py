"""``remember``: one fact put straight through the classifier, with no extraction.

What ``memory-assets remember``, the server's ``POST /v1/users/{id}/memories`` and the MCP tool
``add_memory`` do: the text (whitespace collapsed; it must hold a word, a letter or a digit) is the fact, with the category given
(``general`` when none is) and an importance in [0, 1]; it is classified against the known facts
like any extracted fact, so a word-for-word restatement of a recorded fact is a confirmation and
anything else is written to the day's log (design §5.6).

``memory_turn`` builds the turn and its extractor (``GivenFacts``), for a caller that writes
several turns at once (``process_turns``); ``remember`` writes one now.
"""

import math
from datetime import datetime

from memory_assets.core.index.store import MemoryStore
from memory_assets.core.models.embedder import TextEmbedder
from memory_assets.core.settings import Settings
from memory_assets.core.text import has_words
from memory_assets.core.write_path.extraction import ExtractedFact, GivenFacts, Turn
from memory_assets.core.write_path.process import TurnResult, process_turn

DEFAULT_CATEGORY = "general"
DEFAULT_IMPORTANCE = 0.5


def memory_turn(
    text: str,
    *,
    category: str | None = None,
    importance: float = DEFAULT_IMPORTANCE,
    chat_id: str = "default",
    at: datetime | None = None,
) -> tuple[Turn, GivenFacts]:
    """The turn that states ``text`` and the extractor that returns it as the one fact. A text with
    no words, or an importance outside [0, 1], is a ``ValueError`` naming the fix."""
    fact = " ".join(text.split())
    if not has_words(fact):
        raise ValueError(
            "text: a memory needs at least one word (a letter or a digit); punctuation, symbols and "
            "spaces alone state nothing: give the fact as a sentence"
        )
    if not (isinstance(importance, int | float) and math.isfinite(importance) and 0 <= importance <= 1):
        raise ValueError(f"importance {importance!r} is not a number from 0 to 1; give one (default 0.5)")
    given = ExtractedFact(fact, category or DEFAULT_CATEGORY, importance=float(importance))
    return Turn(text, chat_id=chat_id, at=at, keep=False), GivenFacts([given])


def remember(
    text: str,
    settings: Settings,
    *,
    category: str | None = None,
    importance: float = DEFAULT_IMPORTANCE,
    chat_id: str = "default",
    at: datetime | None = None,
    store: MemoryStore | None = None,
    embedder: TextEmbedder | None = None,
) -> TurnResult:
    """Write one fact through the classifier now (``process_turn`` with the fact given)."""
    turn, extractor = memory_turn(text, category=category, importance=importance, chat_id=chat_id, at=at)
    return process_turn(turn, settings, extractor=extractor, store=store, embedder=embedder)
