"""Sensors that replace the assistant's 300 s mtime watcher, and the index maintenance sensor.

Freshness, not change. A sensor requests a reindex of a file exactly when the index is out of
date for it: the digest of the rows the file should produce (the plan the indexer executes)
differs from the digest the index state recorded after the file's last successful reindex,
whatever the cursor says. So:

* a run that failed, was cancelled or was lost is requested again, with backoff (30 s doubling
  to an hour), with no change to the file: fix the cause (a bad model setting, a full disk) and
  the partition heals by itself;
* the first tick after ``make demo`` (or after any other indexing) requests nothing;
* a deleted file whose rows are still indexed is requested until its rows are gone.

The cursor is a cache and a memo, never the truth: the stat signature and digest of each file
that can still change the index (days at or below the watermark are not kept) and the requests
in flight. A tick stats the files and re-reads only those whose (inode, size, mtime) changed, or
all of them when the tombstones or ``log.md`` changed, so its cost does not grow with history.
Run keys carry a generation stored in the cursor, so a re-evaluated tick dedupes while a later
request for the same content (a retry, a restored file) gets a new run.
"""

import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import dagster as dg

from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.durable import stat_signature
from memory_assets.core.index.index_state import IndexState
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.rows import ARCHIVE, CORE_FILES, FilePlan
from memory_assets.core.index.store import MAX_FRAGMENTS, MAX_VERSIONS
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.defs.index.assets import archival_memories
from memory_assets.defs.index.external import (
    consolidation_log,
    core_files,
    daily_logs,
    tombstones,
    vault_pages,
)
from memory_assets.defs.index.jobs import index_files_job, optimize_index_job, reindex_job
from memory_assets.defs.partitions import partitions_start
from memory_assets.defs.resources import MemoryHomeResource

CURSOR_VERSION = 2
RETRY_BASE_S = 30  # the first retry of a failed run waits this long; each further one twice as long
RETRY_MAX_S = 3600
LOST_AFTER_S = 300  # a requested run that never appeared is requested again after this
IN_FLIGHT = {
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.MANAGED,
    dg.DagsterRunStatus.CANCELING,
    dg.DagsterRunStatus.SUSPENDED,
}
DIGEST_CHARS = 16
EMPTY_DIGEST = FilePlan("archive", "", ARCHIVE).digest()[:DIGEST_CHARS]


def _now() -> float:
    return time.time()


