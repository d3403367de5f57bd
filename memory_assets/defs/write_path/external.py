"""The raw turns, written by the assistant outside Dagster: an external asset the sensor watches."""

import dagster as dg

from memory_assets.defs.partitions import home_partitions

transcripts = dg.AssetSpec(
    "transcripts",
    partitions_def=home_partitions,
    group_name="capture",
    kinds={"jsonl"},
    description="transcripts/<session>.jsonl: the assistant's raw turns ({ts, role, content, ...} a line), "
    "appended by the assistant. The write_path asset turns new user turns into daily-log facts.",
)
