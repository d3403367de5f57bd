"""The index domain's definitions."""

import dagster as dg

from memory_assets.defs.index.assets import INDEX_ASSETS
from memory_assets.defs.index.checks import INDEX_CHECKS
from memory_assets.defs.index.external import EXTERNAL_ASSETS
from memory_assets.defs.index.jobs import INDEX_JOBS
from memory_assets.defs.index.sensors import INDEX_SENSORS

defs = dg.Definitions(
    assets=[*EXTERNAL_ASSETS, *INDEX_ASSETS],
    asset_checks=INDEX_CHECKS,
    jobs=INDEX_JOBS,
    sensors=INDEX_SENSORS,
)
