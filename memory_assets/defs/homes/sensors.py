"""Many homes (``MEMORY_ROOT``): one sensor keeps every home under the root current, doing work
proportional to the homes that changed, not to all homes (design §11.3).

Each tick, ``homes_sensor`` looks at:

* **homes that appeared**: the root's ``users/`` directory is stat'ed; only when it changed is it
  listed, and the homes not yet registered become partitions of ``users`` and are looked at;
* **homes that went** (a user deleted: ``core/ops/delete_user.py``), seen by the same listing:
  the user's partition key is deleted and every entry of the cursor naming the user (the queue,
  the homes due again, the open batch); their state at the root went with the deletion. A
  deletion cut short (its journal beside the homes) is warned of, with the command that finishes it;
* **homes that changed**: the root's change feed (``core/ops/root_feed.py``) from the tick's
  cursor on, where the memory service notes every write of a user; and the users of the runs
  that ended since the last tick (a dream moved a watermark, a reconcile wrote tombstones);
* **homes with a request in flight** whose time to be asked again has come (a run lost or
  failed: the backoff of ``core/index/freshness.py``);
* **a slice of every home** (``MEMORY_HOMES_SWEEP_PER_TICK``, round robin): what the feed cannot
  see (an assistant writing to a home directly, a day turning so yesterday's log becomes the
  dream's, a table due its daily optimize) is seen within ``homes / slice`` ticks.

At most ``MEMORY_HOMES_PER_TICK`` homes are looked at in one tick; the rest wait in the cursor,
oldest first. Looking at a home asks exactly what the single home's sensors ask, with the same
core functions, and its freshness cursors are kept per home at the root
(``<root>/state/homes_sensor/<user>.json``), so a tick never reads or writes all homes' state:

* its daily logs (``stale_days``) and its vault pages, core files and transcripts
  (``stale_files``): the index keys it is behind on (the catch-up); a ``daily_logs``
  materialisation of the user when logs grew;
* its transcripts: a session the write path is behind on;
* its dream (``pacing.decide``, the home's own persisted state): a batch to ingest or skip, or a
  lint due; its hand-off (``handoff_pending``): lines to retire;
* its dedup measurement (``dedup_due_today``): the index changed since an earlier day's;
* its table (``optimize_reasons``, at most every 10 minutes a home): an optimize;
* its last upkeep's outcome (``core/ops/upkeep/outcomes.py``): the failed steps, tried again once
  the backoff has passed (a home backing off is not looked at until then).

What it finds is the home's work, and the home goes in the open upkeep batch with it
(``defs/homes/batches.py``): one ``upkeep_batch`` run per ``MEMORY_UPKEEP_BATCH_SIZE`` users, or
fewer once the first has waited ``MEMORY_UPKEEP_WAIT_S``. A home in a batch requested and not
ended, or with a run of its own in flight, is not looked at until that run ends.

A look opens no LanceDB table unless the table's directory cannot answer
(``core/index/table_directory.py``): the index state is loaded against the table's id kept in the
home's cursor under the table directory's key (a rebuilt or replaced table changes the key, and
the id is read from the table again), and the optimize check first reads the directory's data
files, versions and latest version, opening the table only when they leave a reason possible.

Each asset of the home it finds nothing to do for (the index already matching the home's logs,
no transcript behind, an idle dream, an empty hand-off, ...) it records once as materialised
(``defs/homes/nothing_to_do.py``), so the UI shows a user's partition as missing only while
there is work to do.

The tick's dynamic-partition requests register the users it saw; past Dagster's guidance of
partitions the tick says so.
"""

