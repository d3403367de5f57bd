"""The sensors request a run exactly when the index is out of date, heal failed runs, and stay cheap."""

import json
import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_assets.core.backoff import RUN_RETRY
from memory_assets.core.capture.transcripts import keep_turn
from memory_assets.core.index import freshness
from memory_assets.core.index import indexer as indexer_module
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.maintenance import FRAGMENTS_SOFT
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.folds import ensure_ledger
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.knowledge.watermark import append_ingest_entry
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings
from memory_assets.defs.index.sensors import (
    daily_log_sensor,
    index_maintenance_sensor,
    transcript_index_sensor,
    vault_sensor,
)
from memory_assets.defs.resources import MemoryHomeResource
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.defs.daemon import apply_tick

D1, D2, D3 = date(2026, 11, 18), date(2026, 11, 19), date(2026, 11, 20)


_INSTANCES: dict[str, dg.DagsterInstance] = {}


def tick(
    sensor: dg.SensorDefinition,
    settings: Settings,
    cursor: str | None,
    instance: dg.DagsterInstance | None = None,
) -> dg.SensorResult:
    """One evaluation, then what the daemon does with its partition requests and asset events (on
    the home's instance: one ephemeral instance per home unless one is given)."""
    instance = instance or _INSTANCES.setdefault(str(settings.home), dg.DagsterInstance.ephemeral())
    with dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"memory": MemoryHomeResource(home=str(settings.home))},
    ) as context:
        result = sensor(context)
    apply_tick(instance, result)
    return result


def added(result: dg.SensorResult) -> list[str]:
    return [
        k
        for r in result.dynamic_partitions_requests or []
        if isinstance(r, dg.AddDynamicPartitionsRequest)
        for k in r.partition_keys
    ]


def partitions(result: dg.SensorResult) -> list[str]:
    return sorted(r.partition_key for r in result.run_requests or [])


def files_of(result: dg.SensorResult) -> list[list[str]]:
    return sorted(
        next(iter(r.run_config["ops"].values()))["config"]["files"] for r in result.run_requests or []
    )


def test_daily_log_sensor_requests_exactly_the_out_of_date_days(
    settings: Settings, embedder: Embedder
) -> None:
    indexer = Indexer(settings, embedder=embedder)
    for day in (D1, D2, D3):
        write_facts(settings, day, f"A fact written on {day}", "Prefers metric units in all answers")
    first = tick(daily_log_sensor, settings, None)
    assert partitions(first) == ["2026-11-18", "2026-11-19", "2026-11-20"]
    assert sorted(e.partition for e in first.asset_events if e.asset_key == dg.AssetKey("daily_logs")) == [
        "2026-11-18",
        "2026-11-19",
        "2026-11-20",
    ]
    waiting = tick(daily_log_sensor, settings, first.cursor)  # requested, not run yet: no second request
    assert partitions(waiting) == []
    for day in (D1, D2, D3):
        indexer.reindex_day(day)  # what the requested runs do
    cursor = tick(daily_log_sensor, settings, waiting.cursor).cursor

    log = settings.archive_dir / "2026-11-19.md"
    os.utime(log, (log.stat().st_atime + 100, log.stat().st_mtime + 100))  # a touch, no change
    touched = tick(daily_log_sensor, settings, cursor)
    assert partitions(touched) == [] and touched.skip_reason

    write_facts(settings, D2, "Something new on the 19th", hour=12)
    appended = tick(daily_log_sensor, settings, touched.cursor)
    assert partitions(appended) == ["2026-11-19"]
    assert appended.run_requests[0].run_key.startswith("archive:2026-11-19.md:")
    indexer.reindex_day(D2)

    append_tombstone(settings.tombstones_path, "A fact written on 2026-11-20")  # changes no log's bytes
    tomb = tick(daily_log_sensor, settings, appended.cursor)
    assert partitions(tomb) == ["2026-11-20"]
    assert dg.AssetKey("tombstones") in {e.asset_key for e in tomb.asset_events}
    indexer.reindex_day(D3)

    append_ingest_entry(settings.log_md, date(2026, 11, 20), D1)  # the watermark passes the 18th
    passed = tick(daily_log_sensor, settings, tomb.cursor)
    assert partitions(passed) == ["2026-11-18"]
    indexer.reindex_day(D1)
    settled = tick(daily_log_sensor, settings, passed.cursor)
    assert partitions(settled) == []
    # A day the watermark passed can still change the index: a line written to it later (a --at
    # replay, a late transcript) is pending, so indexed. The write path records the fold ledger's
    # baseline before it appends (as here), and the sensor requests the day again.
    assert "archive:2026-11-18.md" in json.loads(settled.cursor)["files"]
    ensure_ledger(settings)
    write_facts(settings, D1, "A late line for the 18th, written after the watermark passed it", hour=13)
    late = tick(daily_log_sensor, settings, settled.cursor)
    assert partitions(late) == ["2026-11-18"]
    assert indexer.reindex_day(D1).inserted == 1

    (settings.archive_dir / "2026-11-19.md").unlink()  # a deleted log: its rows must go
    deleted = tick(daily_log_sensor, settings, settled.cursor)
    assert partitions(deleted) == ["2026-11-19"]
    indexer.reindex_day(D2)
    assert partitions(tick(daily_log_sensor, settings, deleted.cursor)) == []


