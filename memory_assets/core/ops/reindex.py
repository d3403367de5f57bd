"""Reindexing a home's files on request, each with the comparison that proves it (what the Dagster
index assets run; the homes' upkeep catches up through ``upkeep/home_upkeep.py``).

* ``reindex_day``: one day's log diffed against the table by the home's indexer, then
  ``day_rows``: the day's stored row ids compared with the ids of the plan it applied;
* ``reindex_days``: the days named, each as ``reindex_day``, summed as one sweep (its ``rows`` the
  table's row count after them);
* ``reindex_every_day``: every daily log of the home, then the audit's ``rows_match_logs`` over the
  whole table;
* ``transcript_rows``: after a reindex of transcripts, the audit's ``rows_match_transcripts`` over
  the files it wrote.

Each reindex is a diff (only changed lines are embedded); the comparison reads the table after
it. The home must be initialised (``Home.ready``).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from memory_assets.core.audit.checks import rows_match_logs, rows_match_transcripts
from memory_assets.core.home import Home
from memory_assets.core.index.indexer import FileResult, SweepResult
from memory_assets.core.outcome import CheckOutcome
from memory_assets.core.sources import ARCHIVE, IndexKey


@dataclass
class DayRows:
    """One day's reindex, and the day's stored rows compared with the plan it applied."""

    day: date
    result: FileResult
    expected: int
    """The rows the plan holds."""
    stored: int
    """The rows the table holds for the day's log now."""
    missing: int
    """Planned rows the table does not hold."""
    unexpected: int
    """Rows the table holds that the plan does not."""

    @property
    def matches(self) -> bool:
        return not self.missing and not self.unexpected


def reindex_day(home: Home, day: date) -> DayRows:
    """``day``'s log reindexed, and its rows compared with the plan (``day_rows``)."""
    return day_rows(home, day, home.indexer.reindex_day(day))


def day_rows(home: Home, day: date, result: FileResult) -> DayRows:
    """``day``'s rows in the table now compared with the plan ``result`` (its reindex) applied."""
    stored = home.store.ids(ARCHIVE, IndexKey.for_day(day).filename)
    expected = set(result.expected_ids)
    return DayRows(day, result, len(expected), len(stored), len(expected - stored), len(stored - expected))


def reindex_days(home: Home, days: Iterable[date]) -> tuple[SweepResult, list[DayRows]]:
    """Each of ``days`` as ``reindex_day``, in order, and their results as one sweep."""
    sweep = SweepResult()
    found = []
    for day in days:
        rows = reindex_day(home, day)
        sweep.add(rows.result)
        found.append(rows)
    sweep.rows, sweep.seconds = home.store.count(), sum(f.seconds for f in sweep.files)
    return sweep, found


def reindex_every_day(home: Home) -> tuple[SweepResult, CheckOutcome]:
    """Every daily log of the home reindexed, and ``rows_match_logs`` over the table after it."""
    sweep = home.indexer.reindex_files(labels=["archive"])
    return sweep, rows_match_logs(home.settings, home.store)


def transcript_rows(home: Home, sweep: SweepResult) -> CheckOutcome:
    """``rows_match_transcripts`` over the transcripts ``sweep`` (a reindex) wrote, against the
    table now."""
    files = [IndexKey.parse(f.key).filename for f in sweep.files]
    return rows_match_transcripts(home.settings, home.store, files=files)