import bisect
import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from memory_assets.core.dream.pacing import IDLE, decide
from memory_assets.core.home import Home
from memory_assets.core.index import freshness
from memory_assets.core.index.freshness import (
    Cursor,
    Freshness,
    RunState,
    optimize_reasons,
    optimize_ruled_out,
    stale_days,
    stale_files,
)
from memory_assets.core.index.table_directory import bounds, index_state
from memory_assets.core.knowledge.dream_state import load_dream_state
from memory_assets.core.ops.delete_user import pending_deletions
from memory_assets.core.ops.root_feed import load_home_state, read_changes, save_home_state
from memory_assets.core.ops.upkeep.outcomes import load_outcome, retry_due
from memory_assets.core.ops.upkeep.work import STEPS, Work, dedup_due_today
from memory_assets.core.ops.users import USERS_DIR, list_users
from memory_assets.core.reconcile import handoff_pending
from memory_assets.core.settings import Settings
from memory_assets.core.sources import IndexKey
from memory_assets.defs.homes.batches import IN_FLIGHT, Batches, batch_size, batch_wait_s, users_of_batch
from memory_assets.defs.homes.nothing_to_do import nothing_to_do
from memory_assets.defs.partitions import GUIDANCE_PARTITIONS, USERS, users
from memory_assets.defs.resources import MemoryHomeResource, users_of_run
from memory_assets.defs.upkeep.events import work_assets
from memory_assets.defs.upkeep.jobs import upkeep_batch_job
from memory_assets.defs.write_path.sensors import ALL, sessions_behind

SENSOR = "homes_sensor"
PER_TICK_ENV = "MEMORY_HOMES_PER_TICK"
SWEEP_ENV = "MEMORY_HOMES_SWEEP_PER_TICK"
OPTIMIZE_CHECK_S = 600


def _count(name: str, default: int) -> int:
    raw = os.environ.get(name)
    try:
        value = int(raw) if raw else default
    except ValueError:
        value = default
    return max(1, value)


@dataclass
class HomesCursor:
    """The tick's own cursor: the feed's position, the users directory's signature, where the
    sweep is, the homes waiting (over the tick's budget), the homes due again at a time, and the
    batches (the open one, and those requested and not yet ended: ``batches.py``)."""

    feed: tuple[str, int] | None = None
    runs_after: float = 0.0
    users_sig: str = ""
    sweep_after: str = ""
    queue: list[str] = field(default_factory=list)
    due: dict[str, float] = field(default_factory=dict)
    batches: Batches = field(default_factory=Batches)

    @classmethod
    def load(cls, raw: str | None) -> "HomesCursor":
        data = json.loads(raw) if raw else {}
        feed = data.get("feed")
        return cls(
            tuple(feed) if feed else None,  # type: ignore[arg-type]
            float(data.get("runs_after", 0.0)),
            data.get("users_sig", ""),
            data.get("sweep_after", ""),
            list(data.get("queue", [])),
            dict(data.get("due", {})),
            Batches.load(data.get("batches")),
        )

    def forget(self, gone: set[str]) -> None:
        """Every entry naming a user whose home is gone."""
        self.queue = [u for u in self.queue if u not in gone]
        for user in gone:
            self.due.pop(user, None)
        self.batches.forget(gone)

    def dump(self) -> str:
        return json.dumps(
            {
                "feed": list(self.feed) if self.feed else None,
                "runs_after": self.runs_after,
                "users_sig": self.users_sig,
                "sweep_after": self.sweep_after,
                "queue": self.queue,
                "due": self.due,
                "batches": self.batches.dump(),
            },
            separators=(",", ":"),
        )


@dataclass
class Tick:
    """What one tick asks of Dagster."""

    runs: list[dg.RunRequest] = field(default_factory=list)
    events: list[dg.AssetMaterialization] = field(default_factory=list)
    new_users: list[str] = field(default_factory=list)
    gone_users: list[str] = field(default_factory=list)
    """Registered users whose home is gone (deleted): their partition keys are deleted."""
    looked_at: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    idle: dict[str, set[str]] = field(default_factory=dict)
    """Per user looked at, the assets found with nothing to do (``nothing_to_do``)."""
    work: dict[str, Work] = field(default_factory=dict)
    """Per user looked at, the work found (what goes in the user's batch)."""
    running: set[str] = field(default_factory=set)
    """The users with a run of their own queued or running (a person's launch, a retry)."""


