"""The index's questions of one home, asked alike by the look at a home (``look.py``) and the
single home's sensors:

* ``IndexScan``: which days and which files the index is behind on and due a request now
  (``core/index/freshness.py``: freshness, not change; retries with backoff), asked with one
  indexer that never loads the model, so the two questions share its read caches; a home's days
  have no bounds (every daily log, every day the index state holds);
* ``table_look``: whether the table is due an optimize, the maintenance clock's reasons
  (``core/index/maintenance.py``) against the table as it is now; a table in the assistant's
  format is migrated before it is optimised, so it has none.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from memory_assets.core.home import Home
from memory_assets.core.index import freshness
from memory_assets.core.index.freshness import (
    FILE_GROUPS,
    Cursor,
    DayScan,
    FileScan,
    RunState,
    stale_days,
    stale_files,
)
from memory_assets.core.index.maintenance import MaintenanceClock
from memory_assets.core.index.store import TableStats

RunStates = Callable[[str], RunState]
"""``run_key -> RunState``: what the orchestrator knows of an earlier request's run."""


class IndexScan:
    """The index's questions of one home: which days and which files the index is behind on and
    due a request now (``freshness``), asked with one indexer that never loads the model, so the
    two questions share its read caches."""

    def __init__(self, home: Home) -> None:
        self._indexer = home.indexer_without_embedder()

    def days(self, cursor: Cursor, run_state: RunStates, *, state: dict[str, str] | None = None) -> DayScan:
        """Every day's log (a home's days have no bounds) and every day the index state holds,
        as ``freshness.stale_days`` answers; the requests recorded in ``cursor``."""
        return stale_days(self._indexer, cursor, run_state, date.min, date.max, state=state)

    def files(
        self,
        cursor: Cursor,
        run_state: RunStates,
        groups: tuple[str, ...] = FILE_GROUPS,
        *,
        state: dict[str, str] | None = None,
    ) -> FileScan:
        """The vault pages, core files and transcripts of ``groups``, as ``freshness.stale_files``
        answers (the caller records the requests it makes)."""
        return stale_files(self._indexer, cursor, run_state, groups, state=state)


@dataclass
class TableLook:
    """The home's table as the maintenance clock finds it now."""

    stats: TableStats | None
    """The table's statistics (None: no table yet)."""
    reasons: list[str]
    """Why an optimize is due now (none for a table in the assistant's format: it is migrated first)."""
    now: float
    """When it was asked (``freshness.clock``)."""


def table_look(home: Home, clock: MaintenanceClock) -> TableLook:
    """Whether ``home``'s table is due an optimize against ``clock`` (``MaintenanceClock.reasons``),
    asked of the table as it is now; the clock is not moved."""
    now = freshness.clock()
    store = home.store
    if not store.exists():
        return TableLook(None, [], now)
    stats = store.stats()
    return TableLook(stats, [] if stats.legacy else clock.reasons(stats, now), now)
