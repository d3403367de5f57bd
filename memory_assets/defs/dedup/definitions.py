"""The dedup domain's definitions."""

import dagster as dg

from memory_assets.defs.dedup.assets import dedup_history, dedup_report
from memory_assets.defs.dedup.jobs import dedup_daily_schedule, dedup_measurement_job

defs = dg.Definitions(
    assets=[dedup_report, dedup_history], jobs=[dedup_measurement_job], schedules=[dedup_daily_schedule]
)
