"""The write-path job."""

import dagster as dg

from memory_assets.defs.write_path.assets import write_path

write_path_job = dg.define_asset_job(
    "write_path",
    selection=[write_path],
    description="Turns from the transcripts -> daily logs (each new user turn exactly once).",
)
