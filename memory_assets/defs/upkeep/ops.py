"""The batch op: many users' upkeep in one run, and each user's outcome reported as its own.

The op ``upkeep_users`` (of the job ``upkeep_batch``) runs ``core/ops/upkeep/batch.run_batch`` over the members of its config (a user
and the planner's hints each; the homes sensor cuts them, design §11.4), with the run's one
embedder, so the model loads once per run whatever the number of users. As each user finishes:

* once the user's exclusion is held, the assets its hints name are reported as planned by this
  run, so the user's partitions show as materialising while the batch works on them;
* every asset a step materialised is reported on the user's partition, with the metadata the
  asset's own run gives it (``events.py``), so the UI shows the user's partition materialised by
  this run, as if by a run of its own;
* every asset a failed step did not materialise is (or was already) reported as planned by this
  run and never materialised, and the error is logged against the user; the run goes on with the next user and
  fails at its end, naming the failed users, so Dagster shows exactly those users' partitions as
  failed (a partition is failed when the run that planned it failed without materialising it)
  and every other user's as materialised;
* a user another run holds (``exclusion.py``) is skipped, logged with the holder, and left as it
  was: its work is still waiting, for the next batch.

The run's page lists its users and each user's outcome (the output's metadata, or the failure's).
A member with no hint at all (a batch launched by hand from the launchpad naming users) gets
every step: ``Work.everything``.
"""

from pathlib import Path

import dagster as dg
from dagster._core.events import AssetMaterializationPlannedData, DagsterEvent

from memory_assets.core.ops.upkeep.batch import UserUpkeep, run_batch
from memory_assets.core.ops.upkeep.outcomes import UPKEEP_RETRY
from memory_assets.core.ops.upkeep.work import Work
from memory_assets.core.ops.users import has_home
from memory_assets.core.settings import SettingsError
from memory_assets.defs import env
from memory_assets.defs.partitions import USERS
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.text_free import TextFree
from memory_assets.defs.upkeep.events import planned_assets, user_events

OP = "upkeep_users"
MAX_TABLE_ROWS = 500
RETRY_ENV = "MEMORY_UPKEEP_RETRY_S"


def retry_base_s() -> float:
    """A failed user's first backoff before a batch takes it again (``MEMORY_UPKEEP_RETRY_S``)."""
    return env.number(RETRY_ENV, UPKEEP_RETRY.first_s)


def _not_gone(root: Path, user: str) -> bool:
    """Whether ``user`` has a home (a user id that is not valid: its error is the batch's to report)."""
    try:
        return has_home(root, user)
    except SettingsError:
        return True


class MemberConfig(dg.Config):
    """One user of a batch and what the planner found due (hints: each step asks again)."""

    user: str
    keys: list[str] = []
    ingest: bool = False
    dream: bool = False
    reconcile: bool = False
    dedup: bool = False
    optimize: list[str] = []
    retry: list[str] = []

    def work(self) -> Work:
        work = Work.from_dict(self.model_dump(exclude={"user"}))
        return work if work else Work.everything()


class UpkeepBatchConfig(dg.Config):
    """The batch's users, in the order they are kept."""

    members: list[MemberConfig]


def _planned(context: dg.OpExecutionContext, asset: str, user: str) -> None:
    """Record that this run planned ``asset``'s partition ``user`` (never materialised: failed)."""
    planned = DagsterEvent.build_asset_materialization_planned_event(
        context.run.job_name,
        context.op_handle.name,
        AssetMaterializationPlannedData(dg.AssetKey(asset), partition=user),
    )
    context.instance.report_dagster_event(planned, run_id=context.run_id)


def _outcome(entry: UserUpkeep, free: TextFree) -> str:
    """A user's outcome in the batch, text-free (an error names what failed, never what was said)."""
    if entry.skipped:
        return f"skipped: {free.line(entry.skipped)}"
    if entry.failed:
        return "failed: " + "; ".join(f"{step}: {free.line(error)}" for step, error in entry.failed.items())
    return "ok"


