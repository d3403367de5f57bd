"""Many homes: the daily dedup report across users (design §11.3).

Each user's daily work (the dream, the reconcile after it, the day's dedup measurement, the
optimize) is in the user's upkeep batch, which the homes sensor cuts from the homes it finds with
work (``defs/homes/batches.py``); what stays a schedule is the one job across every user:
``dedup_across_users`` at 06:30 UTC, every user's latest measurement side by side.
"""

import dagster as dg

from memory_assets.defs.automation import daily_schedule

DEDUP_ACROSS_JOB = dg.define_asset_job(
    "dedup_across_users_job",
    selection=[dg.AssetKey("dedup_across_users")],
    description="Many homes: the users' latest dedup measurements side by side, and the rates across users.",
)

homes_dedup_across_schedule = daily_schedule(
    DEDUP_ACROSS_JOB,
    "06:30",
    "Many homes: daily, after the users' measurements, the dedup report across users.",
)
