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
  failed: ``Planner.again``);
* **a slice of every home** (``MEMORY_HOMES_SWEEP_PER_TICK``, round robin): what the feed cannot
  see (an assistant writing to a home directly, a day turning so yesterday's log becomes the
  dream's, a table due its daily optimize) is seen within ``homes / slice`` ticks.

At most ``MEMORY_HOMES_PER_TICK`` homes are looked at in one tick; the rest wait in the cursor,
oldest first. What a home needs is the core's question (``core/ops/upkeep/look.py``, through
``core/ops/upkeep/plan.Planner``): the same functions the single home's sensors ask, with the
home's state kept at the root (``core/ops/upkeep/look_state.py``), so a tick never reads or writes
all homes' state and opens no table unless its directory cannot answer. A home whose last upkeep
failed is not looked at until its backoff has passed (``Planner.backing_off``).

What a look finds is the home's work, and the home goes in the open upkeep batch with it
(``defs/homes/batches.py``): one ``upkeep_batch`` run per ``MEMORY_UPKEEP_BATCH_SIZE`` users, or
fewer once the first has waited ``MEMORY_UPKEEP_WAIT_S``. A home in a batch requested and not
ended, or with a run of its own in flight, is not looked at until that run ends. A ``daily_logs``
materialisation of the user is recorded when its logs grew.

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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from memory_assets.core.ops.upkeep.plan import Planner
from memory_assets.core.ops.upkeep.work import Work
from memory_assets.defs.env import number
from memory_assets.defs.homes.batches import IN_FLIGHT, Batches, batch_size, batch_wait_s, users_of_batch
from memory_assets.defs.homes.nothing_to_do import idle_assets, nothing_to_do
from memory_assets.defs.partitions import GUIDANCE_PARTITIONS, USERS, users
from memory_assets.defs.resources import MemoryHomeResource, users_of_run
from memory_assets.defs.text_free import TextFree
from memory_assets.defs.upkeep.events import work_assets
from memory_assets.defs.upkeep.jobs import upkeep_batch_job

PER_TICK_ENV = "MEMORY_HOMES_PER_TICK"
SWEEP_ENV = "MEMORY_HOMES_SWEEP_PER_TICK"


def _count(name: str, default: int) -> int:
    return int(number(name, default, int, minimum=1))


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


def _look_at(
    context: dg.SensorEvaluationContext,
    memory: MemoryHomeResource,
    user: str,
    tick: Tick,
    batches: Batches | None = None,
) -> bool:
    """The planner's look at one home (``core/ops/upkeep/look.py``): its work noted in
    ``tick.work``, its events in ``tick.events``, its state kept; True when a request of it is in
    flight (so it is looked at again after the backoff). ``batches``: the cursor's (none: the home
    is in no batch); a request's run is the user's batch (``batches.py``)."""
    batches = batches if batches is not None else Batches()
    root = memory.root_dir()
    assert root is not None
    planner = Planner(root)
    settings = memory.user_settings(user)
    found = planner.look(
        user, settings, lambda _run_key: batches.batch_state(user), run_key=f"{user}:batch", now=planner.now()
    )
    if found is None:
        return False  # not initialised (yet): a home is created by its first write
    look, state = found
    work = tick.work[user] = look.work
    grown = sorted(g.day.isoformat() for g in look.days.grown)
    if grown:  # the user's partition: its days are in the metadata
        tick.events.append(
            dg.AssetMaterialization(
                asset_key="daily_logs",
                partition=user,
                metadata={
                    "days_grown": len(grown),
                    "facts": sum(g.facts for g in look.days.grown),
                    "skipped_lines": sum(g.skipped_lines for g in look.days.grown),
                    "days": dg.MetadataValue.md(", ".join(grown[:31]) + (" ..." if len(grown) > 31 else "")),
                },
            )
        )
    idle = idle_assets(look)
    if "archival_memories" not in state.reported and not work.optimize:
        idle.add("archival_memories")
    state.reported |= work_assets(work)  # its batch materialises them (or fails them)
    tick.events += nothing_to_do(user, settings, idle, state.reported)
    state.save(root, user)
    return look.pending


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
    planner = Planner(root)
    cursor = HomesCursor.load(context.cursor)
    batches = cursor.batches
    tick = Tick()
    now = planner.now()
    wanted: list[str] = list(cursor.queue)

    sig = planner.users_signature()
    everyone = planner.homes(sig)
    if sig != cursor.users_sig:
        known = set(context.instance.get_dynamic_partitions(USERS))
        tick.new_users = [u for u in everyone if u not in known]
        tick.gone_users = sorted(known - set(everyone))
        wanted += tick.new_users
        cursor.users_sig = sig
        cursor.forget(set(tick.gone_users))
        if cut_short := len(planner.deleting(sig)):  # counted, never named: Dagster's logs are kept
            tick.warnings.append(
                f"{cut_short} user deletion(s) under {root} were cut short ({root}/users/.deleting+<ID>.json): "
                "finish each with `memory-assets --root ROOT erase --all --user ID --yes`, DELETE "
                "/v1/users/ID?confirm=true, or a restart of the memory service"
            )
    changes, cursor.feed = planner.changes(cursor.feed)
    wanted += [c.user for c in changes]
    wanted += batches.settle(context.instance)  # the users of the batches that ended
    wanted += _ended_runs_users(context.instance, cursor, now)
    wanted += [u for u, at in cursor.due.items() if at <= now]
    sweep, cursor.sweep_after = _sweep_slice(everyone, cursor.sweep_after, _count(SWEEP_ENV, 10))
    wanted += sweep
    tick.running = _running_users(context.instance)

    budget = _count(PER_TICK_ENV, 100)
    size = batch_size()
    skip = set(tick.gone_users) | planner.deleting(sig)
    order = [u for u in dict.fromkeys(wanted) if u not in skip]  # each home once, first come first served
    now_users, cursor.queue = order[:budget], order[budget:]
    for user in now_users:
        if user in tick.running:  # its own run first; looked at again after the backoff
            cursor.due[user] = planner.again(now)
            continue
        if batches.requested_batch(user) is not None:  # looked at again when its batch ends
            cursor.due.pop(user, None)
            continue
        if (retry_at := planner.backing_off(user, now)) is not None:  # a failed upkeep
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
            cursor.due[user] = planner.again(now)
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
    TextFree(None).log(context.log, "warning", tick.warnings)  # across users: no one home's key
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
