"""Legacy rows as assets: export them into the daily logs, then (confirmed) delete them from the table.

``core/legacy/`` does the work; these assets give it lineage (archival_memories -> export ->
daily_logs; export -> delete -> archival_memories) and a place in the UI. The delete needs
``confirm: true`` in its run config: without it the run only reports what it would do, as an
observation of the asset, and deletes nothing.
"""

from collections.abc import Iterator

import dagster as dg
from pydantic import Field

from memory_assets.core.home import Home
from memory_assets.core.legacy.find import CHECK_NAME, LegacyError
from memory_assets.core.ops.legacy import apply_legacy, export_legacy, legacy_check
from memory_assets.defs.index.assets import archival_memories
from memory_assets.defs.index.external import daily_logs
from memory_assets.defs.partitions import day_materializations, home_partitions, register_days
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.text_free import TextFree

TABLE_HELP = (
    "An assistant-format LanceDB URI (the directory holding archival_memories, e.g. ~/.suzent/memory); "
    "unset: the project's own index."
)


class LegacyExportConfig(dg.Config):
    table: str | None = Field(default=None, description=TABLE_HELP)


class LegacyApplyConfig(dg.Config):
    table: str | None = Field(default=None, description=TABLE_HELP)
    confirm: bool = Field(
        default=False,
        description="true: back up, then delete the legacy rows. false (the default): only report what "
        "an apply would do.",
    )


CHECK_DESCRIPTION = (
    "Legacy rows (no source file) that no daily log, vault page or core file holds: they exist only in the "
    "index. Warns while there are any (fix: the legacy_export job, or `memory-assets legacy export`); fails "
    "when legacy rows are in the table after an apply claimed success (run the export and the apply again)."
)


def _check(asset: str) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(CHECK_NAME, asset=asset, description=CHECK_DESCRIPTION)


def _checked(memory: MemoryHomeResource, asset: str) -> dg.AssetCheckResult:
    settings = memory.settings()
    outcome = legacy_check(Home(settings))
    return TextFree(settings.state_dir).check_result(outcome, "rows", check_name=CHECK_NAME, asset_key=asset)


def _sample(free: TextFree, rows: list[dict[str, object]]) -> dg.MetadataValue:
    """The undated rows' sample as ids, days and tags (their words stay in the home)."""
    return dg.MetadataValue.md(
        free.table(
            [
                {
                    "id": str(r.get("id", "")),
                    "day": str(r.get("day") or "undated"),
                    "content": str(r.get("content", "")),
                }
                for r in rows
            ]
        )
    )


@dg.asset(
    deps=[archival_memories],
    partitions_def=home_partitions,
    group_name="legacy",
    kinds={"markdown"},
    check_specs=[_check("legacy_rows_exported")],
    description="Every legacy row (no source file) that no daily log, vault page or core file holds, appended "
    "to the capture tier under the writers' lock: to its own day's log after the watermark, else to today's "
    "tagged `legacy from-YYYY-MM-DD` (or `legacy undated`); memory_blocks to the core files. Idempotent. For "
    "the project's index the run then sweeps, so the exported facts are searchable from their markdown.",
)
def legacy_rows_exported(
    context: dg.AssetExecutionContext,
    config: LegacyExportConfig,
    memory: MemoryHomeResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    settings = memory.settings()
    free = TextFree(settings.state_dir)
    try:
        result = export_legacy(Home(settings), config.table)
    except LegacyError as exc:
        # from None: Dagster would keep the cause's own message, which quotes rows (text_free.py)
        raise dg.Failure(free.line(str(exc))) from None
    free.log(context.log, "warning", result.warnings)
    register_days(context.instance, result.days, memory.user)
    for event in day_materializations(daily_logs.key, result.days, memory.user, {"reason": "legacy export"}):
        context.log_event(event)
    swept = 0
    if config.table is None and result.exported:
        swept = memory.open(embedder).indexer.sweep().embedded
    out = result.to_dict()
    return dg.MaterializeResult(
        metadata={
            "legacy_rows": result.found,
            "blocks": result.blocks,
            "already_recorded": result.already_recorded,
            "exported": result.exported,
            "dated_today": result.dated_today,
            "undated": len(result.undated),
            "days": dg.MetadataValue.md("\n".join(f"- {d}" for d in result.days) or "_none_"),
            "destinations": dg.MetadataValue.json(out["destinations"]),
            "undated_sample": _sample(free, out["undated_sample"]),
            "rows_embedded": swept,
        },
        check_results=[_checked(memory, "legacy_rows_exported")],
    )


@dg.asset(
    deps=[legacy_rows_exported],
    partitions_def=home_partitions,
    group_name="legacy",
    kinds={"lancedb"},
    output_required=False,
    check_specs=[_check("legacy_rows_deleted")],
    description="The legacy rows deleted from the table, once every one is recorded in the markdown: backed "
    "up first (a directory copy of a local table, else a LanceDB tag), then deleted through the indexer "
    "and the counts verified. Needs `confirm: true` in the run config; without it the run reports what "
    "it would do (an observation) and changes nothing. Refuses while any legacy row is recorded nowhere.",
)
def legacy_rows_deleted(
    context: dg.AssetExecutionContext,
    config: LegacyApplyConfig,
    memory: MemoryHomeResource,
    embedder: EmbedderResource,
) -> Iterator[dg.Output[None] | dg.AssetObservation | dg.AssetCheckResult]:
    settings = memory.settings()
    settings.require_initialised()
    # A confirmed apply to the home's own index sweeps it first, with the run's embedder.
    home = Home(settings, embedder.get() if config.confirm and config.table is None else None)
    free = TextFree(settings.state_dir)
    try:
        result = apply_legacy(home, config.table, confirm=config.confirm)
    except LegacyError as exc:
        # from None: Dagster would keep the cause's own message, which quotes rows (text_free.py)
        raise dg.Failure(free.line(str(exc))) from None
    free.log(context.log, "info", result.notes)
    metadata: dict[str, object] = {
        "confirmed": result.confirmed,
        "table": f"{result.uri} ({result.table})",
        "legacy_rows": result.legacy_rows,
        "rows_before": result.rows_before,
        "deleted": result.deleted,
        "backup": result.backup or "-",
        "backup_copy": result.backup_copy or "-",
        "restore": result.restore or "-",
        "notes": dg.MetadataValue.md(free.bullets(result.notes)),
    }
    if not result.confirmed:
        context.log.warning(
            "not confirmed: nothing was deleted. Launch again with run config "
            "`ops: {legacy_rows_deleted: {config: {confirm: true}}}` to back up and delete."
        )
        yield dg.AssetObservation(asset_key=context.asset_key, metadata=metadata)
        yield _checked(memory, "legacy_rows_deleted")
        return
    metadata["rows_after"] = result.rows_after if result.rows_after is not None else -1
    if result.deleted and config.table is None:
        context.log_event(
            dg.AssetMaterialization(asset_key=archival_memories.key, metadata={"reason": "legacy apply"})
        )
    yield dg.Output(None, metadata=metadata)
    yield _checked(memory, "legacy_rows_deleted")
