"""The reconcile job, started after each successful dream and on a schedule."""

import dagster as dg

from memory_assets.defs.automation import daily_schedule
from memory_assets.defs.dream.jobs import dream_job
from memory_assets.defs.index.assets import archival_memories
from memory_assets.defs.reconcile.assets import index_swept, superseded_retired

reconcile_job = dg.define_asset_job(
    "reconcile",
    selection=[superseded_retired, index_swept, archival_memories],
    description="Retire superseded -> check_and_update sweep -> optimize.",
)

reconcile_schedule = daily_schedule(
    reconcile_job, "03:30", "Daily, so hand-offs from a dream run outside Dagster are retired too."
)


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[dream_job],
    request_job=reconcile_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="After each successful dream run, the reconcile.",
)
def reconcile_after_dream(context: dg.RunStatusSensorContext) -> dg.RunRequest:
    return dg.RunRequest(run_key=f"reconcile-after:{context.dagster_run.run_id}")
