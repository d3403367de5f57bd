"""The reconcile as assets: retire what the dream folded -> sweep -> (optimize: archival_memories)."""

import dagster as dg

from memory_assets.core.home import Home
from memory_assets.core.index.retire import MIN_RETIRE_CHARS
from memory_assets.core.ops.retire import retire_handoff
from memory_assets.core.reconcile import HandoffLeft, ReconcileResult
from memory_assets.core.settings import Settings
from memory_assets.defs.dream.assets import vault
from memory_assets.defs.index.external import tombstones
from memory_assets.defs.partitions import day_materializations, home_partitions
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.text_free import TextFree

HANDOFF_CHECK = "handoff_processed"


def _home(memory: MemoryHomeResource, embedder: EmbedderResource) -> Home:
    return memory.open(embedder).ready()


@dg.asset(
    deps=[vault, tombstones],
    partitions_def=home_partitions,
    group_name="knowledge",
    kinds={"jsonl"},
    check_specs=[
        dg.AssetCheckSpec(
            HANDOFF_CHECK,
            asset="superseded_retired",
            description="After a reconcile, superseded.txt holds no line it already retired (only lines "
            "the dream appended since).",
        )
    ],
    description="Step 1 of the reconcile: every log fact the dream folded into a page (.state/superseded.txt) "
    "gets a tombstone (fsync'd, once) and every day whose log holds it is reindexed; the hand-off is "
    "truncated last. Records the tombstones and the days it reindexed.",
)
def superseded_retired(
    context: dg.AssetExecutionContext, memory: MemoryHomeResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    home = _home(memory, embedder)
    settings = home.settings
    result, left = retire_handoff(home)
    free = TextFree(settings.state_dir)
    free.log(context.log, "warning", result.warnings)
    if result.refused:
        context.log.warning(
            f"{len(result.refused)} hand-off line(s) refused (under {MIN_RETIRE_CHARS} characters): "
            f"{free.texts(result.refused)}"
        )
    if result.unmatched:
        context.log.warning(
            f"{len(result.unmatched)} hand-off line(s) no daily log holds; dropped: {free.texts(result.unmatched)}"
        )
    if result.retired:
        context.log_event(
            dg.AssetMaterialization(asset_key=tombstones.key, metadata={"added": result.retired})
        )
    for event in day_materializations(
        "archive_index", result.days_reindexed, memory.user, {"reason": "reconcile"}
    ):
        context.log_event(event)
    return dg.MaterializeResult(
        metadata=retire_metadata(result), check_results=[handoff_check(settings, left)]
    )


def retire_metadata(result: ReconcileResult) -> dict[str, object]:
    """``superseded_retired``'s metadata (its run's, or a batch's for a user)."""
    return {
        "handoff_lines": result.handoff_lines,
        "retired": result.retired,
        "already_retired": result.already_retired,
        "refused": len(result.refused),
        "unmatched": len(result.unmatched),
        "days_reindexed": len(result.days_reindexed),
    }


def handoff_check(settings: Settings, found: HandoffLeft) -> dg.AssetCheckResult:
    """``handoff_processed`` from the hand-off as found after the retire step."""
    left = found.retired
    return dg.AssetCheckResult(
        check_name=HANDOFF_CHECK,
        passed=not left,
        metadata={"lines_left": found.lines, "already_retired_but_left": len(left)},
        description=None
        if not left
        else f"{len(left)} retired line(s) still in {settings.superseded_path.name} "
        f"({TextFree(settings.state_dir).texts(left[:5])}): rerun the reconcile (it truncates the hand-off last)",
    )


@dg.asset(
    deps=[superseded_retired],
    partitions_def=home_partitions,
    group_name="index",
    kinds={"lancedb"},
    description="Step 2 of the reconcile (check_and_update): the indexer's sweep, so changed pages and core "
    "files are reindexed and deleted files' rows removed.",
)
def index_swept(
    context: dg.AssetExecutionContext, memory: MemoryHomeResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    home = _home(memory, embedder)
    sweep = home.indexer.sweep()
    TextFree(home.settings.state_dir).log(context.log, "warning", sweep.warnings)
    return dg.MaterializeResult(metadata=swept_metadata(sweep.summary()))


def swept_metadata(summary: dict[str, object]) -> dict[str, object]:
    """``index_swept``'s metadata from a sweep's summary (its run's, or a batch's for a user)."""
    return {k: v for k, v in summary.items() if isinstance(v, int | float | bool)}
