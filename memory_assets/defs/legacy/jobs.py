"""The legacy jobs: export the legacy rows, then (confirmed in the run config) delete them."""

import dagster as dg

from memory_assets.defs.legacy.assets import legacy_rows_deleted, legacy_rows_exported

legacy_export_job = dg.define_asset_job(
    "legacy_export",
    selection=[legacy_rows_exported],
    description="Append every legacy row recorded nowhere else to the daily logs (idempotent), then index them.",
)

legacy_apply_job = dg.define_asset_job(
    "legacy_apply",
    selection=[legacy_rows_deleted],
    description="Back up, then delete the legacy rows (refuses while any is recorded nowhere else). Needs "
    "`confirm: true` in the run config; without it, only reports.",
)
