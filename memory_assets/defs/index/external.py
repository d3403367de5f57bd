"""The markdown tiers, written outside Dagster (by the assistant, the dream and people).

They are external assets (plain ``AssetSpec``): Dagster cannot materialise them, the sensors
report their changes, and the lineage shows the one-way flow logs -> vault -> index.
"""

import dagster as dg

from memory_assets.defs.partitions import day_partitions, home_partitions

daily_logs = dg.AssetSpec(
    "daily_logs",
    # Written by the write path (the assistant's library call, or the write_path asset over the
    # transcripts): the lineage shows transcripts -> ingested_turns -> daily_logs.
    deps=[dg.AssetKey("ingested_turns")],
    partitions_def=day_partitions,
    group_name="capture",
    kinds={"markdown"},
    description="archive/YYYY-MM-DD.md: the capture tier, appended to by the write path, never rewritten.",
)

consolidation_log = dg.AssetSpec(
    "consolidation_log",
    partitions_def=home_partitions,
    deps=[daily_logs],
    group_name="knowledge",
    kinds={"markdown"},
    description="notebook/log.md: the dream's operation log; its maximum watermark= date is the watermark. "
    "Daily logs at or below it leave the index.",
)

vault_pages = dg.AssetSpec(
    "vault_pages",
    partitions_def=home_partitions,
    deps=[dg.AssetKey("vault")],  # written by the dream (the vault asset), and by people
    group_name="knowledge",
    kinds={"markdown"},
    description="notebook/**/*.md: consolidated claims with provenance and lifecycle, written by the dream.",
)

core_files = dg.AssetSpec(
    "core_files",
    partitions_def=home_partitions,
    deps=[vault_pages],
    group_name="knowledge",
    kinds={"markdown"},
    description="memory/{MEMORY,persona,user}.md: core memory blocks; MEMORY.md has a generated and a manual zone.",
)

tombstones = dg.AssetSpec(
    "tombstones",
    partitions_def=home_partitions,
    group_name="knowledge",
    kinds={"jsonl"},
    description="notebook/.state/tombstones.jsonl: normalised texts removed from retrieval (history stays).",
)

EXTERNAL_ASSETS = [daily_logs, consolidation_log, vault_pages, core_files, tombstones]