def test_an_indexed_home_needs_no_runs_whatever_the_cursor(settings: Settings, embedder: Embedder) -> None:
    """The first tick after `make demo` (an empty cursor over an indexed home) requests nothing."""
    for day in (D1, D2):
        write_facts(settings, day, f"A fact written on {day}")
    (settings.notebook_dir / "3_Personal" / "A.md").write_text("- Claim A.\n")
    Indexer(settings, embedder=embedder).sweep()
    assert partitions(tick(daily_log_sensor, settings, None)) == []
    assert files_of(tick(vault_sensor, settings, None)) == []


def test_a_failed_run_is_requested_again_and_heals_without_a_file_change(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A real instance: the requested run fails (a bad model setting), the cause is fixed, and the
    next request indexes the partition, with the log untouched."""
    from memory_assets.core.index.store import MemoryStore
    from memory_assets.definitions import defs

    write_facts(settings, D3, "Prefers metric units in all answers")
    log_bytes = (settings.archive_dir / "2026-11-20.md").read_bytes()
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def("reindex")
    clock = [1_000_000.0]
    monkeypatch.setattr(freshness, "clock", lambda: clock[0])

    first = tick(daily_log_sensor, settings, None, instance)
    [request] = first.run_requests
    monkeypatch.setenv("MEMORY_EMBEDDING_MODEL", str(tmp_path / "no-such-model"))
    failed = job.execute_in_process(
        partition_key=request.partition_key,
        instance=instance,
        tags={"dagster/run_key": request.run_key},
        raise_on_error=False,
    )
    assert not failed.success
    monkeypatch.delenv("MEMORY_EMBEDDING_MODEL")

    clock[0] += 5  # too soon: the failed run backs off before its retry
    assert partitions(tick(daily_log_sensor, settings, first.cursor, instance)) == []
    clock[0] += RUN_RETRY.first_s
    retry = tick(daily_log_sensor, settings, first.cursor, instance)
    [again] = retry.run_requests
    assert again.partition_key == "2026-11-20" and again.run_key != request.run_key
    assert again.tags["memory_assets/attempt"] == "1"
    healed = job.execute_in_process(
        partition_key=again.partition_key, instance=instance, tags={"dagster/run_key": again.run_key}
    )
    assert healed.success
    assert [c for _, c, _ in MemoryStore(settings.index_uri).contents()] == [
        "Prefers metric units in all answers"
    ]
    assert (settings.archive_dir / "2026-11-20.md").read_bytes() == log_bytes
    assert partitions(tick(daily_log_sensor, settings, retry.cursor, instance)) == []


def test_a_lost_request_is_made_again(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    write_facts(settings, D1, "Prefers metric units in all answers")
    clock = [2_000_000.0]
    monkeypatch.setattr(freshness, "clock", lambda: clock[0])
    first = tick(daily_log_sensor, settings, None)
    clock[0] += freshness.LOST_AFTER_S - 1
    assert partitions(tick(daily_log_sensor, settings, first.cursor)) == []
    clock[0] += 2  # no run ever appeared for the request
    assert partitions(tick(daily_log_sensor, settings, first.cursor)) == ["2026-11-18"]


def test_every_log_day_gets_a_partition_oldest_first_and_no_empty_day_does(settings: Settings) -> None:
    """Sparse logs: a partition for each day that has a log, however old, and none for the days
    between (defs/partitions.py); a day already added is not added again."""
    write_facts(settings, D2, "Written this month")
    write_facts(settings, date(2025, 6, 1), "Written a year and a half earlier")
    first = tick(daily_log_sensor, settings, None)
    assert added(first) == ["2025-06-01", "2026-11-19"]
    assert partitions(first) == ["2025-06-01", "2026-11-19"]
    write_facts(settings, D3, "Written the next day")
    second = tick(daily_log_sensor, settings, first.cursor)
    assert added(second) == ["2026-11-20"] and partitions(second) == ["2026-11-20"]
    instance = _INSTANCES[str(settings.home)]
    assert instance.get_dynamic_partitions("log_days") == ["2025-06-01", "2026-11-19", "2026-11-20"]
    # A log older than the newest day (restored from a backup): the keys stay in calendar order,
    # so a range of days is what it says.
    write_facts(settings, D1, "Restored from a backup")
    third = tick(daily_log_sensor, settings, second.cursor)
    assert added(third) == ["2026-11-18", "2026-11-19", "2026-11-20"] and partitions(third) == ["2026-11-18"]
    assert instance.get_dynamic_partitions("log_days") == [
        "2025-06-01",
        "2026-11-18",
        "2026-11-19",
        "2026-11-20",
    ]


def test_a_day_indexed_outside_dagster_is_recorded_once_as_materialised(
    settings: Settings, embedder: Embedder
) -> None:
    """`memory-assets reindex` (or the write path) indexed the logs: the first tick requests nothing
    and records each day's archive_index partition as materialised, once, so the UI shows no
    missing work; a day whose index is behind is requested, not recorded."""
    write_facts(settings, D1, "Indexed by the CLI")
    write_facts(settings, D2, "Also indexed by the CLI")
    Indexer(settings, embedder=embedder).sweep()
    write_facts(settings, D3, "Not indexed yet")
    first = tick(daily_log_sensor, settings, None)
    reported = sorted(e.partition for e in first.asset_events if e.asset_key == dg.AssetKey("archive_index"))
    assert reported == ["2026-11-18", "2026-11-19"] and partitions(first) == ["2026-11-20"]
    instance = _INSTANCES[str(settings.home)]
    assert instance.get_materialized_partitions(dg.AssetKey("archive_index")) == {"2026-11-18", "2026-11-19"}
    second = tick(daily_log_sensor, settings, first.cursor)
    assert not [e for e in second.asset_events or [] if e.asset_key == dg.AssetKey("archive_index")]


def test_a_consolidated_old_log_gets_a_partition_and_no_run(settings: Settings) -> None:
    """At or below the watermark a log has no rows to index: its day is listed, nothing is requested."""
    write_facts(settings, date(2025, 6, 1), "Exported from the assistant's table, then consolidated")
    append_ingest_entry(settings.log_md, date(2025, 6, 1), date(2025, 6, 1))
    first = tick(daily_log_sensor, settings, None)
    assert added(first) == ["2025-06-01"] and partitions(first) == []


def test_vault_sensor_requests_only_out_of_date_files(settings: Settings, embedder: Embedder) -> None:
    indexer = Indexer(settings, embedder=embedder)
    a = settings.notebook_dir / "3_Personal" / "A.md"
    b = settings.notebook_dir / "3_Personal" / "B.md"
    a.write_text("- Claim A.\n")
    b.write_text("- Claim B.\n")
    first = tick(vault_sensor, settings, None)
    assert files_of(first) == [["notebook:3_Personal/A.md", "notebook:3_Personal/B.md"]]
    indexer.reindex_files(keys=["notebook:3_Personal/A.md", "notebook:3_Personal/B.md"])
    os.utime(a, (a.stat().st_atime + 50, a.stat().st_mtime + 50))
    assert not tick(vault_sensor, settings, first.cursor).run_requests
    b.write_text("- Claim B, sharpened.\n")
    (settings.memory_dir / "MEMORY.md").write_text("My own notes.\n")
    second = tick(vault_sensor, settings, first.cursor)
    assert files_of(second) == [["facts:MEMORY.md"], ["notebook:3_Personal/B.md"]]
    indexer.reindex_files(keys=["facts:MEMORY.md", "notebook:3_Personal/B.md"])
    a.unlink()
    third = tick(vault_sensor, settings, second.cursor)
    assert files_of(third) == [["notebook:3_Personal/A.md"]]
    indexer.reindex_files(keys=["notebook:3_Personal/A.md"])
    assert not tick(vault_sensor, settings, third.cursor).run_requests


def test_a_tick_over_unchanged_logs_reads_none_of_them(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    for day in range(1, 8):
        write_facts(settings, date(2026, 10, day), f"Fact of October {day}")
    Indexer(settings, embedder=embedder).sweep()
    cursor = tick(daily_log_sensor, settings, None).cursor

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("an unchanged log was read")

    monkeypatch.setattr(Indexer, "plan_day", no_reading)
    again = tick(daily_log_sensor, settings, cursor)
    assert partitions(again) == [] and again.skip_reason


def test_maintenance_sensor_requests_optimize_past_its_soft_bounds(
    settings: Settings, embedder: Embedder
) -> None:
    from memory_assets.defs.index.assets import archival_memories

    indexer = Indexer(settings, embedder=embedder)
    for day in range(1, FRAGMENTS_SOFT + 3):
        write_facts(settings, date(2026, 10, day), f"Fact number {day} of October")
        indexer.reindex_day(date(2026, 10, day))  # one fragment each
    instance = dg.DagsterInstance.ephemeral()
    due = tick(index_maintenance_sensor, settings, None, instance)
    [request] = due.run_requests
    assert "fragments" in request.tags["memory_assets/reason"]
    result = dg.materialize(
        [archival_memories],
        instance=instance,
        resources={"memory": MemoryHomeResource(home=str(settings.home))},
    )
    meta = result.asset_materializations_for_node("archival_memories")[0].metadata
    # The optimize merges at most half the table's rows (core/index/compaction.py): 18 one-row
    # fragments become 10, under the bound the sensor asked it for.
    assert meta["fragments"].value < FRAGMENTS_SOFT < meta["fragments_before"].value
    within = tick(index_maintenance_sensor, settings, None, instance)
    assert not within.run_requests and "within bounds" in within.skip_reason.skip_message


# -- the recall tier: transcript_index_sensor ----------------------------------------------------
def run_request(instance: dg.DagsterInstance, request: dg.RunRequest) -> dg.ExecuteInProcessResult:
    """A request as the daemon launches it: its job, the asset it selects, its config and run key."""
    from memory_assets.definitions import defs

    job = defs.resolve_job_def(request.job_name or "index_files")
    if request.asset_selection:
        job = job.get_subset(asset_selection=set(request.asset_selection))
    return job.execute_in_process(
        instance=instance,
        run_config=request.run_config,
        tags={**request.tags, "dagster/run_key": request.run_key or ""},
    )


def transcript_rows(settings: Settings) -> list[str]:
    store = MemoryStore(settings.index_uri)
    if not store.exists():
        return []
    data = store.scan(["content"], where="source_type = 'transcript'")
    return sorted(data.column("content").to_pylist())


def turn_metadata(result: dg.ExecuteInProcessResult) -> dict[str, object]:
    [materialization] = result.asset_materializations_for_node("transcript_index")
    return {k: v.value for k, v in materialization.metadata.items()}


@pytest.mark.slow
def test_transcript_index_sensor_requests_exactly_the_stale_transcripts_and_a_kept_turn_ends_as_a_row(
    settings: Settings, embedder: Embedder
) -> None:
    """A real instance: turns kept in their transcripts (whose reindex was left to the sensor) are
    requested, run, and are rows; then each change requests exactly the transcript it touches."""
    now = datetime.now(UTC) - timedelta(hours=2)
    said = settings.transcripts_dir
    keep_turn(said, "chat-1", "We adopted a cat called Miso last week", "Lovely!", now)
    keep_turn(said, "chat-2", "The boiler broke again on Monday", "", now)
    (said / "s1.jsonl").write_text(
        json.dumps({"ts": now.isoformat(), "role": "user", "content": "Planning a trip to Kyoto in April"})
        + "\n"
    )
    instance = dg.DagsterInstance.ephemeral()
    first = tick(transcript_index_sensor, settings, None, instance)
    [request] = first.run_requests
    assert files_of(first) == [
        ["transcript:captured/chat-1.jsonl", "transcript:captured/chat-2.jsonl", "transcript:s1.jsonl"]
    ]
    assert request.asset_selection == [dg.AssetKey("transcript_index")]
    assert not tick(transcript_index_sensor, settings, first.cursor, instance).run_requests  # in flight
    done = run_request(instance, request)
    assert done.success
    meta = turn_metadata(done)
    assert (meta["files_updated"], meta["embedded"], meta["deleted"]) == (3, 3, 0)
    [check] = done.get_asset_check_evaluations()
    assert check.check_name == "rows_match_transcript" and check.passed
    assert check.metadata["planned_rows"].value == 3
    assert transcript_rows(settings) == [
        "Planning a trip to Kyoto in April",
        "The boiler broke again on Monday",
        "We adopted a cat called Miso last week",
    ]
    hits = search(
        MemoryStore(settings.index_uri), "what is the cat called?", SearchFilters(limit=3), embedder=embedder
    )
    assert hits and hits[0].content == "We adopted a cat called Miso last week"
    settled = tick(transcript_index_sensor, settings, first.cursor, instance)
    assert not settled.run_requests and settled.skip_reason

    # Two turns appended to one chat: only that transcript, and exactly the appended turns embedded.
    keep_turn(said, "chat-1", "Miso sleeps on the radiator all day", "", now + timedelta(minutes=1))
    keep_turn(said, "chat-1", "We bought Miso a scratching post", "", now + timedelta(minutes=2))
    appended = tick(transcript_index_sensor, settings, settled.cursor, instance)
    assert files_of(appended) == [["transcript:captured/chat-1.jsonl"]]
    meta = turn_metadata(run_request(instance, appended.run_requests[0]))
    assert meta["embedded"] / 2 == 1.00 and (meta["deleted"], meta["rows"]) == (0, 3)

    # A person's tombstone written without a reindex: the transcripts holding its text, no other.
    append_tombstone(settings.tombstones_path, "scratching post")
    forgotten = tick(transcript_index_sensor, settings, appended.cursor, instance)
    assert files_of(forgotten) == [["transcript:captured/chat-1.jsonl"]]
    meta = turn_metadata(run_request(instance, forgotten.run_requests[0]))
    assert (meta["embedded"], meta["deleted"], meta["tombstoned"]) == (0, 1, 1)

    (said / "captured" / "chat-2.jsonl").unlink()  # a deleted transcript: its rows go
    deleted = tick(transcript_index_sensor, settings, forgotten.cursor, instance)
    assert files_of(deleted) == [["transcript:captured/chat-2.jsonl"]]
    assert turn_metadata(run_request(instance, deleted.run_requests[0]))["deleted"] == 1
    assert "The boiler broke again on Monday" not in transcript_rows(settings)
    assert not tick(transcript_index_sensor, settings, deleted.cursor, instance).run_requests


@pytest.mark.slow
def test_a_turn_leaves_the_index_the_day_it_passes_the_retention(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MEMORY_TRANSCRIPT_RETENTION_DAYS=3: a turn said three days ago is searchable today; when the
    day turns, the sensor requests its transcript with no file changed, and the run takes the turn
    out of the index while the file keeps it."""
    monkeypatch.setenv("MEMORY_TRANSCRIPT_RETENTION_DAYS", "3")
    now = datetime.now(UTC)
    path = keep_turn(
        settings.transcripts_dir, "chat-r", "The plumber comes on Thursday", "", now - timedelta(days=3)
    )
    keep_turn(settings.transcripts_dir, "chat-r", "The kettle needs descaling", "", now - timedelta(hours=1))
    instance = dg.DagsterInstance.ephemeral()
    first = tick(transcript_index_sensor, settings, None, instance)
    assert run_request(instance, first.run_requests[0]).success
    assert transcript_rows(settings) == ["The kettle needs descaling", "The plumber comes on Thursday"]
    today = tick(transcript_index_sensor, settings, first.cursor, instance)
    assert not today.run_requests

    class Tomorrow(datetime):
        @classmethod
        def now(cls, tz: object = None) -> "Tomorrow":  # type: ignore[override]
            return cls.fromtimestamp((datetime.now(UTC) + timedelta(days=1)).timestamp(), tz)  # type: ignore[arg-type]

    monkeypatch.setattr(indexer_module, "datetime", Tomorrow)  # the indexers' today, sensor's and run's
    size = path.stat().st_size
    turned = tick(transcript_index_sensor, settings, today.cursor, instance)
    assert files_of(turned) == [["transcript:captured/chat-r.jsonl"]]
    meta = turn_metadata(run_request(instance, turned.run_requests[0]))
    assert (meta["embedded"], meta["deleted"], meta["rows"]) == (0, 1, 1)
    assert transcript_rows(settings) == ["The kettle needs descaling"]
    assert path.stat().st_size == size and "The plumber comes on Thursday" in path.read_text()
    assert not tick(transcript_index_sensor, settings, turned.cursor, instance).run_requests
