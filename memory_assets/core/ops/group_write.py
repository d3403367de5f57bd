"""A home held open for writing, which takes its turns and memories in groups.

For a process that keeps a home open and writes what arrives for it in arrival order (the memory
service's write lane): ``GroupWriter`` chooses the home's extractor once (``make_extractor``: the
chat model when ``MEMORY_LLM_URL`` is set, else the rules) and ``write`` puts a group of
``Pending`` writes through the write path as one write (``process_turns``: each turn kept and
appended durably in order, then every day it wrote reindexed once), with the home's store and the
write path's embedder (``Home.write_path_embedder``: loaded now, or None when the model cannot
load, so a write never waits on it or fails for it).

The group's transcripts' rows are left out of that write (``index_transcripts=False``): the
caller acknowledges each turn first and writes them after. A
``Pending`` write is a value: a turn said (its facts extracted by the home's extractor) or a
memory (``Pending.memory``: its one fact given, no extraction).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory_assets.core.home import Home
from memory_assets.core.write_path.extraction import Extractor, Turn
from memory_assets.core.write_path.extractor_choice import make_extractor
from memory_assets.core.write_path.process import TurnResult, process_turns
from memory_assets.core.write_path.remember import DEFAULT_IMPORTANCE, memory_turn


@dataclass(frozen=True)
class Pending:
    """One write waiting for its group: the turn, and the extractor that states its facts (None:
    the home's own)."""

    turn: Turn
    facts: Extractor | None = None

    @classmethod
    def said(
        cls, user: str, assistant: str = "", chat_id: str = "default", at: datetime | None = None
    ) -> "Pending":
        """A conversation turn (what the user said, what the assistant answered, its chat and time;
        None: now), its facts extracted by the home's extractor."""
        return cls(Turn(user, assistant, chat_id, at))

    @classmethod
    def memory(
        cls,
        text: str,
        *,
        category: str | None = None,
        importance: float = DEFAULT_IMPORTANCE,
        chat_id: str = "default",
        at: datetime | None = None,
    ) -> "Pending":
        """``text`` as one fact put through the classifier, no extraction (``ValueError`` for no
        words or an importance outside [0, 1], before anything is written)."""
        turn, given = memory_turn(text, category=category, importance=importance, chat_id=chat_id, at=at)
        return cls(turn, given)


class GroupWriter:
    """One open home's writes in groups (see the module docstring)."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.extractor = make_extractor(home.settings)

    def write(
        self,
        group: Sequence[Pending],
        on_written: Sequence[Callable[[TurnResult], None] | None] | None = None,
    ) -> list[TurnResult | Exception]:
        """Each write's result in order, or the exception that refused it (nothing of it kept; the
        others go on). ``on_written[i]``, when given, is called with the ``i``-th result as soon as
        it is appended, before the reindex (``process_turns``)."""
        home = self.home
        return process_turns(
            [(p.turn, p.facts or self.extractor) for p in group],
            home.settings,
            store=home.store,
            embedder=home.write_path_embedder(),
            index_transcripts=False,
            on_written=on_written,
        )
