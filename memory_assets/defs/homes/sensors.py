"""Many homes (``MEMORY_ROOT``): one sensor keeps every home under the root current, doing work
proportional to the homes that changed, not to all homes (design §11.3).

Each tick, ``homes_sensor`` looks at:

* **homes that appeared**: the root's ``users/`` directory is stat'ed; only when it changed is it
  listed, and the homes not yet registered become partitions of ``users`` and are looked at;
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

* its daily logs (``stale_days``): one ``reindex`` run on the user's partition naming the stale
  days in its config (a new home with a year of logs is one run); a ``daily_logs``
  materialisation of the user when logs grew;
* its vault pages, core files and transcripts (``stale_files``): an ``index_files`` run on the
  user's partition per asset (``vault_index``, ``core_file_index``, ``transcript_index``);
* its transcripts: a ``write_path`` run while a session is behind;
* its dream (``pacing.decide``, the home's own persisted state): ``dream`` over the batch's days,
  or ``dream_lint``, never while a dream of that user is in flight;
* its table (``optimize_reasons``, at most every 10 minutes a home): ``optimize_index``.

A look opens no LanceDB table unless the table's directory cannot answer
(``core/index/table_directory.py``): the index state is loaded against the table's id kept in the
home's cursor under the table directory's key (a rebuilt or replaced table changes the key, and
the id is read from the table again), and the optimize check first reads the directory's data
files, versions and latest version, opening the table only when they leave a reason possible.

Each asset of the home it finds nothing to do for (the index already matching the home's logs,
no transcript behind, an idle dream, an empty hand-off, ...) it records once as materialised
(``defs/homes/nothing_to_do.py``), so the UI shows a user's partition as missing only while
there is work to do.

Every request is of the user's partition and carries the ``user`` tag (the per-user concurrency
limit of ``dagster.yaml``) and a run key prefixed by the user. The tick's dynamic-partition
requests register the users it saw; past Dagster's guidance of partitions the tick says so.
"""

import bisect
import contextlib
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from memory_assets.core.dream.pacing import IDLE, LINT, decide
from memory_assets.core.home import Home
from memory_assets.core.index import freshness
from memory_assets.core.index.freshness import (
    Cursor,
    Freshness,
    optimize_reasons,
    optimize_ruled_out,
    short_hash,
    stale_days,
    stale_files,
)
from memory_assets.core.index.table_directory import bounds, index_state
from memory_assets.core.knowledge.dream_state import load_dream_state
from memory_assets.core.ops.root_feed import load_home_state, read_changes, save_home_state
from memory_assets.core.ops.users import USERS_DIR, list_users
from memory_assets.core.settings import Settings
from memory_assets.core.sources import IndexKey
from memory_assets.defs.dream.jobs import dream_job, dream_lint_job
from memory_assets.defs.homes.nothing_to_do import nothing_to_do, settled_by
from memory_assets.defs.index.jobs import index_files_job, optimize_index_job, reindex_job
from memory_assets.defs.index.sensors import IN_FLIGHT, run_states
from memory_assets.defs.instance import USER_TAG
from memory_assets.defs.partitions import GUIDANCE_PARTITIONS, USERS, users
from memory_assets.defs.resources import MemoryHomeResource, users_of_run
from memory_assets.defs.write_path.jobs import write_path_job
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
    sweep is, the homes waiting (over the tick's budget) and the homes due again at a time."""

    feed: tuple[str, int] | None = None
    runs_after: float = 0.0
    users_sig: str = ""
    sweep_after: str = ""
    queue: list[str] = field(default_factory=list)
    due: dict[str, float] = field(default_factory=dict)

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
        )

    def dump(self) -> str:
        return json.dumps(
            {
                "feed": list(self.feed) if self.feed else None,
                "runs_after": self.runs_after,
                "users_sig": self.users_sig,
                "sweep_after": self.sweep_after,
                "queue": self.queue,
                "due": self.due,
            },
            separators=(",", ":"),
        )


