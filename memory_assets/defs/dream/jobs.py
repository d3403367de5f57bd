"""The dream's jobs: ingest a batch of days into the vault, or lint it."""

import dagster as dg

from memory_assets.defs.dream.assets import vault, vault_lint

dream_job = dg.define_asset_job(
    "dream",
    selection=[vault],
    description="Consolidate a batch of days' logs into the vault (one run per batch: its days together).",
)

dream_lint_job = dg.define_asset_job(
    "dream_lint", selection=[vault_lint], description="The dream's editorial audit of the vault."
)
