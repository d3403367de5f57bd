"""Sensors that replace the assistant's 300 s mtime watcher (daily logs, vault pages and core files,
transcripts), and the index maintenance sensor.

They translate: the index's questions of a home (``core/ops/upkeep/index_look.py``: ``IndexScan``, over
``core/index/freshness.py``) decides which days and files are stale and due for a request
(freshness, not change; retries with backoff; a cursor that is only a cache), as the homes planner
asks it, and these sensors turn its answer into run requests, the external assets'
materialisation events and log lines. The maintenance sensor asks ``table_look`` (the maintenance
clock, ``core/index/maintenance.py``, as the homes planner and the memory service do) whether the
table wants an optimize.
"""

from typing import Any

import dagster as dg

from memory_assets.core.home import Home
from memory_assets.core.index.freshness import Cursor, RunState
from memory_assets.core.index.maintenance import FRAGMENTS_SOFT, VERSIONS_SOFT, MaintenanceClock
from memory_assets.core.ops.upkeep.index_look import IndexScan, table_look
from memory_assets.defs.automation import IN_FLIGHT, in_flight, single_home_sensor
from memory_assets.defs.index.assets import archival_memories, archive_index, transcript_index
from memory_assets.defs.index.external import (
    consolidation_log,
    core_files,
    daily_logs,
    tombstones,
    vault_pages,
)
from memory_assets.defs.index.jobs import index_files_job, optimize_index_job, reindex_job
from memory_assets.defs.partitions import day_key, register_days_requests


def run_states(instance: dg.DagsterInstance) -> Any:
    """``run_key -> RunState`` over this instance's runs (the freshness module's question)."""

    def state(run_key: str) -> RunState:
        runs = instance.get_runs(dg.RunsFilter(tags={"dagster/run_key": run_key}), limit=1)
        if not runs:
            return RunState.UNKNOWN
        return RunState.IN_FLIGHT if runs[0].status in IN_FLIGHT else RunState.ENDED

    return state


def _external_events(cursor: Cursor, specs: list[tuple[dg.AssetSpec, Any, dict[str, Any]]]) -> list:
    events = []
    for spec, path, extra in specs:
        if cursor.changed(spec.key.to_user_string(), path):
            events.append(
                dg.AssetMaterialization(asset_key=spec.key, metadata={"size": path.stat().st_size, **extra})
            )
    return events


@single_home_sensor(
    [reindex_job],
    "Reindex exactly the days whose index is out of date: an append, a matching tombstone, "
    "the watermark passing a day, a deleted log; a failed or lost run is requested again with backoff.",
    folder=lambda home: home.settings.archive_dir,
)
def daily_log_sensor(context: dg.SensorEvaluationContext, home: Home) -> dg.SensorResult:
    settings = home.settings
    cursor = Cursor.load(context.cursor)
    # Every day is addressable: a day partition is added for each log (and each day requested), so
    # no day is ever outside the partitions (defs/partitions.py).
    scan = IndexScan(home).days(cursor, run_states(context.instance))
    watermark = scan.watermark
    registers = register_days_requests(context.instance, scan.logs + [s.day for s in scan.stale])
    events: list = [
        dg.AssetMaterialization(
            asset_key=daily_logs.key,
            partition=day_key(g.day),
            metadata={"size": g.size, "facts": g.facts, "skipped_lines": g.skipped_lines},
        )
        for g in scan.grown
    ]
    # A day whose index already matches its log though no run of archive_index recorded it (the
    # write path, the CLI or the assistant indexed it, or the dream consolidated it) is recorded
    # once, as a materialisation this sensor reports: the UI shows no missing work where none is.
    materialized = context.instance.get_materialized_partitions(archive_index.key)
    events += [
        dg.AssetMaterialization(
            asset_key=archive_index.key,
            partition=day_key(day),
            metadata={
                "reported_by": "daily_log_sensor",
                "reason": "the index already matches this log; no run of archive_index recorded it (the "
                "write path, the CLI or the assistant indexed it, or the dream consolidated it)",
            },
        )
        for day in scan.current
        if day_key(day) not in materialized
    ]
    runs = [
        dg.RunRequest(
            partition_key=day_key(s.day), run_key=s.run_key, tags={"memory_assets/attempt": str(s.attempt)}
        )
        for s in scan.stale
    ]
    events += _external_events(
        cursor,
        [
            (tombstones, settings.tombstones_path, {}),
            (
                consolidation_log,
                settings.log_md,
                {"watermark": watermark.isoformat() if watermark else "none"},
            ),
        ],
    )
    if not runs and not events and not registers:
        return dg.SensorResult(
            skip_reason="the index is up to date with every daily log", cursor=cursor.dump()
        )
    return dg.SensorResult(
        run_requests=runs,
        asset_events=events,
        dynamic_partitions_requests=registers,
        cursor=cursor.dump(),
    )


