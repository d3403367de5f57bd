"""The dedup measurement job and its daily schedule."""

import dagster as dg

from memory_assets.defs.automation import daily_schedule
from memory_assets.defs.dedup.assets import dedup_history, dedup_report

dedup_measurement_job = dg.define_asset_job(
    "dedup_measurement",
    selection=[dedup_report, dedup_history],
    description="Measure near-duplicates in the index and the on-disk backlog, append the measurement to "
    "the history, and render the analysts' HTML report.",
)

dedup_daily_schedule = daily_schedule(
    dedup_measurement_job, "04:30", "Daily, after the 03:00 optimize of archival_memories."
)
