"""The write-path job."""

import dagster as dg

from memory_assets.defs.write_path.assets import ingested_turns

write_path_job = dg.define_asset_job(
    "write_path",
    selection=[ingested_turns],
    description="Turns from the transcripts -> daily logs (each new user turn exactly once).",
)
