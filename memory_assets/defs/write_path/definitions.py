"""The write-path domain's definitions."""

import dagster as dg

from memory_assets.defs.write_path.assets import ingested_turns
from memory_assets.defs.write_path.external import transcripts
from memory_assets.defs.write_path.jobs import write_path_job
from memory_assets.defs.write_path.sensors import transcripts_sensor

defs = dg.Definitions(
    assets=[transcripts, ingested_turns], jobs=[write_path_job], sensors=[transcripts_sensor]
)
