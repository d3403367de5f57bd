"""Many homes (``MEMORY_ROOT``): what replaces the single home's sensors and schedules (the homes
sensor and the upkeep batches it requests), and the dedup report across users (the assets, checks
and jobs are every domain's own, partitioned by user: ``defs/partitions.py``)."""

import dagster as dg

from memory_assets.defs.homes.assets import dedup_across_users
from memory_assets.defs.homes.schedules import DEDUP_ACROSS_JOB, homes_dedup_across_schedule
from memory_assets.defs.homes.sensors import homes_sensor
from memory_assets.defs.upkeep.jobs import upkeep_batch_job

defs = dg.Definitions(
    assets=[dedup_across_users],
    jobs=[DEDUP_ACROSS_JOB, upkeep_batch_job],
    sensors=[homes_sensor],
    schedules=[homes_dedup_across_schedule],
)
