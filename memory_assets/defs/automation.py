"""How this location declares what runs by itself: the single home's sensors and the daily schedules.

``single_home_sensor`` builds a single home's sensor from its differing parts: the jobs it may
request, its description, its interval and, when it has one, the folder it needs. The sensor it
returns has the name of the decorated function, starts running, opens the home each tick and,
while that folder does not exist, skips with the fix (``memory-assets init``) and looks no
further; otherwise its answer is the function's. ``in_flight`` is the one question those sensors
ask of the instance before requesting a job again. ``daily_schedule`` is a job once a day at a
UTC time, running by default.
"""

from collections.abc import Callable, Sequence
from pathlib import Path

import dagster as dg

# What ``define_asset_job`` returns; dagster does not export the type at its top level.
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from memory_assets.core.home import Home
from memory_assets.defs.resources import MemoryHomeResource

Job = dg.JobDefinition | UnresolvedAssetJobDefinition
Look = Callable[[dg.SensorEvaluationContext, Home], dg.SensorResult]
"""A sensor's own part: from the tick and the home, what to skip or request."""

IN_FLIGHT = {
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.MANAGED,
    dg.DagsterRunStatus.CANCELING,
    dg.DagsterRunStatus.SUSPENDED,
}
"""The run statuses of a run that has not ended."""


def in_flight(instance: dg.DagsterInstance, job: Job) -> bool:
    """Whether a run of ``job`` has not ended on ``instance``."""
    return bool(instance.get_runs(dg.RunsFilter(job_name=job.name, statuses=list(IN_FLIGHT)), limit=1))


def single_home_sensor(
    jobs: Sequence[Job],
    description: str,
    *,
    folder: Callable[[Home], Path] | None = None,
    interval_s: int = 30,
) -> Callable[[Look], dg.SensorDefinition]:
    """A decorator: ``look`` becomes the running-by-default sensor of its name over ``jobs``,
    evaluated at most every ``interval_s`` seconds (see the module docstring)."""

    def build(look: Look) -> dg.SensorDefinition:
        def evaluate(context: dg.SensorEvaluationContext, memory: MemoryHomeResource) -> dg.SensorResult:
            home = memory.open()
            missing = folder(home) if folder is not None else None
            if missing is not None and not missing.is_dir():
                return dg.SensorResult(skip_reason=f"{missing} does not exist; run `memory-assets init`")
            return look(context, home)

        return dg.sensor(
            name=look.__name__,
            jobs=list(jobs),
            minimum_interval_seconds=interval_s,
            default_status=dg.DefaultSensorStatus.RUNNING,
            description=description,
        )(evaluate)

    return build


def daily_schedule(job: Job, at: str, description: str) -> dg.ScheduleDefinition:
    """``job`` every day at ``at`` (``HH:MM``, UTC), running by default, named after the job."""
    hour, minute = (int(part) for part in at.split(":"))
    return dg.ScheduleDefinition(
        job=job,
        cron_schedule=f"{minute} {hour} * * *",
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=description,
    )