@dataclass
class Tick:
    """What one tick asks of Dagster."""

    runs: list[dg.RunRequest] = field(default_factory=list)
    events: list[dg.AssetMaterialization] = field(default_factory=list)
    new_users: list[str] = field(default_factory=list)
    looked_at: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    idle: dict[str, set[str]] = field(default_factory=dict)
    """Per user looked at, the assets found with nothing to do (``nothing_to_do``)."""


LEGACY = ("legacy_rows_exported", "legacy_rows_deleted")


def _tags(user: str, **extra: str) -> dict[str, str]:
    return {USER_TAG: user, **extra}


def _look_at(context: dg.SensorEvaluationContext, memory: MemoryHomeResource, user: str, tick: Tick) -> bool:
    """Ask of one home what the single home's sensors ask; True when a request of it is in flight
    (so it is looked at again after the backoff)."""
    root = memory.root_dir()
    assert root is not None
    settings = memory.user_settings(user)
    if not (settings.archive_dir.is_dir() and settings.notebook_dir.is_dir()):
        return False  # not initialised (yet): a home is created by its first write
    state = load_home_state(root, SENSOR, user)
    home = Home(settings)
    indexer = home.indexer_without_embedder()
    states = run_states(context.instance)
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
    tick.runs += _reindex_requests(user, scan.stale)
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
    # a day the index already matches); a stale day's run materialises the partition itself.
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
        keys = [f.key for f in due]
        run_key = f"{user}:{asset_name}:{files.generation}:{len(keys)}"
        tick.runs.append(
            dg.RunRequest(
                job_name=index_files_job.name,
                partition_key=user,
                run_key=run_key,
                asset_selection=[dg.AssetKey(asset_name)],
                run_config={"ops": {asset_name: {"config": {"files": keys}}}},
                tags=_tags(user),
            )
        )
        for f in due:
            fscan.freshness.requested(f.key, f.digest, run_key, f.attempt)

    transcripts = Cursor.load(state.get("transcripts"))
    if settings.transcripts_dir.is_dir():
        _transcripts(context, user, settings, transcripts, tick)
    else:
        idle.add("ingested_turns")
    _dream(context, user, settings, tick)
    if open_table:
        optimized = _maybe_optimize(context, user, home, state, tick)
    elif optimize_due:  # ruled out by the directory: what the check would find, no table opened
        optimized = [now, optimize[1], optimize[2]]
        if held is not None and (not held.exists or index.table is not None):  # none, or not legacy
            idle.update(LEGACY)
    else:
        optimized = optimize

    reported = set(state.get("reported_assets", []))
    if (
        "archival_memories" not in reported
        and not any(r.job_name == optimize_index_job.name for r in tick.runs if r.tags.get(USER_TAG) == user)
        and not _in_flight(context, user, optimize_index_job.name)
    ):
        idle.add("archival_memories")
    settled_by((r for r in tick.runs if r.tags.get(USER_TAG) == user), reported)
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


def _reindex_requests(user: str, stale: list[Any]) -> list[dg.RunRequest]:
    """The stale days of a home as one run of the user's partition naming them in its config
    (a new home with a year of logs, a dream that consolidated a batch: one process, the model
    loaded once)."""
    if not stale:
        return []
    attempt = str(max(s.attempt for s in stale))
    days = sorted(s.day for s in stale)
    key = short_hash("|".join(sorted(s.run_key for s in stale)))
    return [
        dg.RunRequest(
            job_name=reindex_job.name,
            partition_key=user,
            run_key=f"{user}:days:{days[0]}:{days[-1]}:{len(days)}:{key}",
            run_config={"ops": {"archive_index": {"config": {"days": [d.isoformat() for d in days]}}}},
            tags=_tags(
                user, **{"memory_assets/attempt": attempt, "memory_assets/stale_days": str(len(days))}
            ),
        )
    ]


