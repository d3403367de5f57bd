"""Sensors that replace the assistant's 300 s mtime watcher.

Each keeps a cursor of ``label:filename`` -> digest of the rows the file should produce (the
same plan the indexer executes), so a run is requested exactly when the index would change:
an append, a tombstone matching the file, the watermark passing a day, a page going stale, a
deleted file. A touch without a change requests nothing. Run keys carry the digest, so the same
content is never indexed twice. The sensors also report the external assets' changes.
"""

import hashlib
import json
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg

from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.rows import CORE_FILES
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.defs.index.external import (
    consolidation_log,
    core_files,
    daily_logs,
    tombstones,
    vault_pages,
)
from memory_assets.defs.index.jobs import index_files_job, reindex_job
from memory_assets.defs.partitions import daily_partitions
from memory_assets.defs.resources import MemoryHomeResource


def _sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _load(cursor: str | None) -> dict[str, dict[str, str]]:
    data = json.loads(cursor) if cursor else {}
    return {k: dict(data.get(k, {})) for k in ("rows", "files", "aux")}


def _next_generation(cursor: dict[str, dict[str, str]]) -> int:
    """A counter stored in the cursor, bumped on every tick that requests runs. Run keys carry it, so
    a re-evaluated tick (cursor not yet saved) dedupes, while content that comes back later (a
    deleted log restored) is not mistaken for the run that indexed it the first time."""
    generation = int(cursor["aux"].get("generation", "0")) + 1
    cursor["aux"]["generation"] = str(generation)
    return generation


def _partition_ok(day: date, now: datetime) -> bool:
    with dg.partition_loading_context(effective_dt=now):
        return daily_partitions.has_partition_key(day.isoformat())


@dg.sensor(
    job=reindex_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Daily logs, tombstones and the watermark -> reindex exactly the days whose rows change.",
)
def daily_log_sensor(context: dg.SensorEvaluationContext, memory: MemoryHomeResource) -> dg.SensorResult:
    settings = memory.settings()
    if not settings.archive_dir.is_dir():
        return dg.SensorResult(skip_reason=f"{settings.archive_dir} does not exist; run `memory-assets init`")
    cursor = _load(context.cursor)
    indexer = Indexer(settings)
    tombs, watermark = indexer.tombstones(), indexer.watermark()
    now = datetime.now(UTC)
    days = {d for d, _ in list_logs(settings.archive_dir)}
    days |= {date.fromisoformat(k.split(":", 1)[1][:10]) for k in cursor["rows"]}
    runs, events = [], []
    generation = _next_generation(cursor)
    for day in sorted(days):
        plan = indexer.plan_day(day, tombs, watermark, read_watermark_file=False)
        digest, sha = plan.digest(), _sha(settings.archive_dir / plan.filename)
        if not _partition_ok(day, now):
            context.log.warning(
                f"archive/{plan.filename} is outside the day partitions "
                f"(MEMORY_PARTITIONS_START); not indexed by the sensor"
            )
            continue
        if sha is not None and cursor["files"].get(plan.key) != sha:
            events.append(
                dg.AssetMaterialization(
                    asset_key=daily_logs.key,
                    partition=day.isoformat(),
                    metadata={"sha256": sha, "below_watermark": plan.below_watermark}
                    if plan.below_watermark
                    else {
                        "sha256": sha,
                        "facts": len(plan.rows) + plan.tombstoned,
                        "skipped_lines": plan.skipped_lines,
                    },
                )
            )
            cursor["files"][plan.key] = sha
        if cursor["rows"].get(plan.key) != digest:
            runs.append(
                dg.RunRequest(partition_key=day.isoformat(), run_key=f"{plan.key}:{digest[:16]}:{generation}")
            )
            cursor["rows"][plan.key] = digest
    for spec, path, extra in (
        (tombstones, settings.tombstones_path, {"tombstones": len(tombs.contents)}),
        (consolidation_log, settings.log_md, {"watermark": watermark.isoformat() if watermark else "none"}),
    ):
        sha = _sha(path)
        if sha is not None and cursor["aux"].get(spec.key.to_user_string()) != sha:
            events.append(dg.AssetMaterialization(asset_key=spec.key, metadata={"sha256": sha, **extra}))
            cursor["aux"][spec.key.to_user_string()] = sha
    if not runs and not events:
        return dg.SensorResult(skip_reason="no daily log changes the index", cursor=json.dumps(cursor))
    return dg.SensorResult(run_requests=runs, asset_events=events, cursor=json.dumps(cursor))


@dg.sensor(
    job=index_files_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Vault pages and core files -> reindex exactly the files whose rows change (deletions too).",
)
def vault_sensor(context: dg.SensorEvaluationContext, memory: MemoryHomeResource) -> dg.SensorResult:
    settings = memory.settings()
    if not settings.notebook_dir.is_dir():
        return dg.SensorResult(
            skip_reason=f"{settings.notebook_dir} does not exist; run `memory-assets init`"
        )
    cursor = _load(context.cursor)
    indexer = Indexer(settings)
    tombs = indexer.tombstones()
    plans = [indexer.plan_page(rel, tombs) for rel in list_pages(settings.notebook_dir)]
    plans += [indexer.plan_core(name, tombs) for name in CORE_FILES]
    known = {p.key for p in plans}
    for key in cursor["rows"]:
        if key not in known:  # a page deleted since the last tick
            label, _, filename = key.partition(":")
            plans.append(
                indexer.plan_page(filename, tombs)
                if label == "notebook"
                else indexer.plan_core(filename, tombs)
            )
    changed = {"vault_index": [], "core_file_index": []}
    for plan in plans:
        digest = plan.digest()
        if not plan.exists and plan.key not in cursor["rows"]:
            continue  # a core file that never existed
        if cursor["rows"].get(plan.key) != digest:
            changed["vault_index" if plan.label == "notebook" else "core_file_index"].append(plan.key)
            if plan.exists:
                cursor["rows"][plan.key] = digest
            else:
                cursor["rows"].pop(plan.key, None)
    runs, events = [], []
    generation = _next_generation(cursor)
    for asset_name, spec in (("vault_index", vault_pages), ("core_file_index", core_files)):
        keys = sorted(changed[asset_name])
        if not keys:
            continue
        run_key = hashlib.sha256(json.dumps([(k, cursor["rows"].get(k)) for k in keys]).encode()).hexdigest()[
            :24
        ]
        runs.append(
            dg.RunRequest(
                run_key=f"{asset_name}:{run_key}:{generation}",
                asset_selection=[dg.AssetKey(asset_name)],
                run_config={"ops": {asset_name: {"config": {"files": keys}}}},
            )
        )
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
            skip_reason="no vault page or core file changes the index", cursor=json.dumps(cursor)
        )
    return dg.SensorResult(run_requests=runs, asset_events=events, cursor=json.dumps(cursor))


INDEX_SENSORS = [daily_log_sensor, vault_sensor]