LEGACY = ("legacy_rows_exported", "legacy_rows_deleted")


def _look_at(
    context: dg.SensorEvaluationContext,
    memory: MemoryHomeResource,
    user: str,
    tick: Tick,
    batches: Batches | None = None,
) -> bool:
    """Ask of one home what the single home's sensors ask, and note the work found in
    ``tick.work``; True when work of it is pending (so it is looked at again after the backoff).
    ``batches``: the cursor's (none: the home is in no batch)."""
    batches = batches if batches is not None else Batches()
    root = memory.root_dir()
    assert root is not None
    settings = memory.user_settings(user)
    if not (settings.archive_dir.is_dir() and settings.notebook_dir.is_dir()):
        return False  # not initialised (yet): a home is created by its first write
    state = load_home_state(root, SENSOR, user)
    home = Home(settings)
    indexer = home.indexer_without_embedder()
    work = tick.work.setdefault(user, Work())

    def states(_run_key: str) -> RunState:  # a request's run is the user's batch (batches.py)
        return batches.batch_state(user)

    # No table opened unless the directory cannot answer (``table_directory``): the optimize check
    # (at most every ``OPTIMIZE_CHECK_S``) reads the table directory's bounds and opens the table
    # only when they leave a reason possible; the index state is loaded against the table's id
    # kept in this cursor against the directory's key, read from the table when the table was
    # rebuilt or replaced, or when it is opened for the optimize check anyway.
    now = freshness.clock()
    optimize = list(state.get("optimize") or [0.0, 0.0, None])[:3]
    optimize_due = now - float(optimize[0]) >= OPTIMIZE_CHECK_S
    held = bounds(home.store) if optimize_due else None
    open_table = optimize_due and not optimize_ruled_out(held, float(optimize[1]), optimize[2], now)
    index, table_memo, _ = index_state(
        home.store, settings.index_state_path, state.get("table"), now, verify=open_table
    )

    days = Cursor.load(state.get("days"))
    scan = stale_days(indexer, days, states, date.min, date.max, state=index.files)
    work.keys += [str(IndexKey.for_day(s.day)) for s in scan.stale]
    if scan.grown:  # the user's partition: its days are in the metadata
        grown = sorted(g.day.isoformat() for g in scan.grown)
        tick.events.append(
            dg.AssetMaterialization(
                asset_key="daily_logs",
                partition=user,
                metadata={
                    "days_grown": len(grown),
                    "facts": sum(g.facts for g in scan.grown),
                    "skipped_lines": sum(g.skipped_lines for g in scan.grown),
                    "days": dg.MetadataValue.md(", ".join(grown[:31]) + (" ..." if len(grown) > 31 else "")),
                },
            )
        )
    # What has nothing to do is recorded once as materialised (as the single home's sensor records
    # a day the index already matches); a stale day's batch materialises the partition itself.
    idle = tick.idle.setdefault(user, set())
    if not scan.stale and not days.pending:  # no day out of date, none with a request in flight
        idle.add("archive_index")
    if not (scan.grown or scan.current or scan.stale):
        idle.add("daily_logs")  # no log yet

    files = Cursor.load(state.get("files"))
    fscan = stale_files(indexer, files, states, state=index.files)
    in_flight = {IndexKey.parse(key).group for key in files.pending}
    for asset_name, group, due in (
        ("vault_index", "notebook", fscan.pages),
        ("core_file_index", "core", fscan.core_files),
        ("transcript_index", "transcript", fscan.transcripts),
    ):
        if not due:
            if group not in in_flight:
                idle.add(asset_name)
            continue
        work.keys += [f.key for f in due]
        for f in due:
            fscan.freshness.requested(f.key, f.digest, f"{user}:batch", f.attempt)

    transcripts = Cursor.load(state.get("transcripts"))
    if settings.transcripts_dir.is_dir():
        _transcripts(user, settings, transcripts, states, tick)
    else:
        idle.add("ingested_turns")
    _dream(user, settings, tick)
    if handoff_pending(settings):
        work.reconcile = True
    if dedup_due_today(settings):
        work.dedup = True
    outcome = load_outcome(root, user)
    if outcome is not None and outcome.optimized_at > float(optimize[1]):  # a batch optimized it since
        optimize = [optimize[0], outcome.optimized_at, outcome.optimized_version]
        state["optimize"] = optimize
    if open_table:
        optimized = _maybe_optimize(user, home, state, tick)
    elif optimize_due:  # ruled out by the directory: what the check would find, no table opened
        optimized = [now, optimize[1], optimize[2]]
        if held is not None and (not held.exists or index.table is not None):  # none, or not legacy
            idle.update(LEGACY)
    else:
        optimized = optimize
    if outcome is not None and not outcome.ok and outcome.failed:  # a failed upkeep, due again
        work.retry = sorted(s for s in outcome.failed if s in STEPS)

    reported = set(state.get("reported_assets", []))
    if "archival_memories" not in reported and not work.optimize:
        idle.add("archival_memories")
    reported |= work_assets(work)  # its batch materialises them (or fails them)
    tick.events += nothing_to_do(user, settings, idle, reported)

    save_home_state(
        root,
        SENSOR,
        user,
        {
            "days": days.dump(),
            "files": files.dump(),
            "transcripts": transcripts.dump(),
            "reported_assets": sorted(reported),
            "optimize": optimized,
            "table": table_memo,
        },
    )
    return bool(days.pending or files.pending or transcripts.pending)


