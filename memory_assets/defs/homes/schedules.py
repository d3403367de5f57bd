"""Many homes: the reconcile and the dedup measurement per user, and the reconcile after each
user's dream (design §11.3).

The single home's daily schedules run one job; over a root, a run per user per day would be
most runs of the day for nothing. So once a day each asks every home one stat-level question
(O(homes) stats a day, no file read) and requests a run, tagged with the user, only where
there is work:

* ``homes_reconcile_schedule`` (03:30 UTC): the users whose dream hand-off
  (``.state/superseded.txt``) is not empty: a dream outside Dagster left lines to retire;
* ``homes_dedup_schedule`` (04:30 UTC): the users whose index changed since their last
  measurement (the index state is newer than the dedup report); at 06:30 ``dedup_across_users``;
* ``homes_reconcile_after_dream``: after each successful dream run, the reconcile of its user.
"""

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from memory_assets.core.ops.users import list_users, user_settings
from memory_assets.core.reconcile import handoff_pending
from memory_assets.core.settings import Settings
from memory_assets.defs.dedup.jobs import dedup_measurement_job
from memory_assets.defs.dream.jobs import dream_job
from memory_assets.defs.instance import USER_TAG
from memory_assets.defs.reconcile.jobs import reconcile_job
from memory_assets.defs.resources import MemoryHomeResource, users_of_run

DEDUP_ACROSS_JOB = dg.define_asset_job(
    "dedup_across_users_job",
    selection=[dg.AssetKey("dedup_across_users")],
    description="Many homes: the users' latest dedup measurements side by side, and the rates across users.",
)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def dedup_due(settings: Settings) -> bool:
    """Whether the user's index changed since their last dedup measurement (two stats, no read)."""
    return _mtime(settings.index_state_path) > _mtime(settings.dedup_dir / "report.json")


def _day(context: dg.ScheduleEvaluationContext) -> str:
    when = context.scheduled_execution_time or datetime.now(UTC)
    return when.date().isoformat()


@dg.schedule(
    job=reconcile_job,
    cron_schedule="30 3 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Many homes: daily, the reconcile of each user whose dream hand-off is not empty.",
)
def homes_reconcile_schedule(context: dg.ScheduleEvaluationContext, memory: MemoryHomeResource) -> list:
    root = memory.root_dir()
    if root is None:
        return []
    day = _day(context)
    return [
        dg.RunRequest(partition_key=user, run_key=f"{user}:reconcile:{day}", tags={USER_TAG: user})
        for user in list_users(root)
        if handoff_pending(user_settings(root, user))
    ]


@dg.schedule(
    job=dedup_measurement_job,
    cron_schedule="30 4 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Many homes: daily, the dedup measurement of each user whose index changed since their "
    "last one.",
)
def homes_dedup_schedule(context: dg.ScheduleEvaluationContext, memory: MemoryHomeResource) -> list:
    root = memory.root_dir()
    if root is None:
        return []
    day = _day(context)
    runs = []
    for user in list_users(root):
        if dedup_due(user_settings(root, user)):
            runs.append(
                dg.RunRequest(partition_key=user, run_key=f"{user}:dedup:{day}", tags={USER_TAG: user})
            )
    return runs


homes_dedup_across_schedule = dg.ScheduleDefinition(
    job=DEDUP_ACROSS_JOB,
    cron_schedule="30 6 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Many homes: daily, after the users' measurements, the dedup report across users.",
)


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[dream_job],
    request_job=reconcile_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Many homes: after each successful dream run, the reconcile of each user it dreamed for.",
)
def homes_reconcile_after_dream(context: dg.RunStatusSensorContext) -> list[dg.RunRequest]:
    run = context.dagster_run
    return [
        dg.RunRequest(
            partition_key=user, run_key=f"reconcile-after:{run.run_id}:{user}", tags={USER_TAG: user}
        )
        for user in users_of_run(dict(run.tags), context.instance)
    ]
