"""The day partitions as they were before the sparse-days change, for ``bench_sparse_days.py``.

A code location with the old ``archive_index``: daily time-window partitions from the oldest
log's day to today (``end_offset=1``), every calendar day a partition whether or not it has a
log, and no backfill policy, so a backfill is one run per day. The body is the old one: reindex
the partition's day (a diff; nothing to do for a day without a log). The new location is
``memory_assets.definitions``.
"""

from datetime import UTC, date, datetime

import dagster as dg

from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.settings import Settings
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource

_logs = list_logs(Settings.load().archive_dir)
START = _logs[0][0] if _logs else datetime.now(UTC).date()

daily_partitions = dg.DailyPartitionsDefinition(start_date=START.isoformat(), end_offset=1, timezone="UTC")


@dg.asset(partitions_def=daily_partitions, group_name="index", kinds={"lancedb"})
def archive_index(
    context: dg.AssetExecutionContext, memory: MemoryHomeResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    indexer = memory.open(embedder).ready().indexer
    result = indexer.reindex_day(date.fromisoformat(context.partition_key))
    return dg.MaterializeResult(metadata={"rows": result.rows, "embedded": result.embedded})


defs = dg.Definitions(
    assets=[archive_index],
    resources={"memory": MemoryHomeResource(), "embedder": EmbedderResource()},
    executor=dg.in_process_executor,
)