def _transcripts(
    user: str, settings: Settings, cursor: Cursor, states: Callable[[str], RunState], tick: Tick
) -> None:
    behind, recorded = sessions_behind(settings)
    fresh = Freshness(cursor, {ALL: recorded} if recorded != "-" else {}, states)
    if fresh.up_to_date(ALL, None):
        tick.idle.setdefault(user, set()).add("ingested_turns")
        return
    attempt = fresh.due(ALL, None)
    if attempt is None:
        return
    fresh.requested(ALL, None, f"{user}:batch", attempt)
    tick.work[user].ingest = True


def _dream(user: str, settings: Settings, tick: Tick) -> None:
    """The dream's pacing of this home, from its persisted state (as ``dream_sensor``)."""
    state = load_dream_state(settings.dream_state_path, settings.log_md)
    decision = decide(settings, state, now=datetime.now(UTC))
    idle = tick.idle.setdefault(user, set())
    if not decision.pending:
        idle.add("vault")  # no day to consolidate
    if decision.kind == IDLE:
        idle.add("vault_lint")  # no lint due
        return
    tick.work[user].dream = True


def _maybe_optimize(user: str, home: Home, state: dict[str, Any], tick: Tick) -> list[Any]:
    """``optimize_reasons`` on the home's table (the check due and not ruled out by its directory)."""
    last_at, last_version = (state.get("optimize") or [0.0, 0.0, None])[1:3]
    now = freshness.clock()
    store = home.store
    if not store.exists():
        tick.idle.setdefault(user, set()).update(LEGACY)
        return [now, last_at, last_version]
    stats = store.stats()
    if not stats.legacy:
        tick.idle.setdefault(user, set()).update(LEGACY)
    if stats.legacy:
        return [now, last_at, last_version]
    if last_at == 0.0:  # first look: the table as it is counts as optimised now
        return [now, now, stats.version]
    reasons = optimize_reasons(stats, float(last_at), last_version, now)
    if not reasons:
        return [now, last_at, last_version]
    tick.work[user].optimize = reasons
    return [now, now, stats.version]


ENDED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]


