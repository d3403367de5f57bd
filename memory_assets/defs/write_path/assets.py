"""The write path as an asset: new transcript turns -> facts classified -> daily logs."""

import dagster as dg

from memory_assets.core.ops.write import ingest
from memory_assets.core.write_path.ingest import IngestResult
from memory_assets.defs.partitions import day_materializations, home_partitions, register_days
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.text_free import TextFree
from memory_assets.defs.write_path.external import transcripts


@dg.asset(
    deps=[transcripts],
    partitions_def=home_partitions,
    group_name="capture",
    kinds={"python"},
    description="Every new user turn of the transcripts, oldest first and exactly once, through the write "
    "path: recall known facts, extract, classify (confirmation / revision / new), append new facts and "
    "revisions to the turn's day's log, record confirmations, reindex that day. Metadata counts facts by "
    "outcome, so the UI plots confirmations against new facts over time.",
)
def ingested_turns(
    context: dg.AssetExecutionContext, memory: MemoryHomeResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    home = memory.open(embedder).ready()
    result = ingest(home)
    TextFree(home.settings.state_dir).log(
        context.log, "warning", [*result.warnings, *([result.recovered] if result.recovered else [])]
    )
    register_days(context.instance, result.days, memory.user)
    for event in day_materializations("daily_logs", result.days, memory.user, {"written_by": "write_path"}):
        context.log_event(event)
    return dg.MaterializeResult(metadata=ingest_metadata(result))


def ingest_metadata(result: IngestResult) -> dict[str, object]:
    """``ingested_turns``'s metadata (its run's, or a batch's for a user)."""
    extractors = sorted({r.extractor for r in result.results})
    fallbacks = [r.fallback for r in result.results if r.fallback]
    return {
        "turns": result.turns,
        "new": result.counts["new"],
        "revision": result.counts["revision"],
        "confirmation": result.counts["confirmation"],
        "skipped_lines": result.skipped_lines,
        "days": dg.MetadataValue.md(", ".join(result.days) or "_none_"),
        "reindex_errors": sum(1 for r in result.results if r.reindex_error),
        "extraction_fallbacks": len(fallbacks),
        "extractor": ", ".join(extractors) or "-",
        "recovered_interrupted_turn": bool(result.recovered),
        "seconds": round(result.seconds, 3),
    }
