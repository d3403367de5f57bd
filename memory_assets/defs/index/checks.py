"""Invariants of the whole table, as asset checks (each can fail, and says why in markdown)."""

import dagster as dg

from memory_assets.core.index.store import MAX_FRAGMENTS
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.text import normalise
from memory_assets.defs.index.assets import archival_memories
from memory_assets.defs.resources import MemoryHomeResource


def _table(rows: list[tuple[str, str, str | None]]) -> str:
    lines = ["| id | source_type | content |", "|---|---|---|"]
    lines += [f"| `{i}` | {t or 'legacy_direct'} | {c[:80].replace('|', '/')} |" for i, c, t in rows[:20]]
    return "\n".join(lines)


@dg.asset_check(asset=archival_memories, description="No row's normalised content is tombstoned.")
def no_tombstoned_content(memory: MemoryHomeResource) -> dg.AssetCheckResult:
    settings = memory.settings()
    tombs = read_tombstones(settings.tombstones_path).contents
    offending = [r for r in memory.store(settings).contents() if normalise(r[1]) in tombs]
    return dg.AssetCheckResult(
        passed=not offending,
        metadata={
            "tombstones": len(tombs),
            "tombstoned_rows": len(offending),
            "rows": dg.MetadataValue.md(_table(offending) if offending else "_none_"),
        },
    )


@dg.asset_check(asset=archival_memories, description=f"Fragments stay at or under {MAX_FRAGMENTS}.")
def fragments_bounded(memory: MemoryHomeResource) -> dg.AssetCheckResult:
    stats = memory.store().stats()
    return dg.AssetCheckResult(
        passed=stats.fragments <= MAX_FRAGMENTS,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"fragments": stats.fragments, "bound": MAX_FRAGMENTS, "rows": stats.rows},
        description="materialise archival_memories (optimize) to compact"
        if stats.fragments > MAX_FRAGMENTS
        else None,
    )


@dg.asset_check(
    asset=archival_memories, description="Row ids are unique (they are deterministic, never positional)."
)
def ids_unique(memory: MemoryHomeResource) -> dg.AssetCheckResult:
    rows = memory.store().contents()
    seen: set[str] = set()
    dupes = [r for r in rows if r[0] in seen or seen.add(r[0])]
    return dg.AssetCheckResult(
        passed=not dupes,
        metadata={
            "rows": len(rows),
            "duplicate_ids": len(dupes),
            "duplicates": dg.MetadataValue.md(_table(dupes) if dupes else "_none_"),
        },
    )


INDEX_CHECKS = [no_tombstoned_content, fragments_bounded, ids_unique]
