"""The ``memory_assets`` code location: every domain's definitions, merged, plus shared resources.

With ``MEMORY_ROOT`` set when it loads, the location orchestrates every home under that root
(``defs/partitions.py``, ``defs/homes/``): the same assets, checks and jobs, partitioned by user,
with the homes sensor (and the upkeep batches it requests) and the one schedule across users in
place of the single home's sensors and schedules. Without it, the single home (``MEMORY_HOME``).
"""

import dagster as dg

from memory_assets.defs.dedup import definitions as dedup
from memory_assets.defs.dream import definitions as dream
from memory_assets.defs.executor import executor
from memory_assets.defs.index import definitions as index
from memory_assets.defs.legacy import definitions as legacy
from memory_assets.defs.partitions import MANY_HOMES
from memory_assets.defs.reconcile import definitions as reconcile
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.write_path import definitions as write_path


def _location() -> dg.Definitions:
    """The location's definitions (one ``Definitions`` at module scope: Dagster's loader wants one)."""
    shared = dg.Definitions(
        resources={"memory": MemoryHomeResource(), "embedder": EmbedderResource()},
        # MEMORY_EXECUTOR (defs/executor.py); by default one process per run, so the model loads
        # once per run instead of once per step.
        executor=executor(),
    )
    domains = [index.defs, dedup.defs, write_path.defs, dream.defs, reconcile.defs, legacy.defs]
    if not MANY_HOMES:
        return dg.Definitions.merge(*domains, shared)
    from memory_assets.defs.homes import definitions as homes

    merged = dg.Definitions.merge(*domains)
    return dg.Definitions.merge(
        # The single home's sensors and schedules ask one home; the homes sensor, its upkeep
        # batches and the schedule across users (defs/homes/) replace them.
        dg.Definitions(assets=merged.assets, asset_checks=merged.asset_checks, jobs=merged.jobs),
        homes.defs,
        shared,
    )


defs = _location()
