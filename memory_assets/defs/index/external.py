"""The markdown tiers, written outside Dagster (by the assistant, the dream and people).

They are external assets (plain ``AssetSpec``): Dagster cannot materialise them, the sensors
report their changes, and the lineage shows the one-way flow logs -> vault -> index.
"""

from collections.abc import Sequence

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


def _knowledge(
    key: str, description: str, deps: Sequence[dg.AssetSpec | dg.AssetKey] = (), kind: str = "markdown"
) -> dg.AssetSpec:
    """A file (or files) of a home's knowledge tier, of ``kind``, written outside Dagster."""
    return dg.AssetSpec(
        key,
        partitions_def=home_partitions,
        deps=deps,
        group_name="knowledge",
        kinds={kind},
        description=description,
    )


consolidation_log = _knowledge(
    "consolidation_log",
    "notebook/log.md: the dream's operation log; its maximum watermark= date is the watermark. "
    "Daily logs at or below it leave the index.",
    deps=[daily_logs],
)

vault_pages = _knowledge(
    "vault_pages",
    "notebook/**/*.md: consolidated claims with provenance and lifecycle, written by the dream.",
    deps=[dg.AssetKey("vault")],  # written by the dream (the vault asset), and by people
)

core_files = _knowledge(
    "core_files",
    "memory/{MEMORY,persona,user}.md: core memory blocks; MEMORY.md has a generated and a manual zone.",
    deps=[vault_pages],
)

tombstones = _knowledge(
    "tombstones",
    "notebook/.state/tombstones.jsonl: normalised texts removed from retrieval (history stays).",
    kind="jsonl",
)

EXTERNAL_ASSETS = [daily_logs, consolidation_log, vault_pages, core_files, tombstones]
