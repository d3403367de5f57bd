"""``look_at``: what one home needs, found from its files, its persisted state and the planner's
``LookState``, with no table opened unless its directory cannot answer.

A look asks, in order:

* its daily logs (``freshness.stale_days``) and its vault pages, core files and transcripts
  (``freshness.stale_files``): the index keys the index is behind on (the catch-up), and the logs
  that grew;
* its transcripts (``transcripts_look``): a session the write path is behind on;
* its dream (``dream_pacing``, from the home's own persisted state): a batch to ingest or skip,
  or a lint due; its hand-off (``handoff_pending``): lines to retire;
* its dedup measurement (``work.dedup_due_today``): the index changed since an earlier day's;
* its table (``MaintenanceClock``, at most every ``maintenance.CHECK_EVERY_S``): an optimize; an
  upkeep that optimised the table since (its ``Outcome``) moves the clock first;
* its last upkeep's outcome: the failed steps, tried again.

What it finds is a ``Look``: the ``Work`` (the hints an upkeep is given, ``work.py``) and what the
look saw on the way (the days that grew, the groups of files with a request in flight, the dream's
decision, whether the table holds legacy rows), so a face can say what has nothing to do.

The stale days, files and the session behind are recorded in the state's cursors as requested
(a day under its own run key, the rest under ``run_key``: the run that will do them), and
``run_state`` tells of those runs, so a file is asked for again only once its run ended and the
backoff passed. A caller that does nothing
with the look (a dry run) does not keep the state.

No table is opened unless the table directory cannot answer (``core/index/table_directory.py``):
the index state is loaded against the table id the state keeps under the directory's key, and the
optimize check reads the directory's bounds first (``MaintenanceClock.ruled_out``).

The single home's sensors ask the same questions with the same functions: ``transcripts_look``
(the transcripts sensor), ``dream_pacing`` (the dream sensor), ``table_look`` (the index
maintenance sensor) and ``IndexScan`` (the index sensors), both in ``index_look.py``.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime

from memory_assets.core.dream.pacing import IDLE, Decision, decide
from memory_assets.core.home import Home
from memory_assets.core.index.freshness import FILE_GROUPS, Cursor, DayScan, Freshness
from memory_assets.core.index.maintenance import MaintenanceClock
from memory_assets.core.index.table_directory import bounds, index_state
from memory_assets.core.knowledge.dream_state import DreamState, load_dream_state
from memory_assets.core.ops.upkeep.index_look import IndexScan, RunStates
from memory_assets.core.ops.upkeep.look_state import LookState
from memory_assets.core.ops.upkeep.outcomes import Outcome
from memory_assets.core.ops.upkeep.work import STEPS, Work, dedup_due_today
from memory_assets.core.reconcile import handoff_pending
from memory_assets.core.settings import Settings
from memory_assets.core.sources import IndexKey
from memory_assets.core.write_path.ingest import sessions_behind

ALL_SESSIONS = "transcripts:*"
"""The one freshness key of the write path over a home's transcripts."""


@dataclass
class Transcripts:
    """The write path's progress over a home's transcripts, as a look found it."""

    behind: list[str]
    """The sessions whose transcript is longer than the write path has ingested."""
    current: bool
    """Every turn has been through the write path (and none is pending)."""
    attempt: int | None
    """The attempt to request now (None: current, a request in flight, or backing off)."""
    freshness: Freshness

    def request(self, run_key: str) -> None:
        """The write path requested now under ``run_key`` (``attempt`` is not None)."""
        assert self.attempt is not None
        self.freshness.requested(ALL_SESSIONS, None, run_key, self.attempt)


def transcripts_look(settings: Settings, cursor: Cursor, run_state: RunStates) -> Transcripts:
    """Whether the write path is behind on ``settings``' transcripts, and the attempt due now."""
    behind, recorded = sessions_behind(settings)
    fresh = Freshness(cursor, {ALL_SESSIONS: recorded} if recorded != "-" else {}, run_state)
    if fresh.up_to_date(ALL_SESSIONS, None):
        return Transcripts(behind, True, None, fresh)
    return Transcripts(behind, False, fresh.due(ALL_SESSIONS, None), fresh)


def dream_pacing(
    settings: Settings, now: datetime | None = None, *, force: bool = False
) -> tuple[DreamState, Decision]:
    """The home's persisted dream state and the pacing's decision from it (never in-memory
    counters: a restarted process decides as a running one); ``force``: past the time and fact
    gates, as ``decide`` states."""
    state = load_dream_state(settings.dream_state_path, settings.log_md)
    return state, decide(settings, state, now=now or datetime.now(UTC), force=force)


