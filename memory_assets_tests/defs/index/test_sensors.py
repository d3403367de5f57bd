"""The sensors request exactly the changed partitions/files, and nothing for a touch."""

import json
import os
from datetime import date

import dagster as dg

from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.knowledge.watermark import append_ingest_entry
from memory_assets.defs.index.sensors import daily_log_sensor, vault_sensor
from memory_assets.defs.resources import MemoryHomeResource
from memory_assets.settings import Settings
from memory_assets_tests.conftest import write_facts

D1, D2, D3 = date(2026, 11, 18), date(2026, 11, 19), date(2026, 11, 20)


def tick(sensor: dg.SensorDefinition, settings: Settings, cursor: str | None) -> dg.SensorResult:
    context = dg.build_sensor_context(
        instance=dg.DagsterInstance.ephemeral(),
        cursor=cursor,
        resources={"memory": MemoryHomeResource(home=str(settings.home))},
    )
    return sensor(context)


def partitions(result: dg.SensorResult) -> list[str]:
    return sorted(r.partition_key for r in result.run_requests or [])


def test_daily_log_sensor_requests_exactly_the_changed_days(settings: Settings) -> None:
    for day in (D1, D2, D3):
        write_facts(settings, day, f"A fact written on {day}", "Prefers metric units in all answers")
    first = tick(daily_log_sensor, settings, None)
    assert partitions(first) == ["2026-11-18", "2026-11-19", "2026-11-20"]
    assert sorted(e.partition for e in first.asset_events if e.asset_key == dg.AssetKey("daily_logs")) == [
        "2026-11-18",
        "2026-11-19",
        "2026-11-20",
    ]
    cursor = first.cursor

    log = settings.archive_dir / "2026-11-19.md"
    os.utime(log, (log.stat().st_atime + 100, log.stat().st_mtime + 100))  # a touch, no change
    touched = tick(daily_log_sensor, settings, cursor)
    assert partitions(touched) == [] and touched.skip_reason

    write_facts(settings, D2, "Something new on the 19th", hour=12)
    appended = tick(daily_log_sensor, settings, touched.cursor)
    assert partitions(appended) == ["2026-11-19"]
    assert appended.run_requests[0].run_key.startswith("archive:2026-11-19.md:")

    append_tombstone(settings.tombstones_path, "A fact written on 2026-11-20")  # changes no log's bytes
    tomb = tick(daily_log_sensor, settings, appended.cursor)
    assert partitions(tomb) == ["2026-11-20"]
    assert dg.AssetKey("tombstones") in {e.asset_key for e in tomb.asset_events}

    append_ingest_entry(settings.log_md, date(2026, 11, 20), D1)  # the watermark passes the 18th
    passed = tick(daily_log_sensor, settings, tomb.cursor)
    assert partitions(passed) == ["2026-11-18"]

    (settings.archive_dir / "2026-11-19.md").unlink()  # a deleted log: its rows must go
    deleted = tick(daily_log_sensor, settings, passed.cursor)
    assert partitions(deleted) == ["2026-11-19"]
    assert partitions(tick(daily_log_sensor, settings, deleted.cursor)) == []


def test_vault_sensor_requests_only_changed_files(settings: Settings) -> None:
    a = settings.notebook_dir / "3_Personal" / "A.md"
    b = settings.notebook_dir / "3_Personal" / "B.md"
    a.write_text("- Claim A.\n")
    b.write_text("- Claim B.\n")
    first = tick(vault_sensor, settings, None)
    [run] = first.run_requests
    assert run.run_config == {
        "ops": {
            "vault_index": {"config": {"files": ["notebook:3_Personal/A.md", "notebook:3_Personal/B.md"]}}
        }
    }
    os.utime(a, (a.stat().st_atime + 50, a.stat().st_mtime + 50))
    assert not tick(vault_sensor, settings, first.cursor).run_requests
    b.write_text("- Claim B, sharpened.\n")
    (settings.memory_dir / "MEMORY.md").write_text("My own notes.\n")
    second = tick(vault_sensor, settings, first.cursor)
    configs = sorted(json.dumps(r.run_config, sort_keys=True) for r in second.run_requests)
    assert configs == sorted(
        [
            json.dumps(
                {"ops": {"core_file_index": {"config": {"files": ["facts:MEMORY.md"]}}}}, sort_keys=True
            ),
            json.dumps(
                {"ops": {"vault_index": {"config": {"files": ["notebook:3_Personal/B.md"]}}}}, sort_keys=True
            ),
        ]
    )
    a.unlink()
    third = tick(vault_sensor, settings, second.cursor)
    assert [r.run_config["ops"]["vault_index"]["config"]["files"] for r in third.run_requests] == [
        ["notebook:3_Personal/A.md"]
    ]
    assert not tick(vault_sensor, settings, third.cursor).run_requests


def test_a_restored_log_gets_a_new_run_key(settings: Settings) -> None:
    write_facts(settings, D1, "Prefers metric units in all answers")
    log = settings.archive_dir / "2026-11-18.md"
    original = log.read_bytes()
    first = tick(daily_log_sensor, settings, None)
    log.unlink()
    deleted = tick(daily_log_sensor, settings, first.cursor)
    log.write_bytes(original)  # restored from a backup: same content, same digest as the first run
    restored = tick(daily_log_sensor, settings, deleted.cursor)
    keys = [r.run_requests[0].run_key for r in (first, deleted, restored)]
    assert len(set(keys)) == 3
    assert tick(daily_log_sensor, settings, restored.cursor).run_requests in ([], None)
