"""The derived tier: index rows per day, per vault page, per core file, per transcript (the recall
tier), and the table itself."""

import warnings
from collections.abc import Iterator
from datetime import date

import dagster as dg

from memory_assets.core.home import Home
from memory_assets.core.index.indexer import FileResult, OptimizeResult, SweepResult
from memory_assets.core.ops.reindex import (
    DayRows,
    reindex_day,
    reindex_days,
    reindex_every_day,
    transcript_rows,
)
from memory_assets.core.outcome import CheckOutcome
from memory_assets.core.settings import Settings
from memory_assets.defs.index.external import (
    consolidation_log,
    core_files,
    daily_logs,
    tombstones,
    vault_pages,
)
from memory_assets.defs.partitions import (
    DAYS_PER_RUN,
    MANY_HOMES,
    day_backfill_policy,
    day_of,
    day_partitions,
    home_partitions,
)
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.text_free import TextFree


class FilesConfig(dg.Config):
    """Which files to reindex, as ``label:filename`` keys (``notebook:3_Personal/Health.md``,
    ``facts:MEMORY.md``). Unset: every file of the asset's kind (a sweep)."""

    files: list[str] | None = None


class DaysConfig(dg.Config):
    """Many homes: which of the user's days to reindex, as ISO dates (the homes sensor names the
    stale ones). Unset: every daily log of the user's (a backfill). A single home's run takes its
    days from its partitions and refuses this."""

    days: list[str] | None = None


def _home(memory: MemoryHomeResource, embedder: EmbedderResource) -> Home:
    # The embedder is handed over unloaded; the model loads only if a row needs embedding.
    return memory.open(embedder).ready()


def _log_warnings(context: dg.AssetExecutionContext, settings: Settings, warnings: list[str]) -> None:
    TextFree(settings.state_dir).log(context.log, "warning", warnings)


ROWS_MATCH_LOG = "The day's stored rows are exactly its parsed fact lines minus tombstoned ones (none at or below the watermark)."

with warnings.catch_warnings():
    # A partitioned check spec is in preview in dagster 1.13 (pinned); it is what makes each
    # evaluation carry its day, so the UI shows the check per partition.
    warnings.simplefilter("ignore", dg.PreviewWarning)
    ROWS_MATCH_LOG_SPEC = dg.AssetCheckSpec(
        "rows_match_log", asset="archive_index", partitions_def=day_partitions, description=ROWS_MATCH_LOG
    )
    # A single home: a backfill over a long range of days is a few runs, not one per day. Many
    # homes: no policy, so a backfill is one run per user, each held by the per-user limit
    # (defs/partitions.py); a user's days are inside the user's run.
    ARCHIVE_BACKFILL_POLICY = day_backfill_policy(DAYS_PER_RUN)


def day_rows_check(rows: DayRows) -> dg.AssetCheckResult:
    """The table compared with the plan the reindex applied (under its lock), for one day."""
    day = rows.day
    return dg.AssetCheckResult(
        check_name="rows_match_log",
        passed=rows.matches,
        metadata={
            "partition": day.isoformat(),
            "expected_rows": rows.expected,
            "stored_rows": rows.stored,
            "missing": rows.missing,
            "unexpected": rows.unexpected,
            "folded": rows.result.folded,
        },
        description=ROWS_MATCH_LOG
        if rows.matches
        else f"archive/{day.isoformat()}.md: {rows.missing} row(s) missing, {rows.unexpected} unexpected; "
        "rematerialise this partition (or run `memory-assets reindex --full`)",
    )


def _file_metadata(result: FileResult) -> dict[str, object]:
    return {
        "rows": result.rows,
        "embedded": result.embedded,
        "computed": result.computed,
        "deleted": result.deleted,
        "inserted": result.inserted,
        "updated": result.updated,
        "commits": result.commits,
        "tombstoned": result.tombstoned,
        "repaired_duplicates": result.repaired,
        "skipped_lines": result.skipped_lines,
        "folded": result.folded,
        "fallback_full_replace": result.fallback,
        "seconds": round(result.seconds, 4),
    }


