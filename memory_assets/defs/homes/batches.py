"""Many homes: the batches the homes sensor cuts from the homes it found with work (design §11.4).

A look at a home (``core/ops/upkeep/look.py``, asked by ``sensors.homes_sensor``) that finds work adds the user and the hints (``Work``)
to the **open batch**, kept in the sensor's cursor. The open batch is requested as one run of
``upkeep_batch`` as soon as it holds ``MEMORY_UPKEEP_BATCH_SIZE`` users (default 200), or once
its first user has waited ``MEMORY_UPKEEP_WAIT_S`` (default 60 s), whichever comes first; the
rest of the tick's users start the next one. So the runs follow the work: a day's upkeep of N
active users is about N / batch size runs, and a quiet root requests none.

**One batch per user at a time.** A requested batch's users stay in the cursor until its run is
no longer queued or running (one query a tick for the batches in flight): while a user is in the
open batch its work found again is merged into it, and while it is in a requested batch it is
never put in another. Every batch is cut here, by the one sensor, so batches running at once on
separate nodes (the K8s run launcher: a Job per run) hold disjoint users. A user with a run of
its own in flight (a person materialising its partition) is not put in a batch either; and if
one starts while a batch holds the user, the user's exclusion keeps them apart.

The freshness of a home's files (``core/index/freshness.py``) asks about each request's run: a
user in the open batch or a requested one counts as a run in flight; one in neither has had its
batch end (``batch_state``), so a file still stale is requested again after the backoff.
"""

from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from memory_assets.core.index.freshness import RunState
from memory_assets.core.ops.upkeep.work import Work
from memory_assets.defs import env
from memory_assets.defs.upkeep.jobs import upkeep_batch_job
from memory_assets.defs.upkeep.ops import OP

BATCH_SIZE_ENV = "MEMORY_UPKEEP_BATCH_SIZE"
BATCH_WAIT_ENV = "MEMORY_UPKEEP_WAIT_S"
BATCH_SIZE = 200
"""The most users in one batch run: a run's own cost (process, imports, model) spread over many
users' work (docs/benchmarks.md, "A day of upkeep for many users")."""
BATCH_WAIT_S = 60.0
BATCH_TAG = "memory_assets/upkeep_batch"
USERS_TAG = "memory_assets/users"
IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def batch_size() -> int:
    """``MEMORY_UPKEEP_BATCH_SIZE``: the most users in one batch."""
    return int(env.number(BATCH_SIZE_ENV, BATCH_SIZE, int, minimum=1))


def batch_wait_s() -> float:
    """``MEMORY_UPKEEP_WAIT_S``: how long a batch's first user waits for the batch to fill."""
    return env.number(BATCH_WAIT_ENV, BATCH_WAIT_S)


@dataclass
class Batches:
    """The cursor's part for batches: the open batch (user -> hints, and when it opened), the
    batches requested and not yet ended (run key -> users), and the next batch's number."""

    open: dict[str, dict[str, Any]] = field(default_factory=dict)
    opened_at: float = 0.0
    requested: dict[str, list[str]] = field(default_factory=dict)
    seq: int = 0
    _held: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, data: dict[str, Any] | None) -> "Batches":
        data = data or {}
        batches = cls(
            dict(data.get("open", {})),
            float(data.get("opened_at", 0.0)),
            {k: list(v) for k, v in (data.get("requested") or {}).items()},
            int(data.get("seq", 0)),
        )
        batches._held = {u: key for key, users in batches.requested.items() for u in users}
        return batches

    def dump(self) -> dict[str, Any]:
        return {"open": self.open, "opened_at": self.opened_at, "requested": self.requested, "seq": self.seq}

    def in_batch(self, user: str) -> bool:
        """Whether the user is in the open batch or a requested one not yet ended."""
        return user in self.open or user in self._held

    def requested_batch(self, user: str) -> str | None:
        return self._held.get(user)

    def batch_state(self, user: str) -> RunState:
        """The state of the run a request of ``user``'s recorded (see the module docstring)."""
        return RunState.IN_FLIGHT if self.in_batch(user) else RunState.ENDED

    def settle(self, instance: dg.DagsterInstance) -> list[str]:
        """Drop the requested batches whose run is no longer in flight; their users (to look at)."""
        if not self.requested:
            return []
        records = instance.get_run_records(
            filters=dg.RunsFilter(job_name=upkeep_batch_job.name, statuses=IN_FLIGHT), limit=10_000
        )
        flying = {r.dagster_run.tags.get("dagster/run_key") for r in records}
        ended = [key for key in self.requested if key not in flying]
        users: list[str] = []
        for key in ended:
            users += self.requested.pop(key)
        self._held = {u: key for key, members in self.requested.items() for u in members}
        return users

    def forget(self, gone: set[str]) -> None:
        """Users whose home is gone leave the open batch (a requested batch's run finds no home for
        them and records nothing)."""
        for user in gone & set(self.open):
            del self.open[user]
        if not self.open:
            self.opened_at = 0.0

    def add(self, user: str, work: Work, now: float, size: int) -> dg.RunRequest | None:
        """Put ``user`` with ``work`` in the open batch (merged if it is there); the open batch's
        request when this filled it. A user in a requested batch is never added (``in_batch``)."""
        if user in self._held:
            return None
        if not self.open:
            self.opened_at = now
        before = self.open.get(user)
        self.open[user] = (Work.from_dict(before).merge(work) if before else work).to_dict()
        return self.cut(now) if len(self.open) >= size else None

    def due(self, now: float, wait_s: float) -> dg.RunRequest | None:
        """The open batch's request when its first user has waited ``wait_s``."""
        if self.open and now - self.opened_at >= wait_s:
            return self.cut(now)
        return None

    def cut(self, now: float) -> dg.RunRequest:
        """The open batch as one run of ``upkeep_batch``; the next users open a new one."""
        self.seq += 1
        key = f"upkeep:{self.seq}:{int(now)}"
        members = [{"user": user, **hints} for user, hints in self.open.items()]
        self.requested[key] = list(self.open)
        self._held.update(dict.fromkeys(self.open, key))
        self.open, self.opened_at = {}, 0.0
        return dg.RunRequest(
            job_name=upkeep_batch_job.name,
            run_key=key,
            run_config={"ops": {OP: {"config": {"members": members}}}},
            tags={BATCH_TAG: str(self.seq), USERS_TAG: str(len(members))},
        )


def users_of_batch(run: dg.DagsterRun) -> list[str]:
    """The users a batch run's config names (none for another run)."""
    if run.job_name != upkeep_batch_job.name:
        return []
    config = (run.run_config or {}).get("ops", {}).get(OP, {}).get("config", {})
    return [str(m["user"]) for m in config.get("members", []) if isinstance(m, dict) and "user" in m]
