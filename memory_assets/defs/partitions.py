"""Partitions shared by every day-shaped asset.

The first day partition is the oldest daily log's day in the memory home, found when the code
location loads, so every log is addressable; ``MEMORY_PARTITIONS_START`` (YYYY-MM-DD) overrides
it. A home with no logs yet starts today. A log dated before the start (restored later from a
backup, say) is reported once by the sensor; reloading the code location takes it in.
"""

import os
from datetime import UTC, date, datetime
from functools import cache

import dagster as dg

from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.settings import Settings, SettingsError


@cache
def partitions_start() -> date:
    explicit = os.environ.get("MEMORY_PARTITIONS_START")
    if explicit:
        try:
            return date.fromisoformat(explicit)
        except ValueError:
            raise SettingsError(
                f"MEMORY_PARTITIONS_START={explicit!r} is not a YYYY-MM-DD date; fix it or unset it "
                "(the default is the oldest daily log's day)"
            ) from None
    try:
        logs = list_logs(Settings.load().archive_dir)
    except (OSError, SettingsError):
        logs = []
    return logs[0][0] if logs else datetime.now(UTC).date()


# UTC days, with end_offset=1 so today's partition exists and today's log is indexed as it grows.
daily_partitions = dg.DailyPartitionsDefinition(
    start_date=partitions_start().isoformat(), end_offset=1, timezone="UTC"
)


def day_range_tags(first: date, last: date) -> dict[str, str]:
    """Run tags for a range of day partitions, clamped to the partitions' start. A day before the
    start (a log written after the code location loaded, by a legacy export, say) has no partition
    until the location reloads; the run still covers it, and its range starts at the first one."""
    start = partitions_start()
    return {
        "dagster/asset_partition_range_start": max(first, start).isoformat(),
        "dagster/asset_partition_range_end": max(last, start).isoformat(),
    }
