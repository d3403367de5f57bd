"""The batch job: one run keeps many users' homes (the op ``ops.upkeep_users``)."""

import dagster as dg

from memory_assets.defs.upkeep.ops import upkeep_users


@dg.job(
    name="upkeep_batch",
    description="Many homes: the day's upkeep of a batch of users in one run, the model loaded once "
    "(config: the members, a user and the planner's hints each; the homes sensor cuts the batches). "
    "Each user's partitions show what the batch materialised, or failed, for them.",
    tags={"memory_assets/kind": "upkeep_batch"},
)
def upkeep_batch_job() -> None:
    upkeep_users()