def _transcripts(
    context: dg.SensorEvaluationContext, user: str, settings: Settings, cursor: Cursor, tick: Tick
) -> None:
    behind, recorded = sessions_behind(settings)
    fresh = Freshness(cursor, {ALL: recorded} if recorded != "-" else {}, run_states(context.instance))
    if fresh.up_to_date(ALL, None):
        tick.idle.setdefault(user, set()).add("ingested_turns")
        return
    attempt = fresh.due(ALL, None)
    if attempt is None or _in_flight(context, user, write_path_job.name):
        return
    run_key = f"{user}:write_path:{cursor.generation}"
    fresh.requested(ALL, None, run_key, attempt)
    tick.runs.append(
        dg.RunRequest(
            job_name=write_path_job.name,
            partition_key=user,
            run_key=run_key,
            tags=_tags(user, **{"memory_assets/sessions_behind": ",".join(behind)[:200]}),
        )
    )


def _in_flight(context: dg.SensorEvaluationContext, user: str, *jobs: str) -> bool:
    return any(
        context.instance.get_runs(
            dg.RunsFilter(job_name=job, statuses=list(IN_FLIGHT), tags={USER_TAG: user}), limit=1
        )
        for job in jobs
    )


def _dream(context: dg.SensorEvaluationContext, user: str, settings: Settings, tick: Tick) -> None:
    """The dream's pacing of this home, from its persisted state (as ``dream_sensor``)."""
    state = load_dream_state(settings.dream_state_path, settings.log_md)
    decision = decide(settings, state, now=datetime.now(UTC))
    idle = tick.idle.setdefault(user, set())
    if not decision.pending:
        idle.add("vault")  # no day to consolidate
    if decision.kind == IDLE:
        idle.add("vault_lint")  # no lint due
    if decision.kind == IDLE or _in_flight(context, user, dream_job.name, dream_lint_job.name):
        return
    attempt = (
        f"{state.failures.get(decision.batch_key, 0)}:"
        f"{state.last_attempt_at.isoformat() if state.last_attempt_at else '-'}"
    )
    reason = {"memory_assets/reason": decision.reason[:200]}
    if decision.kind == LINT:
        last = state.last_lint_attempt_at.isoformat() if state.last_lint_attempt_at else "-"
        tick.runs.append(
            dg.RunRequest(
                job_name=dream_lint_job.name,
                partition_key=user,
                run_key=f"{user}:lint:{last}",
                tags=_tags(user, **reason),
            )
        )
        return
    tick.runs.append(
        dg.RunRequest(
            job_name=dream_job.name,
            partition_key=user,
            run_key=f"{user}:dream:{decision.batch_key}:{attempt}",
            tags=_tags(user, **{"memory_assets/decision": decision.kind}, **reason),
        )
    )


def _maybe_optimize(
    context: dg.SensorEvaluationContext, user: str, home: Home, state: dict[str, Any], tick: Tick
) -> list[Any]:
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
    if stats.legacy or _in_flight(context, user, optimize_index_job.name):
        return [now, last_at, last_version]
    if last_at == 0.0:  # first look: the table as it is counts as optimised now
        return [now, now, stats.version]
    reasons = optimize_reasons(stats, float(last_at), last_version, now)
    if not reasons:
        return [now, last_at, last_version]
    tick.runs.append(
        dg.RunRequest(
            job_name=optimize_index_job.name,
            partition_key=user,
            run_key=f"{user}:optimize:{stats.version}:{int(now // 3600)}",
            tags=_tags(user, **{"memory_assets/reason": "; ".join(reasons)[:200]}),
        )
    )
    return [now, now, stats.version]


ENDED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]


