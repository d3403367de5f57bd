"""The dream domain's definitions."""

import dagster as dg

from memory_assets.defs.dream.assets import vault, vault_lint
from memory_assets.defs.dream.jobs import dream_job, dream_lint_job
from memory_assets.defs.dream.sensors import dream_sensor

defs = dg.Definitions(assets=[vault, vault_lint], jobs=[dream_job, dream_lint_job], sensors=[dream_sensor])