@dataclass
class Look:
    """What one home needs (``work``), and what the look saw on the way."""

    work: Work = field(default_factory=Work)
    days: DayScan = field(default_factory=DayScan)
    """The daily logs: stale (their keys are in ``work.keys``), grown, current."""
    days_in_flight: bool = False
    """A day's request is in flight (this look's, or an earlier one's still running or backing off)."""
    files: dict[str, list[str]] = field(default_factory=dict)
    """Per group (``notebook``, ``core``, ``transcript``), the stale keys requested now."""
    files_in_flight: set[str] = field(default_factory=set)
    """The groups with a request in flight from an earlier look."""
    transcripts: Transcripts | None = None
    """The write path's progress (None: the home has no transcripts folder)."""
    dream: Decision | None = None
    legacy_rows: bool | None = None
    """Whether the table holds rows in the assistant's format (None: not asked this look)."""
    pending: bool = False
    """Requests of this home are in flight: look again after the backoff."""

    @property
    def needs(self) -> bool:
        return bool(self.work)

    def lines(self) -> list[str]:
        """What the home needs, a line a step (``nothing to do`` when it needs nothing)."""
        work, out = self.work, []
        if work.ingest:
            behind = self.transcripts.behind if self.transcripts is not None else []
            out.append(f"ingest: the write path is behind on {', '.join(behind) or 'a pending turn'}")
        if work.keys:
            shown = ", ".join(work.keys[:8]) + (
                f", ... ({len(work.keys)} in all)" if len(work.keys) > 8 else ""
            )
            out.append(f"index: the index is behind on {shown}")
        if work.dream and self.dream is not None:
            out.append(f"dream: {self.dream.kind}: {self.dream.reason}")
        if work.reconcile:
            out.append("reconcile: the dream's hand-off holds lines to retire")
        if work.dedup:
            out.append("dedup: the day's measurement (the index changed since the last)")
        if work.optimize:
            out.append(f"optimize: {'; '.join(work.optimize)}")
        if work.retry:
            out.append(f"retry: the last upkeep's failed step(s) {', '.join(work.retry)}")
        return out or ["nothing to do"]

    def to_dict(self) -> dict[str, object]:
        """The look as plain data (the CLI's ``--json``)."""
        return {
            "needs": self.needs,
            "work": self.work.to_dict(),
            "days_grown": [g.day.isoformat() for g in self.days.grown],
            "sessions_behind": self.transcripts.behind if self.transcripts is not None else [],
            "dream": self.dream.to_dict() if self.dream is not None else None,
            "legacy_rows": self.legacy_rows,
            "pending": self.pending,
        }

    def without_words(self) -> dict[str, object]:
        """``to_dict`` with no person's words in it, for a face that answers beyond the home's
        own person (the service's admin): ids, index keys (file names), days, counts and the
        core's own reasons. The dream's ``reason`` is left out: it may quote a failed attempt's
        error, which may quote a text."""
        out = self.to_dict()
        if self.dream is not None:
            out["dream"] = {k: v for k, v in self.dream.to_dict().items() if k != "reason"}
        return out


def look_at(
    home: Home,
    state: LookState,
    run_state: RunStates,
    *,
    run_key: str,
    outcome: Outcome | None = None,
    now: float,
) -> Look:
    """What ``home`` needs (see the module docstring). ``state`` is brought forward (the caller
    keeps it, or not); ``run_state`` tells ``freshness`` about earlier requests' runs; ``run_key``
    names the run this look's requests go to; ``outcome``: the home's last upkeep, if recorded."""
    settings = home.settings
    scan = IndexScan(home)
    look = Look()
    work = look.work
    clock = state.clock
    check = clock.check_due(now)
    held = bounds(home.store) if check else None
    open_table = check and not clock.ruled_out(held, now)
    index, state.table, _ = index_state(
        home.store, settings.index_state_path, state.table, now, verify=open_table
    )

    look.days = scan.days(state.days, run_state, state=index.files)
    look.days_in_flight = bool(state.days.pending)
    work.keys += [str(IndexKey.for_day(s.day)) for s in look.days.stale]

    fscan = scan.files(state.files, run_state, state=index.files)
    look.files_in_flight = {IndexKey.parse(key).group for key in state.files.pending}
    for group, due in zip(FILE_GROUPS, (fscan.pages, fscan.core_files, fscan.transcripts), strict=True):
        look.files[group] = [f.key for f in due]
        work.keys += look.files[group]
        for f in due:
            fscan.freshness.requested(f.key, f.digest, run_key, f.attempt)

    if settings.transcripts_dir.is_dir():
        look.transcripts = transcripts_look(settings, state.transcripts, run_state)
        if look.transcripts.attempt is not None:
            look.transcripts.request(run_key)
            work.ingest = True
    _, look.dream = dream_pacing(settings)
    work.dream = look.dream.kind != IDLE
    work.reconcile = handoff_pending(settings)
    work.dedup = dedup_due_today(settings)

    if outcome is not None and outcome.optimized_at > clock.optimized_at:  # an upkeep optimised it since
        clock.optimized(outcome.optimized_version, outcome.optimized_at)
    if open_table:
        _table(home, look, clock, now)
    elif check:  # ruled out by the directory: what the check would find, no table opened
        clock.checked_at = now
        if held is not None and (not held.exists or index.table is not None):  # none, or not legacy
            look.legacy_rows = False
    if outcome is not None and not outcome.ok and outcome.failed:  # a failed upkeep, due again
        work.retry = sorted(s for s in outcome.failed if s in STEPS)
    look.pending = bool(state.days.pending or state.files.pending or state.transcripts.pending)
    return look


def _table(home: Home, look: Look, clock: MaintenanceClock, now: float) -> None:
    """The table asked (the check due and not ruled out by its directory)."""
    store = home.store
    if not store.exists():
        clock.checked_at, look.legacy_rows = now, False
        return
    stats = store.stats()
    look.legacy_rows = stats.legacy
    if stats.legacy:  # migrated first (``memory-assets migrate``): no optimize asked
        clock.checked_at = now
        return
    look.work.optimize = clock.look(stats, now)
