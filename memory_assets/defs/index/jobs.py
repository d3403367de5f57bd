"""Index jobs. A backfill of ``reindex`` over the day partitions is the full reindex of the logs."""

import dagster as dg

from memory_assets.defs.index.assets import (
    archival_memories,
    archive_index,
    core_file_index,
    transcript_index,
    vault_index,
)

reindex_job = dg.define_asset_job(
    "reindex",
    selection=[archive_index],
    description="Reindex daily logs, one run per day partition (the sensor requests changed days; "
    "backfill every partition for a full reindex).",
)

index_files_job = dg.define_asset_job(
    "index_files",
    selection=[vault_index, core_file_index, transcript_index],
    description="Reindex vault pages, core files and transcripts (config: files, as label:filename keys; "
    "unset = all of the asset's kind).",
)

optimize_index_job = dg.define_asset_job(
    "optimize_index",
    selection=[archival_memories],
    description="Compact the LanceDB table, fold new rows into its indexes, prune old versions.",
)

INDEX_JOBS = [reindex_job, index_files_job, optimize_index_job]
