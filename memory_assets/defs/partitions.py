"""Partitions shared by every day-shaped asset."""

import os

import dagster as dg

# The first day a partition exists for. Logs older than this are not addressable as partitions
# (the sensor says so); set MEMORY_PARTITIONS_START before loading the code location to go back.
PARTITIONS_START = os.environ.get("MEMORY_PARTITIONS_START", "2026-01-01")

# UTC days, with end_offset=1 so today's partition exists and today's log is indexed as it grows.
daily_partitions = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, end_offset=1, timezone="UTC")