def _ended_runs_users(instance: dg.DagsterInstance, cursor: HomesCursor, now: float) -> list[str]:
    """The users of the runs that ended since the last tick (one query; the first tick starts now):
    a run's user, or every user a batch named."""
    after = cursor.runs_after or now
    records = instance.get_run_records(
        filters=dg.RunsFilter(statuses=ENDED, updated_after=datetime.fromtimestamp(after, UTC)), limit=1000
    )
    cursor.runs_after = max([after, *(r.update_timestamp.timestamp() for r in records)])
    found: list[str] = []
    for record in records:
        found += users_of_batch(record.dagster_run)
        with contextlib.suppress(Exception):  # a run of another shape (a job by hand) names no user
            found += users_of_run(dict(record.dagster_run.tags), instance)
    return found


def _running_users(instance: dg.DagsterInstance) -> set[str]:
    """The users with a run of their own queued or running (one query: the runs in flight)."""
    records = instance.get_run_records(filters=dg.RunsFilter(statuses=IN_FLIGHT), limit=10_000)
    found: set[str] = set()
    for record in records:
        with contextlib.suppress(Exception):
            found |= set(users_of_run(dict(record.dagster_run.tags), instance))
    return found


def _signature(path: Path) -> str:
    try:
        st = path.stat()
    except FileNotFoundError:
        return "-"
    return f"{st.st_ino}:{st.st_mtime_ns}"


_LISTED: dict[str, tuple[str, list[str], set[str]]] = {}
"""Per root, the users directory's signature, every home's id, sorted, and the users whose
deletion is pending: the code server keeps it between ticks, so a tick lists the directory only
when a home appeared or went (a deletion's journal appearing or going changes it too)."""


def _listing(root: Path, sig: str) -> tuple[str, list[str], set[str]]:
    listed = _LISTED.get(str(root))
    if listed is None or listed[0] != sig:
        listed = (sig, list_users(root), set(pending_deletions(root)))
        _LISTED[str(root)] = listed
    return listed


def _homes(root: Path, sig: str) -> list[str]:
    """Every home's id under ``root``, sorted, listed again only when ``sig`` changed."""
    return _listing(root, sig)[1]


def _deleting(root: Path, sig: str) -> set[str]:
    """The users whose deletion is pending (a journal beside the homes): never looked at."""
    return _listing(root, sig)[2]


def _sweep_slice(everyone: list[str], after: str, size: int) -> tuple[list[str], str]:
    """The next ``size`` homes after ``after`` (by id, round robin), and where the next slice
    starts: a bisection of the sorted ids, never a pass over them."""
    if not everyone:
        return [], ""
    if len(everyone) <= size:
        return list(everyone), everyone[-1]
    start = bisect.bisect_right(everyone, after)
    picked = everyone[start : start + size]
    picked += everyone[: size - len(picked)]
    return picked, picked[-1]


def _backing_off(root: Path, user: str, now: float) -> float | None:
    """When a user whose last upkeep failed may go in a batch again, while it is backing off."""
    try:
        outcome = load_outcome(root, user)
    except Exception:  # a user id the outcome cannot name is looked at, and warned of, as ever
        return None
    return None if retry_due(outcome, now) or outcome is None else outcome.retry_at


