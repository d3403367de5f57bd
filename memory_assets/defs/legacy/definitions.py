"""The legacy domain's definitions (each asset carries the legacy_rows_recorded_nowhere_else check)."""

import dagster as dg

from memory_assets.defs.legacy.assets import legacy_rows_deleted, legacy_rows_exported
from memory_assets.defs.legacy.jobs import legacy_apply_job, legacy_export_job

defs = dg.Definitions(
    assets=[legacy_rows_exported, legacy_rows_deleted], jobs=[legacy_export_job, legacy_apply_job]
)
