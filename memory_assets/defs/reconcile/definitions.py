"""The reconcile domain's definitions."""

import dagster as dg

from memory_assets.defs.reconcile.assets import index_swept, superseded_retired
from memory_assets.defs.reconcile.jobs import reconcile_after_dream, reconcile_job, reconcile_schedule

defs = dg.Definitions(
    assets=[superseded_retired, index_swept],
    jobs=[reconcile_job],
    schedules=[reconcile_schedule],
    sensors=[reconcile_after_dream],
)