@dg.sensor(
    jobs=[upkeep_batch_job],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Many homes: keeps every home under MEMORY_ROOT current, looking only at the homes that "
    "appeared, changed (the root's change feed), are due a retry, or come up in the sweep's slice; the "
    "homes it finds with work (the write path, the index's catch-up, the dream, the reconcile, the day's "
    "dedup measurement, the optimize) go in batches, one upkeep_batch run per batch of "
    "MEMORY_UPKEEP_BATCH_SIZE users.",
)
def homes_sensor(context: dg.SensorEvaluationContext, memory: MemoryHomeResource) -> dg.SensorResult:
    root = memory.root_dir()
    if root is None:
        return dg.SensorResult(skip_reason="MEMORY_ROOT is not set: no homes to look at")
    cursor = HomesCursor.load(context.cursor)
    batches = cursor.batches
    tick = Tick()
    now = freshness.clock()
    wanted: list[str] = list(cursor.queue)

    sig = _signature(root / USERS_DIR)
    everyone = _homes(root, sig)
    if sig != cursor.users_sig:
        known = set(context.instance.get_dynamic_partitions(USERS))
        tick.new_users = [u for u in everyone if u not in known]
        tick.gone_users = sorted(known - set(everyone))
        wanted += tick.new_users
        cursor.users_sig = sig
        cursor.forget(set(tick.gone_users))
        if cut_short := len(_deleting(root, sig)):  # counted, never named: Dagster's logs are kept
            tick.warnings.append(
                f"{cut_short} user deletion(s) under {root} were cut short ({root}/users/.deleting+<ID>.json): "
                "finish each with `memory-assets --root ROOT erase --all --user ID --yes`, DELETE "
                "/v1/users/ID?confirm=true, or a restart of the memory service"
            )
    changes, cursor.feed = read_changes(root, cursor.feed)
    wanted += [c.user for c in changes]
    wanted += batches.settle(context.instance)  # the users of the batches that ended
    wanted += _ended_runs_users(context.instance, cursor, now)
    wanted += [u for u, at in cursor.due.items() if at <= now]
    sweep, cursor.sweep_after = _sweep_slice(everyone, cursor.sweep_after, _count(SWEEP_ENV, 10))
    wanted += sweep
    tick.running = _running_users(context.instance)

    budget = _count(PER_TICK_ENV, 100)
    size = batch_size()
    skip = set(tick.gone_users) | _deleting(root, sig)
    order = [u for u in dict.fromkeys(wanted) if u not in skip]  # each home once, first come first served
    now_users, cursor.queue = order[:budget], order[budget:]
    for user in now_users:
        if user in tick.running:  # its own run first; looked at again after the backoff
            cursor.due[user] = now + freshness.RETRY_BASE_S
            continue
        if batches.requested_batch(user) is not None:  # looked at again when its batch ends
            cursor.due.pop(user, None)
            continue
        if (retry_at := _backing_off(root, user, now)) is not None:  # a failed upkeep
            cursor.due[user] = retry_at
            continue
        try:
            pending = _look_at(context, memory, user, tick, batches)
        except Exception as exc:  # one broken home never stops the others
            tick.warnings.append(f"{user}: {type(exc).__name__}: {exc}")
            tick.work.pop(user, None)
            pending = True
        tick.looked_at.append(user)
        work = tick.work.get(user)
        if work and (request := batches.add(user, work, now, size)):
            tick.runs.append(request)
        if pending and not batches.in_batch(user):
            cursor.due[user] = now + freshness.RETRY_BASE_S
        else:
            cursor.due.pop(user, None)
    if request := batches.due(now, batch_wait_s()):
        tick.runs.append(request)

    registers: list[Any] = []
    if tick.gone_users:
        registers.append(users.build_delete_request(tick.gone_users))
        context.log.info(f"{len(tick.gone_users)} home(s) gone (deleted): their partition keys deleted")
    if tick.new_users:
        registers.append(users.build_add_request(tick.new_users))
        count = len(context.instance.get_dynamic_partitions(USERS)) + len(tick.new_users)
        if count > GUIDANCE_PARTITIONS:
            tick.warnings.append(
                f"{count} users, past Dagster's guidance of {GUIDANCE_PARTITIONS} partitions an asset: "
                "shard the root over code locations (design §11.6)"
            )
    for warning in tick.warnings:
        context.log.warning(warning)
    if tick.looked_at:
        context.log.info(
            f"looked at {len(tick.looked_at)} home(s); {len(cursor.queue)} waiting; "
            f"{len(batches.open)} in the open batch, {len(batches.requested)} batch(es) in flight"
        )
    if not tick.runs and not tick.events and not registers:
        return dg.SensorResult(
            skip_reason=f"looked at {len(tick.looked_at)} home(s): "
            + (f"{len(batches.open)} waiting in the open batch" if batches.open else "all current"),
            cursor=cursor.dump(),
        )
    return dg.SensorResult(
        run_requests=tick.runs,
        asset_events=tick.events,
        dynamic_partitions_requests=registers,
        cursor=cursor.dump(),
    )