def _range_check_evaluation(
    context: dg.AssetExecutionContext, key: str, check: dg.AssetCheckResult
) -> dg.AssetCheckEvaluation:
    """``check`` as the evaluation of partition ``key`` of a run over a range of days (Dagster
    attributes a check result to a partition only in a one-partition run), aimed at that
    partition's materialisation, which this run has just recorded."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=archive_index.key, asset_partitions=[key]), limit=1
    ).records
    target = None
    if records:
        # Not exported by dagster 1.13 (pinned); its own check-result path builds it the same way.
        from dagster._core.definitions.asset_checks.asset_check_evaluation import (
            AssetCheckEvaluationTargetMaterializationData,
        )

        target = AssetCheckEvaluationTargetMaterializationData(
            run_id=records[0].event_log_entry.run_id,
            storage_id=records[0].storage_id,
            timestamp=records[0].timestamp,
        )
    return dg.AssetCheckEvaluation(
        asset_key=archive_index.key,
        check_name=ROWS_MATCH_LOG_SPEC.name,
        passed=bool(check.passed),
        metadata=dict(check.metadata or {}),
        description=check.description,
        severity=check.severity,
        partition=key,
        target_materialization_data=target,
    )


with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.BetaWarning)  # backfill_policy: see ARCHIVE_BACKFILL_POLICY

    @dg.asset(
        partitions_def=day_partitions,
        backfill_policy=ARCHIVE_BACKFILL_POLICY,
        deps=[daily_logs, tombstones, consolidation_log],
        group_name="index",
        kinds={"lancedb"},
        check_specs=[ROWS_MATCH_LOG_SPEC],
        description="archival_memories rows of daily logs (source_type archive_log): a diff, so only "
        "appended lines are embedded and removed or tombstoned ones deleted. "
        + (
            "One partition per user: a run reindexes the days its config names (the homes sensor's stale "
            "days), or every day of the user's; a backfill is one run per user."
            if MANY_HOMES
            else f"One partition per day that has a log; a backfill runs up to {DAYS_PER_RUN} days per run."
        ),
    )
    def archive_index(
        context: dg.AssetExecutionContext,
        config: DaysConfig,
        memory: MemoryHomeResource,
        embedder: EmbedderResource,
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckEvaluation | dg.Output]:
        if MANY_HOMES:  # the run's one user (a run over several users is refused: defs/resources.py)
            yield _user_days(context, config, _home(memory, embedder))
            return
        if config.days is not None:
            raise dg.Failure(
                "archive_index config `days` is for many homes (MEMORY_ROOT); a single home's run "
                "reindexes the days of its partitions: select them instead"
            )
        keys = context.partition_keys
        checks: dict[str, dg.AssetCheckResult] = {}
        metadata: dict[str, dict[str, object]] = {}
        home = _home(memory, embedder)
        for key in keys:
            rows = reindex_day(home, day_of(key))
            _log_warnings(context, home.settings, rows.result.warnings)
            checks[key], metadata[key] = day_rows_check(rows), _file_metadata(rows.result)
        if len(keys) == 1:
            yield dg.MaterializeResult(metadata=metadata[keys[0]], check_results=[checks[keys[0]]])
            return
        for key in keys:
            context.add_asset_metadata(metadata[key], partition_key=key)
        # A run over a range: each day's materialisation carries its own numbers (above), and each
        # day's check is recorded against it once the materialisations are stored.
        yield dg.MaterializeResult(metadata={"days_in_run": len(keys)})
        for key in keys:
            yield _range_check_evaluation(context, key, checks[key])
        # The check's output, as Dagster yields it for a check result: marks the check as run.
        yield dg.Output(
            None, output_name=context.assets_def.get_output_name_for_asset_check_key(ROWS_MATCH_LOG_SPEC.key)
        )


def _config_days(config: DaysConfig) -> list[date]:
    days = []
    for raw in config.days or []:
        try:
            days.append(date.fromisoformat(raw))
        except ValueError:
            raise dg.Failure(
                f"archive_index config `days`: {raw!r} is not a day; give ISO dates (2026-11-20)"
            ) from None
    return sorted(set(days))


def _outcome_check(
    settings: Settings, name: str, outcome: CheckOutcome, description: str
) -> dg.AssetCheckResult:
    """The audit's ``outcome`` as the check ``name``: its numbers, and ``description`` when it
    passed, else its first problems, text-free."""
    return dg.AssetCheckResult(
        check_name=name,
        passed=outcome.passed,
        metadata={k: v for k, v in outcome.metadata.items() if isinstance(v, int | float)},
        description=description
        if outcome.passed
        else "; ".join(TextFree(settings.state_dir).lines(outcome.problems[:5])),
    )


def _user_days(context: dg.AssetExecutionContext, config: DaysConfig, home: Home) -> dg.MaterializeResult:
    """Many homes: reindex the user's days the config names, or every daily log of the user's
    (each a diff), then the comparison of ``rows_match_log`` over the same days."""
    if config.days is None:
        sweep, outcome = reindex_every_day(home)
        check = _outcome_check(home.settings, "rows_match_log", outcome, ROWS_MATCH_LOG)
    else:
        days = _config_days(config)
        sweep, found = reindex_days(home, days)
        checks = [(rows.day, day_rows_check(rows)) for rows in found]
        failed = [check.description or day.isoformat() for day, check in checks if not check.passed]
        check = dg.AssetCheckResult(
            check_name="rows_match_log",
            passed=not failed,
            metadata={"days": len(days), "days_failing": len(failed)},
            description=ROWS_MATCH_LOG if not failed else "; ".join(failed[:5]),
        )
    _log_warnings(context, home.settings, sweep.warnings)
    return dg.MaterializeResult(metadata=days_metadata(sweep), check_results=[check])


def days_metadata(sweep: SweepResult) -> dict[str, object]:
    """Many homes: ``archive_index``'s metadata for a reindex of a user's days (its run's, or a
    batch's for the user)."""
    metadata = sweep_metadata(sweep)
    changed = [f.key.removeprefix("archive:").removesuffix(".md") for f in sweep.files if f.changed]
    metadata["days_reindexed"] = len(sweep.files)
    metadata["days_changed"] = dg.MetadataValue.md(
        ", ".join(changed[:31]) + (f" and {len(changed) - 31} more" if len(changed) > 31 else "") or "_none_"
    )
    return metadata


def files_metadata(sweep: SweepResult, transcripts: bool = False) -> dict[str, object]:
    """The metadata of a reindex of vault pages, core files or (``transcripts``) transcripts."""
    metadata = sweep_metadata(sweep)
    if transcripts:
        metadata["tombstoned"] = sum(f.tombstoned for f in sweep.files)
    updated = [f.key for f in sweep.files if f.changed]
    metadata["updated_files"] = dg.MetadataValue.md("\n".join(f"- `{k}`" for k in updated) or "_none_")
    return metadata


def sweep_metadata(sweep: SweepResult) -> dict[str, object]:
    return {
        "files_checked": sweep.files_checked,
        "files_updated": sweep.files_updated,
        "embedded": sweep.embedded,
        "deleted": sweep.deleted,
        "rows": sum(f.rows for f in sweep.files),
        "table_rows": sweep.rows,
        "skipped_lines": sweep.skipped_lines,
        "repaired_duplicates": sweep.repaired,
        "seconds": round(sweep.seconds, 4),
    }


def _reindex_files(
    context: dg.AssetExecutionContext, config: FilesConfig, home: Home, label: str
) -> SweepResult:
    """The files ``config`` names reindexed, else every one of the index's ``label`` files (a
    sweep); the warnings logged."""
    keys = config.files
    sweep = home.indexer.reindex_files(keys=keys, labels=None if keys is not None else [label])
    _log_warnings(context, home.settings, sweep.warnings)
    return sweep


def _files_index(name: str, files: dg.AssetSpec, label: str, description: str) -> dg.AssetsDefinition:
    """The asset ``name``: the index rows of ``files`` (the index's ``label`` files), reindexed as
    ``_reindex_files`` says."""

    @dg.asset(
        name=name,
        deps=[files, tombstones],
        partitions_def=home_partitions,
        group_name="index",
        kinds={"lancedb"},
        description=description,
    )
    def files_index(
        context: dg.AssetExecutionContext,
        config: FilesConfig,
        memory: MemoryHomeResource,
        embedder: EmbedderResource,
    ) -> dg.MaterializeResult:
        sweep = _reindex_files(context, config, _home(memory, embedder), label)
        return dg.MaterializeResult(metadata=files_metadata(sweep))

    return files_index


vault_index = _files_index(
    "vault_index",
    vault_pages,
    "notebook",
    "archival_memories rows of the vault pages (source_type notebook): paragraph chunks, "
    "frontmatter parsed into importance (confirmations, status, stale_after, human verification).",
)

core_file_index = _files_index(
    "core_file_index",
    core_files,
    "core",
    "archival_memories rows of persona.md, user.md and MEMORY.md (source_type core_file); "
    "MEMORY.md chunked per zone.",
)


ROWS_MATCH_TRANSCRIPT = (
    "The run's transcripts' stored rows are exactly their planned rows (one a user message, a long "
    "one in windows, minus forgotten turns and turns past the retention): none missing, unexpected or stale."
)


def transcript_rows_check(home: Home, sweep: SweepResult) -> dg.AssetCheckResult:
    """``rows_match_transcripts`` over the files this run wrote, compared with the table now."""
    return _outcome_check(
        home.settings, "rows_match_transcript", transcript_rows(home, sweep), ROWS_MATCH_TRANSCRIPT
    )


@dg.asset(
    # The transcripts (an external asset of the write path's domain, by key): the assistant's own
    # and the turns the write path keeps (transcripts/captured/).
    deps=[dg.AssetKey("transcripts"), tombstones],
    partitions_def=home_partitions,
    group_name="index",
    kinds={"lancedb"},
    check_specs=[
        dg.AssetCheckSpec(
            "rows_match_transcript", asset="transcript_index", description=ROWS_MATCH_TRANSCRIPT
        )
    ],
    description="archival_memories rows of the transcripts (source_type transcript): the recall tier, one "
    "row per user message with its date (a long one in overlapping windows), importance 0.3. A diff, so "
    "only appended turns are embedded; a turn a person forgot, or older than "
    "MEMORY_TRANSCRIPT_RETENTION_DAYS (0, the default: never), leaves the index while its file keeps it. "
    "Config files: transcript:<path under transcripts/> keys; unset, every transcript.",
)
def transcript_index(
    context: dg.AssetExecutionContext,
    config: FilesConfig,
    memory: MemoryHomeResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    home = _home(memory, embedder)
    sweep = _reindex_files(context, config, home, "transcript")
    return dg.MaterializeResult(
        metadata=files_metadata(sweep, transcripts=True), check_results=[transcript_rows_check(home, sweep)]
    )


@dg.asset(
    # The reconcile's sweep runs before its optimize (index_swept, by key: defined with the reconcile).
    deps=[archive_index, vault_index, core_file_index, transcript_index, dg.AssetKey("index_swept")],
    partitions_def=home_partitions,
    group_name="index",
    kinds={"lancedb"},
    description="The LanceDB table archival_memories, compacted: optimize folds fragments and new rows "
    "into the indexes, prunes versions older than the retention (MEMORY_VERSION_RETENTION_DAYS, default "
    "1), and builds the ANN index above 50k rows. The index_maintenance sensor (RUNNING by default) "
    "requests it; a failure fails the run.",
)
def archival_memories(memory: MemoryHomeResource) -> dg.MaterializeResult:
    return dg.MaterializeResult(
        metadata=optimize_metadata(memory.open().indexer_without_embedder().optimize())
    )


def optimize_metadata(result: OptimizeResult) -> dict[str, object]:
    """``archival_memories``'s metadata for one optimize (its run's, or a batch's for a user)."""
    after = result.after
    return {
        **result.to_dict(),
        "version": after.version,
        "bytes": after.bytes,
        "indices": dg.MetadataValue.md(", ".join(f"`{i}`" for i in after.indices) or "_none_"),
    }


INDEX_ASSETS = [archive_index, vault_index, core_file_index, transcript_index, archival_memories]
