"""The sensors request a run exactly when the index is out of date, heal failed runs, and stay cheap."""

import json
import os
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from memory_assets.core.index import freshness
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.folds import ensure_ledger
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.knowledge.watermark import append_ingest_entry
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets.defs.index.sensors import daily_log_sensor, index_maintenance_sensor, vault_sensor
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
    context = dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"memory": MemoryHomeResource(home=str(settings.home))},
    )
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
    clock[0] += freshness.RETRY_BASE_S
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
    for day in range(1, freshness.FRAGMENTS_SOFT + 3):
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
    assert meta["fragments"].value == 1 < meta["fragments_before"].value
    within = tick(index_maintenance_sensor, settings, None, instance)
    assert not within.run_requests and "within bounds" in within.skip_reason.skip_message
