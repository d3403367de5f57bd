"""The ``memory_assets`` code location: every domain's definitions, merged, plus shared resources."""

import dagster as dg

from memory_assets.defs.dedup import definitions as dedup
from memory_assets.defs.dream import definitions as dream
from memory_assets.defs.executor import executor
from memory_assets.defs.index import definitions as index
from memory_assets.defs.legacy import definitions as legacy
from memory_assets.defs.reconcile import definitions as reconcile
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.write_path import definitions as write_path

defs = dg.Definitions.merge(
    index.defs,
    dedup.defs,
    write_path.defs,
    dream.defs,
    reconcile.defs,
    legacy.defs,
    dg.Definitions(
        resources={"memory": MemoryHomeResource(), "embedder": EmbedderResource()},
        # MEMORY_EXECUTOR (defs/executor.py); by default one process per run, so the model loads
        # once per run instead of once per step.
        executor=executor(),
    ),
)