def _short(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _sig(path_sig: tuple[int, int, int] | None) -> str:
    return "-" if path_sig is None else "{}:{}:{}".format(*path_sig)


@dataclass
class Cursor:
    # key -> [file stat signature, inputs signature, digest, ...]: a digest is reused while both
    # match. Digests are kept to 16 hex characters (64 bits), signatures to 8, so 1,000 logs take
    # about 60 KB.
    files: dict[str, list[Any]] = field(default_factory=dict)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> request in flight
    aux: dict[str, str] = field(default_factory=dict)  # external assets' signatures
    outside: list[str] = field(default_factory=list)  # days already reported as outside the partitions
    generation: int = 0

    @classmethod
    def load(cls, raw: str | None) -> "Cursor":
        data = json.loads(raw) if raw else {}
        if data.get("v") != CURSOR_VERSION:  # an older cursor is only a cache: start afresh
            return cls()
        return cls(
            data.get("files", {}),
            data.get("pending", {}),
            data.get("aux", {}),
            data.get("outside", []),
            data.get("generation", 0),
        )

    def dump(self) -> str:
        return json.dumps(
            {
                "v": CURSOR_VERSION,
                "files": self.files,
                "pending": self.pending,
                "aux": self.aux,
                "outside": self.outside,
                "generation": self.generation,
            },
            separators=(",", ":"),
        )


class Freshness:
    """Decides, per stale file, whether to request a run now (and with which attempt number)."""

    def __init__(self, context: dg.SensorEvaluationContext, cursor: Cursor, state: dict[str, str]):
        self.instance = context.instance
        self.cursor = cursor
        self.state = state
        self.now = _now()
        self._status: dict[str, dg.DagsterRunStatus | None] = {}
        cursor.generation += 1

    def up_to_date(self, key: str, digest: str | None) -> bool:
        """``digest`` None: the file is gone, so the index is up to date once it forgot the file."""
        recorded = self.state.get(key)
        fresh = recorded is None if digest is None else (recorded or "")[:DIGEST_CHARS] == digest
        if fresh:
            self.cursor.pending.pop(key, None)
        return fresh

    def _run_status(self, run_key: str) -> dg.DagsterRunStatus | None:
        if run_key not in self._status:
            runs = self.instance.get_runs(dg.RunsFilter(tags={"dagster/run_key": run_key}), limit=1)
            self._status[run_key] = runs[0].status if runs else None
        return self._status[run_key]

    def due(self, key: str, digest: str | None) -> int | None:
        """The attempt number to request now, or None to wait (a run in flight, or backing off)."""
        pending = self.cursor.pending.get(key)
        if pending is None or pending["digest"] != (digest or "-"):
            return 0
        status = self._run_status(pending["run_key"])
        if status in IN_FLIGHT:
            return None
        age = self.now - pending["at"]
        if status is None and age < LOST_AFTER_S:
            return None  # requested, not launched yet
        if age < min(RETRY_BASE_S * 2 ** pending["attempt"], RETRY_MAX_S):
            return None
        return int(pending["attempt"]) + 1

    def requested(self, key: str, digest: str | None, run_key: str, attempt: int) -> None:
        self.cursor.pending[key] = {
            "digest": digest or "-",
            "run_key": run_key,
            "at": self.now,
            "attempt": attempt,
        }


def _external_events(cursor: Cursor, specs: list[tuple[dg.AssetSpec, Any, dict[str, Any]]]) -> list:
    events = []
    for spec, path, extra in specs:
        sig = _sig(stat_signature(path))
        name = spec.key.to_user_string()
        if sig != "-" and cursor.aux.get(name) != sig:
            events.append(
                dg.AssetMaterialization(asset_key=spec.key, metadata={"size": path.stat().st_size, **extra})
            )
            cursor.aux[name] = sig
    return events


@dg.sensor(
    job=reindex_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Reindex exactly the days whose index is out of date: an append, a matching tombstone, "
    "the watermark passing a day, a deleted log; a failed or lost run is requested again with backoff.",
)
def daily_log_sensor(context: dg.SensorEvaluationContext, memory: MemoryHomeResource) -> dg.SensorResult:
    settings = memory.settings()
    if not settings.archive_dir.is_dir():
        return dg.SensorResult(skip_reason=f"{settings.archive_dir} does not exist; run `memory-assets init`")
    cursor = Cursor.load(context.cursor)
    indexer = Indexer(settings)
    state = IndexState.load(settings.index_state_path, indexer.store.table_id).files
    # Every day's rows depend on the tombstones and the watermark too.
    # (and the days the dream skipped, which keep their rows below the watermark).
    inputs = _short(
        "|".join(
            _sig(stat_signature(p))
            for p in (settings.tombstones_path, settings.log_md, settings.dream_state_path)
        )
    )
    freshness = Freshness(context, cursor, state)
    watermark = indexer.watermark()
    first, today = partitions_start(), datetime.now(UTC).date()
    days = {d for d, _ in list_logs(settings.archive_dir)}
    days |= {date.fromisoformat(k[8:18]) for k in state if k.startswith("archive:") and len(k) == 21}
    files: dict[str, list[str]] = {}
    runs, events = [], []
    for day in sorted(days):
        key = f"archive:{day.isoformat()}.md"
        path = settings.archive_dir / f"{day.isoformat()}.md"
        sig = stat_signature(path)
        digest: str | None
        consolidated = indexer.consolidated(day, watermark)
        if consolidated:
            digest = EMPTY_DIGEST if key in state else None  # no rows; nothing to track any more
        elif sig is None:
            digest = None
        else:
            cached = cursor.files.get(key)
            if cached is not None and cached[:2] == [_short(_sig(sig)), inputs]:
                digest, facts = cached[2], cached[3]
            else:
                plan = indexer.plan_day(day, indexer.tombstones(), watermark, read_watermark_file=False)
                digest, facts = plan.digest()[:DIGEST_CHARS], len(plan.rows) + plan.tombstoned
                if cached is None or cached[3] != facts:  # the log gained facts (a touch is no change)
                    events.append(
                        dg.AssetMaterialization(
                            asset_key=daily_logs.key,
                            partition=day.isoformat(),
                            metadata={"size": sig[1], "facts": facts, "skipped_lines": plan.skipped_lines},
                        )
                    )
            files[key] = [_short(_sig(sig)), inputs, digest, facts]
        if not first <= day <= today:
            # A consolidated day has no rows to index: nothing is lost by its missing partition.
            if not consolidated and day.isoformat() not in cursor.outside:
                cursor.outside.append(day.isoformat())
                context.log.warning(
                    f"archive/{day.isoformat()}.md is outside the day partitions ({first} to {today}); "
                    "set MEMORY_PARTITIONS_START or reload the code location to index it"
                )
            continue
        if freshness.up_to_date(key, digest):
            continue
        attempt = freshness.due(key, digest)
        if attempt is None:
            continue
        run_key = f"{key}:{(digest or 'gone')[:16]}:{cursor.generation}"
        runs.append(
            dg.RunRequest(
                partition_key=day.isoformat(), run_key=run_key, tags={"memory_assets/attempt": str(attempt)}
            )
        )
        freshness.requested(key, digest, run_key, attempt)
    cursor.files = files
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
    if not runs and not events:
        return dg.SensorResult(
            skip_reason="the index is up to date with every daily log", cursor=cursor.dump()
        )
    return dg.SensorResult(run_requests=runs, asset_events=events, cursor=cursor.dump())


@dg.sensor(
    job=index_files_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Reindex exactly the vault pages and core files whose index is out of date (edits, "
    "deletions, tombstones, a page going stale); a failed or lost run is requested again with backoff.",
)
def vault_sensor(context: dg.SensorEvaluationContext, memory: MemoryHomeResource) -> dg.SensorResult:
    settings = memory.settings()
    if not settings.notebook_dir.is_dir():
        return dg.SensorResult(
            skip_reason=f"{settings.notebook_dir} does not exist; run `memory-assets init`"
        )
    cursor = Cursor.load(context.cursor)
    indexer = Indexer(settings)
    state = IndexState.load(settings.index_state_path, indexer.store.table_id).files
    # A page's rows depend on the tombstones and on today's date (stale_after passing) too.
    inputs = _short(_sig(stat_signature(settings.tombstones_path)) + "|" + indexer.today.isoformat())
    freshness = Freshness(context, cursor, state)
    paths = {f"notebook:{rel}": settings.notebook_dir / rel for rel in list_pages(settings.notebook_dir)}
    paths |= {f"{label}:{name}": settings.core_file_path(name) for name, label in CORE_FILES.items()}
    for key in state:
        if key.startswith("notebook:"):
            paths.setdefault(key, settings.notebook_dir / key.removeprefix("notebook:"))
        elif key.partition(":")[2] in CORE_FILES:
            paths.setdefault(key, settings.core_file_path(key.partition(":")[2]))
    files: dict[str, list[str]] = {}
    due: dict[str, list[tuple[str, str | None, int]]] = {"vault_index": [], "core_file_index": []}
    for key, path in sorted(paths.items()):
        sig = stat_signature(path)
        digest: str | None = None
        if sig is not None:
            cached = cursor.files.get(key)
            if cached is not None and cached[:2] == [_short(_sig(sig)), inputs]:
                digest = cached[2]
            else:
                plan = indexer.plan_key(key, indexer.tombstones())
                digest = plan.digest()[:DIGEST_CHARS] if plan is not None else None
            if digest is not None:
                files[key] = [_short(_sig(sig)), inputs, digest]
        if freshness.up_to_date(key, digest):
            continue
        attempt = freshness.due(key, digest)
        if attempt is not None:
            due["vault_index" if key.startswith("notebook:") else "core_file_index"].append(
                (key, digest, attempt)
            )
    cursor.files = files
    runs, events = [], []
    for asset_name, spec in (("vault_index", vault_pages), ("core_file_index", core_files)):
        if not due[asset_name]:
            continue
        keys = [k for k, _, _ in due[asset_name]]
        run_key = f"{asset_name}:{cursor.generation}:{len(keys)}"
        runs.append(
            dg.RunRequest(
                run_key=run_key,
                asset_selection=[dg.AssetKey(asset_name)],
                run_config={"ops": {asset_name: {"config": {"files": keys}}}},
            )
        )
        for key, digest, attempt in due[asset_name]:
            freshness.requested(key, digest, run_key, attempt)
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


FRAGMENTS_SOFT = MAX_FRAGMENTS // 4  # compact well before the check's bound
VERSIONS_SOFT = MAX_VERSIONS // 4
OPTIMIZE_EVERY_S = 24 * 3600


@dg.sensor(
    job=optimize_index_job,
    minimum_interval_seconds=600,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=f"Optimize archival_memories when it has more than {FRAGMENTS_SOFT} fragments or "
    f"{VERSIONS_SOFT} versions, or a day after the last optimize if the table changed since. A failed "
    "optimize is requested again the next hour.",
)
def index_maintenance_sensor(
    context: dg.SensorEvaluationContext, memory: MemoryHomeResource
) -> dg.SensorResult:
    store = memory.open().store
    if not store.exists():
        return dg.SensorResult(skip_reason="no index table yet")
    stats = store.stats()
    if stats.legacy:
        return dg.SensorResult(
            skip_reason="the table is in the assistant's format: run `memory-assets migrate`"
        )
    busy = context.instance.get_runs(
        dg.RunsFilter(job_name=optimize_index_job.name, statuses=list(IN_FLIGHT)), limit=1
    )
    if busy:
        return dg.SensorResult(skip_reason="an optimize run is in flight")
    last = context.instance.get_latest_materialization_event(archival_memories.key)
    last_at = last.timestamp if last is not None else 0.0
    last_version = None
    if last is not None and last.asset_materialization is not None:
        value = last.asset_materialization.metadata.get("version")
        last_version = getattr(value, "value", None)
    now = _now()
    reasons = []
    if stats.fragments > FRAGMENTS_SOFT:
        reasons.append(f"{stats.fragments} fragments > {FRAGMENTS_SOFT}")
    if stats.versions > VERSIONS_SOFT:
        reasons.append(f"{stats.versions} versions > {VERSIONS_SOFT}")
    if now - last_at >= OPTIMIZE_EVERY_S and last_version != stats.version:
        reasons.append("a day since the last optimize and the table changed")
    if not reasons:
        return dg.SensorResult(
            skip_reason=f"within bounds ({stats.fragments} fragments, {stats.versions} versions)"
        )
    run_key = f"optimize:{stats.version}:{int(now // 3600)}"  # at most one request per hour per version
    context.log.info("optimize requested: " + "; ".join(reasons))
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=run_key, tags={"memory_assets/reason": "; ".join(reasons)[:200]})]
    )


INDEX_SENSORS = [daily_log_sensor, vault_sensor, index_maintenance_sensor]