def _ended_runs_users(instance: dg.DagsterInstance, cursor: HomesCursor, now: float) -> list[str]:
    """The users of the runs that ended since the last tick (one query; the first tick starts now)."""
    after = cursor.runs_after or now
    records = instance.get_run_records(
        filters=dg.RunsFilter(statuses=ENDED, updated_after=datetime.fromtimestamp(after, UTC)), limit=1000
    )
    cursor.runs_after = max([after, *(r.update_timestamp.timestamp() for r in records)])
    found: list[str] = []
    for record in records:
        with contextlib.suppress(Exception):  # a run of another shape (a job by hand) names no user
            found += users_of_run(dict(record.dagster_run.tags), instance)
    return found


def _signature(path: Path) -> str:
    try:
        st = path.stat()
    except FileNotFoundError:
        return "-"
    return f"{st.st_ino}:{st.st_mtime_ns}"


_LISTED: dict[str, tuple[str, list[str]]] = {}
"""Per root, the users directory's signature and every home's id, sorted: the code server keeps
it between ticks, so a tick lists the directory only when a home appeared or went."""


def _homes(root: Path, sig: str) -> list[str]:
    """Every home's id under ``root``, sorted, listed again only when ``sig`` changed."""
    listed = _LISTED.get(str(root))
    if listed is None or listed[0] != sig:
        listed = (sig, list_users(root))
        _LISTED[str(root)] = listed
    return listed[1]


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


@dg.sensor(
    jobs=[reindex_job, index_files_job, optimize_index_job, write_path_job, dream_job, dream_lint_job],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Many homes: keeps every home under MEMORY_ROOT current, looking only at the homes that "
    "appeared, changed (the root's change feed), are due a retry, or come up in the sweep's slice; per "
    "home it requests what the single home's sensors would (reindex, index_files, write_path, dream, "
    "optimize), each run tagged with its user.",
)
def homes_sensor(context: dg.SensorEvaluationContext, memory: MemoryHomeResource) -> dg.SensorResult:
    root = memory.root_dir()
    if root is None:
        return dg.SensorResult(skip_reason="MEMORY_ROOT is not set: no homes to look at")
    cursor = HomesCursor.load(context.cursor)
    tick = Tick()
    now = freshness.clock()
    wanted: list[str] = list(cursor.queue)

    sig = _signature(root / USERS_DIR)
    everyone = _homes(root, sig)
    if sig != cursor.users_sig:
        known = set(context.instance.get_dynamic_partitions(USERS))
        tick.new_users = [u for u in everyone if u not in known]
        wanted += tick.new_users
        cursor.users_sig = sig
    changes, cursor.feed = read_changes(root, cursor.feed)
    wanted += [c.user for c in changes]
    wanted += _ended_runs_users(context.instance, cursor, now)
    wanted += [u for u, at in cursor.due.items() if at <= now]
    sweep, cursor.sweep_after = _sweep_slice(everyone, cursor.sweep_after, _count(SWEEP_ENV, 10))
    wanted += sweep

    budget = _count(PER_TICK_ENV, 100)
    order = list(dict.fromkeys(wanted))  # each home once, first come first served
    now_users, cursor.queue = order[:budget], order[budget:]
    for user in now_users:
        try:
            in_flight = _look_at(context, memory, user, tick)
        except Exception as exc:  # one broken home never stops the others
            tick.warnings.append(f"{user}: {type(exc).__name__}: {exc}")
            in_flight = True
        tick.looked_at.append(user)
        if in_flight:
            cursor.due[user] = now + freshness.RETRY_BASE_S
        else:
            cursor.due.pop(user, None)

    registers: list[Any] = []
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
        context.log.info(f"looked at {len(tick.looked_at)} home(s); {len(cursor.queue)} waiting")
    if not tick.runs and not tick.events and not registers:
        return dg.SensorResult(
            skip_reason=f"looked at {len(tick.looked_at)} home(s): all current", cursor=cursor.dump()
        )
    return dg.SensorResult(
        run_requests=tick.runs,
        asset_events=tick.events,
        dynamic_partitions_requests=registers,
        cursor=cursor.dump(),
    )
