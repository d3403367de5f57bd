"""Many homes (``MEMORY_ROOT``): what replaces the single home's sensors and schedules, and the
dedup report across users (the assets, checks and jobs are every domain's own, partitioned by
user: ``defs/partitions.py``)."""

import dagster as dg

from memory_assets.defs.homes.assets import dedup_across_users
from memory_assets.defs.homes.schedules import (
    DEDUP_ACROSS_JOB,
    homes_dedup_across_schedule,
    homes_dedup_schedule,
    homes_reconcile_after_dream,
    homes_reconcile_schedule,
)
from memory_assets.defs.homes.sensors import homes_sensor

defs = dg.Definitions(
    assets=[dedup_across_users],
    jobs=[DEDUP_ACROSS_JOB],
    sensors=[homes_sensor, homes_reconcile_after_dream],
    schedules=[homes_reconcile_schedule, homes_dedup_schedule, homes_dedup_across_schedule],
)