def _table(entries: list[UserUpkeep], free: dict[str, TextFree]) -> str:
    lines = ["| user | outcome | steps | seconds |", "|---|---|---|---:|"]
    for entry in entries[:MAX_TABLE_ROWS]:
        steps = ", ".join(s.step + ("" if s.ok else " (failed)") for s in entry.steps) or "-"
        outcome = _outcome(entry, free[entry.user]).replace("|", "\\|").replace("\n", " ")[:300]
        lines.append(f"| {entry.user} | {outcome} | {steps} | {entry.seconds:.2f} |")
    if len(entries) > MAX_TABLE_ROWS:
        lines.append(f"| ... | {len(entries) - MAX_TABLE_ROWS} more | | |")
    return "\n".join(lines)


@dg.op(
    name=OP,
    description="Many homes: the upkeep of a batch of users in one run (the write path over their "
    "transcripts, the index's catch-up, the dream, the reconcile, the day's dedup measurement, the "
    "optimize), each user under their exclusion, the model loaded once. Each user's materialisations "
    "(or failures) are reported on their own partitions; one user's failure never stops the others.",
)
def upkeep_users(
    context: dg.OpExecutionContext,
    config: UpkeepBatchConfig,
    memory: MemoryHomeResource,
    embedder: EmbedderResource,
) -> None:
    root = memory.root_dir()
    if root is None:
        raise dg.Failure("upkeep_users needs MEMORY_ROOT (the root of the users' homes)")
    users = [m.user for m in config.members]
    if len(set(users)) != len(users):
        twice = sorted({u for u in users if users.count(u) > 1})
        raise dg.Failure(
            f"the upkeep_batch config names {', '.join(twice)} more than once: name each user once"
        )
    work = {m.user: m.work() for m in config.members}
    known = set(context.instance.get_dynamic_partitions(USERS))
    # A member deleted since the sensor planned the batch has no home: its key stays deleted.
    if missing := [u for u in users if u not in known and _not_gone(root, u)]:
        context.instance.add_dynamic_partitions(USERS, missing)

    planned: dict[str, set[str]] = {}
    free: dict[str, TextFree] = {}
    for user in users:  # each user's own key tags the user's texts (defs/text_free.py)
        try:
            free[user] = TextFree(memory.user_settings(user).state_dir)
        except SettingsError:
            free[user] = TextFree(None)

    def start(user: str) -> None:  # the user's partitions show as materialising
        planned[user] = planned_assets(work[user])
        for asset in sorted(planned[user]):
            _planned(context, asset, user)

    def report(entry: UserUpkeep) -> None:
        events, failed = user_events(entry, work[entry.user], free[entry.user])
        for event in events:
            context.log_event(event)
        for asset in sorted(set(failed) - planned.get(entry.user, set())):
            _planned(context, asset, entry.user)
        if entry.failed:
            context.log.error(f"{entry.user}: {_outcome(entry, free[entry.user])}")
        elif entry.skipped:
            context.log.warning(f"{entry.user}: {_outcome(entry, free[entry.user])}")

    entries = run_batch(
        root,
        [(user, work[user]) for user in users],
        holder=f"upkeep batch run {context.run_id}",
        embedder=embedder.get(),
        source=f"dagster:{context.run_id}",
        on_user=report,
        on_start=start,
        retry_base_s=retry_base_s(),
    )
    failed = [e.user for e in entries if e.failed]
    skipped = [e.user for e in entries if e.skipped]
    metadata: dict[str, object] = {
        "users": len(entries),
        "ok": sum(1 for e in entries if e.ok),
        "failed": len(failed),
        "skipped": len(skipped),
        "outcomes": dg.MetadataValue.md(_table(entries, free)),
        "seconds": round(sum(e.seconds for e in entries), 3),
    }
    if failed:
        shown = ", ".join(failed[:20]) + (f" and {len(failed) - 20} more" if len(failed) > 20 else "")
        raise dg.Failure(
            description=f"{len(failed)} of {len(entries)} users' upkeep failed ({shown}); every other "
            "user's was done and is reported on its partition. The failed users are retried by a later "
            "batch (the outcomes table has each error).",
            metadata=metadata,
        )
    context.add_output_metadata(metadata)