@single_home_sensor(
    [index_files_job],
    "Reindex exactly the vault pages and core files whose index is out of date (edits, "
    "deletions, tombstones, a page going stale); a failed or lost run is requested again with backoff.",
    folder=lambda home: home.settings.notebook_dir,
)
def vault_sensor(context: dg.SensorEvaluationContext, home: Home) -> dg.SensorResult:
    cursor = Cursor.load(context.cursor)
    scan = IndexScan(home).files(cursor, run_states(context.instance), ("notebook", "core"))
    due = {"vault_index": scan.pages, "core_file_index": scan.core_files}
    runs, events = [], []
    for asset_name, spec in (("vault_index", vault_pages), ("core_file_index", core_files)):
        if not due[asset_name]:
            continue
        keys = [f.key for f in due[asset_name]]
        run_key = f"{asset_name}:{cursor.generation}:{len(keys)}"
        runs.append(
            dg.RunRequest(
                run_key=run_key,
                asset_selection=[dg.AssetKey(asset_name)],
                run_config={"ops": {asset_name: {"config": {"files": keys}}}},
            )
        )
        for f in due[asset_name]:
            scan.freshness.requested(f.key, f.digest, run_key, f.attempt)
        events.append(
            dg.AssetMaterialization(
                asset_key=spec.key,
                metadata={
                    "changed_files": len(keys),
                    "files": dg.MetadataValue.md("\n".join(f"- `{k}`" for k in keys)),
                },
            )
        )
    if not runs:
        return dg.SensorResult(
            skip_reason="the index is up to date with every vault page and core file", cursor=cursor.dump()
        )
    return dg.SensorResult(run_requests=runs, asset_events=events, cursor=cursor.dump())


@single_home_sensor(
    [index_files_job],
    "Reindex exactly the transcripts whose rows are out of date (appended turns, a deleted "
    "transcript, a tombstone that hides a turn, a turn passing MEMORY_TRANSCRIPT_RETENTION_DAYS as the "
    "day turns): one transcript_index run naming them; a failed or lost run is requested again with backoff.",
)
def transcript_index_sensor(context: dg.SensorEvaluationContext, home: Home) -> dg.SensorResult:
    # A home with no transcripts folder may still have transcript rows (a folder deleted): the
    # index state names them, so the scan runs whatever the folder (no ``folder`` above).
    cursor = Cursor.load(context.cursor)
    scan = IndexScan(home).files(cursor, run_states(context.instance), ("transcript",))
    if not scan.transcripts:
        return dg.SensorResult(
            skip_reason="the index is up to date with every transcript", cursor=cursor.dump()
        )
    keys = [f.key for f in scan.transcripts]
    run_key = f"transcript_index:{cursor.generation}:{len(keys)}"
    for f in scan.transcripts:
        scan.freshness.requested(f.key, f.digest, run_key, f.attempt)
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                run_key=run_key,
                asset_selection=[transcript_index.key],
                run_config={"ops": {"transcript_index": {"config": {"files": keys}}}},
                tags={"memory_assets/attempt": str(max(f.attempt for f in scan.transcripts))},
            )
        ],
        cursor=cursor.dump(),
    )


@single_home_sensor(
    [optimize_index_job],
    f"Optimize archival_memories when it has more than {FRAGMENTS_SOFT} fragments or "
    f"{VERSIONS_SOFT} versions, or a day after the last optimize if the table changed since. A failed "
    "optimize is requested again the next hour.",
    interval_s=600,
)
def index_maintenance_sensor(context: dg.SensorEvaluationContext, home: Home) -> dg.SensorResult:
    last = context.instance.get_latest_materialization_event(archival_memories.key)
    last_at = last.timestamp if last is not None else 0.0
    last_version = None
    if last is not None and last.asset_materialization is not None:
        value = last.asset_materialization.metadata.get("version")
        last_version = getattr(value, "value", None)
    table = table_look(home, MaintenanceClock(last_at, last_version))
    stats, reasons, now = table.stats, table.reasons, table.now
    if stats is None:
        return dg.SensorResult(skip_reason="no index table yet")
    if stats.legacy:
        return dg.SensorResult(
            skip_reason="the table is in the assistant's format: run `memory-assets migrate`"
        )
    if in_flight(context.instance, optimize_index_job):
        return dg.SensorResult(skip_reason="an optimize run is in flight")
    if not reasons:
        return dg.SensorResult(
            skip_reason=f"within bounds ({stats.fragments} fragments, {stats.versions} versions)"
        )
    run_key = f"optimize:{stats.version}:{int(now // 3600)}"  # at most one request per hour per version
    context.log.info("optimize requested: " + "; ".join(reasons))
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=run_key, tags={"memory_assets/reason": "; ".join(reasons)[:200]})]
    )


INDEX_SENSORS = [daily_log_sensor, vault_sensor, transcript_index_sensor, index_maintenance_sensor]
