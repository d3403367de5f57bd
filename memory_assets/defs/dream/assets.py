"""The dream as assets: the vault, partitioned by the log day it consolidates, and its lint."""

import warnings

import dagster as dg

from memory_assets.core.dream.runner import DreamResult
from memory_assets.core.home import Home
from memory_assets.core.ops.dream import dream_once
from memory_assets.defs.index.external import daily_logs
from memory_assets.defs.partitions import (
    MANY_HOMES,
    day_backfill_policy,
    day_of,
    day_partitions,
    home_partitions,
)
from memory_assets.defs.resources import MemoryHomeResource
from memory_assets.defs.text_free import TextFree


def dream_metadata(result: DreamResult, free: TextFree) -> dict[str, object]:
    """``vault``'s metadata for one dream run (its run's, or a batch's for a user), text-free."""
    return {
        "kind": result.kind,
        "watermark": result.watermark or "none",
        "advanced": result.advanced,
        "days": len(result.days),
        "pages_changed": len(result.pages_changed),
        "confirm": result.outcomes.get("confirm", 0),
        "sharpen": result.outcomes.get("sharpen", 0),
        "supersede": result.outcomes.get("supersede", 0),
        "add": result.outcomes.get("add", 0),
        "folded": result.folded,
        "left": result.left,
        "confirmations_folded": result.confirmations_folded,
        "revisited": len(result.revisited),
        "memory_md": free.line(result.memory_md or "-"),
        "pages": dg.MetadataValue.md("\n".join(f"- `{p}`" for p in result.pages_changed) or "_none_"),
        "summary": free.line(result.summary or result.reason),
        "seconds": round(result.seconds, 3),
    }


with warnings.catch_warnings():
    # BackfillPolicy is beta in dagster 1.13 (pinned): it is what lets one run materialise a
    # batch's days together, as the dream consolidates them together.
    warnings.simplefilter("ignore", dg.BetaWarning)

    @dg.asset(
        partitions_def=day_partitions,
        # A single home: one run for the batch's days. Many homes: a user's partition is the run,
        # and a backfill is one run per user (the per-user limit: defs/partitions.py).
        backfill_policy=day_backfill_policy(None),
        deps=[daily_logs],
        group_name="knowledge",
        kinds={"markdown"},
        description="The vault's consolidation of each day's log: a dream run folds its batch's days into "
        "3_Personal/ pages (confirm, sharpen, supersede, add), hands the folded lines to the reconcile, and "
        "advances the watermark after a clean run that changed a page. The dream_sensor requests it from the "
        "persisted pacing state; a failed or empty run fails, is counted, and leaves the watermark.",
    )
    def vault(context: dg.AssetExecutionContext, memory: MemoryHomeResource) -> dg.MaterializeResult:
        # Many homes: the run's one user (a run over several users is refused: defs/resources.py).
        return _dream(context, Home(memory.settings()), set(context.partition_keys))


def _dream(context: dg.AssetExecutionContext, home: Home, wanted: set[str]) -> dg.MaterializeResult:
    settings = home.ready().settings
    # The sensor evaluated the gates; the runner still owns retry-then-skip and the batch.
    result = dream_once(home)
    free = TextFree(settings.state_dir)
    free.log(context.log, "warning", result.warnings)
    days = set(result.days) if MANY_HOMES else {day_of(k).isoformat() for k in wanted}
    if result.days and not set(result.days) <= days:
        context.log.warning(
            f"the runner's batch {result.days} differs from the requested days {sorted(days)}"
        )
    if result.kind == "busy":
        raise dg.Failure(f"another dream is running on {settings.home}; this run did nothing")
    if not result.ok:
        raise dg.Failure(
            f"dream run on {result.days} did not consolidate: {free.line(result.reason)} (attempt "
            f"{result.failures} of {settings.dream_max_retries}; the watermark stays at {result.watermark})",
            metadata=dream_metadata(result, free),
        )
    context.log.info(free.line(result.summary or result.reason))
    return dg.MaterializeResult(metadata=dream_metadata(result, free))


@dg.asset(
    deps=[vault],
    partitions_def=home_partitions,
    group_name="knowledge",
    kinds={"markdown"},
    description="The dream's editorial audit of the vault (broken links, orphans, contradicting bullets, stale "
    "pages, broken frontmatter): safe fixes only, never a deletion; a clean run writes `## [date] lint` "
    "to log.md. The dream_sensor requests it when nothing is pending and a lint is due.",
)
def vault_lint(context: dg.AssetExecutionContext, memory: MemoryHomeResource) -> dg.MaterializeResult:
    home = Home(memory.settings()).ready()
    result = dream_once(home, lint_only=True)
    free = TextFree(home.settings.state_dir)
    if not result.ok:
        raise dg.Failure(f"lint failed: {free.line(result.error or result.reason)}")
    return dg.MaterializeResult(metadata=lint_metadata(result, free))


def lint_metadata(result: DreamResult, free: TextFree) -> dict[str, object]:
    """``vault_lint``'s metadata for one lint (its run's, or a batch's for a user), text-free."""
    counts = {k: v for k, v in (result.lint or {}).items() if isinstance(v, int)}
    return {**counts, "summary": free.line(result.summary or result.reason)}
