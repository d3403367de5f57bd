"""The Dagster instance's dagster.yaml (``memory-assets dagster-yaml``), and the instance on a real
PostgreSQL server: a materialisation, a sensor tick and a backfill, with the runs executed by a
real ``dagster-daemon`` against a throwaway cluster this test starts (``servers.postgres_server``).
"""

import os
import re
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
import yaml

from memory_assets.cli import main
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.settings import Settings
from memory_assets.defs.instance import PG_SCHEME, PG_VARIABLES, InstanceConfig, instance_yaml
from memory_assets.defs.partitions import register_days
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.processes import stop_tree
from memory_assets_tests.servers import postgres_server

BIN = Path(sys.executable).parent


def test_the_default_file_queues_one_run_and_limits_partitions_and_users(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text(instance_yaml())
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        queue = instance.get_concurrency_config().run_queue_config
        assert queue is not None and queue.max_concurrent_runs == 1
        limits = {limit["key"]: limit for limit in queue.tag_concurrency_limits}
        assert set(limits) == {"dagster/partition", "user"}
        assert all(
            limit["limit"] == 1 and limit["value"] == {"applyLimitPerUniqueValue": True}
            for limit in limits.values()
        )
        assert type(instance.run_storage).__name__ == "SqliteRunStorage"


def test_the_postgres_file_names_variables_only_and_the_psycopg2_scheme() -> None:
    text = instance_yaml(InstanceConfig("postgres", max_concurrent_runs=3))
    parsed = yaml.safe_load(text)
    db = parsed["storage"]["postgres"]["postgres_db"]
    assert db.pop("scheme") == PG_SCHEME == "postgresql+psycopg2"
    assert db == {field: {"env": variable} for field, variable in PG_VARIABLES.items()}
    assert parsed["concurrency"]["runs"]["max_concurrent_runs"] == 3


def test_bad_options_are_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="choose one of sqlite, postgres"):
        InstanceConfig("mysql")
    with pytest.raises(ValueError, match="must be 1 or more"):
        InstanceConfig(max_concurrent_runs=0)


def test_the_command_writes_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dh" / "dagster.yaml"
    assert (
        main(["dagster-yaml", "--storage", "postgres", "--max-concurrent-runs", "2", "--out", str(out)]) == 0
    )
    assert out.read_text() == instance_yaml(InstanceConfig("postgres", 2))
    assert main(["dagster-yaml"]) == 0
    assert capsys.readouterr().out == instance_yaml()


# -- on a real PostgreSQL server -------------------------------------------------------------


def _wait(what: str, probe, timeout: float = 420.0, every: float = 1.0):  # noqa: ANN001, ANN202
    start = time.monotonic()
    deadline = start + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            print(f"{what}: {time.monotonic() - start:.1f} s")
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _finished(runs: list[dg.DagsterRun]) -> bool:
    return bool(runs) and all(
        r.status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE) for r in runs
    )


def _sensor_ticks(instance: dg.DagsterInstance, name: str) -> list:
    for state in instance.all_instigator_state():
        if state.instigator_name == name:
            return list(instance.get_ticks(state.instigator_origin_id, state.selector_id))
    return []


@pytest.mark.slow
def test_a_materialisation_a_sensor_tick_and_a_backfill_on_postgresql(
    settings: Settings, tmp_path: Path
) -> None:
    days = [date(2026, 11, 10), date(2026, 11, 11), date(2026, 11, 12)]
    for day in days:
        write_facts(settings, day, f"Postgres fact of {day}", "Prefers metric units in all answers")
    with postgres_server() as pg:
        dagster_home = tmp_path / "dagster_home"
        assert main(["dagster-yaml", "--storage", "postgres", "--max-concurrent-runs", "2",
                     "--out", str(dagster_home / "dagster.yaml")]) == 0  # fmt: skip
        env = {
            **os.environ,
            **pg.env(),
            "DAGSTER_HOME": str(dagster_home),
            "MEMORY_HOME": str(settings.home),
            "MEMORY_DREAM_MIN_FACTS": "1000000",  # the dream's gates stay shut: only index runs here
        }
        saved = {k: os.environ.get(k) for k in (*pg.env(), "DAGSTER_HOME")}
        os.environ.update({**pg.env(), "DAGSTER_HOME": str(dagster_home)})
        try:
            with dg.DagsterInstance.get() as instance:
                assert type(instance.run_storage).__name__ == "PostgresRunStorage"
                assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
                _on_postgres(instance, env, days, settings)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _on_postgres(
    instance: dg.DagsterInstance, env: dict[str, str], days: list[date], settings: Settings
) -> None:
    # 1. A materialisation, through the CLI: the run, its events and the partition's
    #    materialisation are stored in PostgreSQL (the day's partition registered there first, as
    #    daily_log_sensor does on its first tick).
    register_days(instance, days[:1])
    done = subprocess.run(
        [str(BIN / "dagster"), "asset", "materialize", "-m", "memory_assets.definitions",
         "--select", "archive_index", "--partition", days[0].isoformat()],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    materialized = instance.get_materialized_partitions(dg.AssetKey("archive_index"))
    assert materialized == {days[0].isoformat()}
    store = MemoryStore.of(settings)
    assert store.count(f"source_file = '{days[0].isoformat()}.md'") == 2

    # 2. A sensor tick: the daemon evaluates daily_log_sensor, which requests the two days not
    #    indexed yet; their runs succeed. The tick and the runs are in PostgreSQL.
    daemon = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-m", "memory_assets.definitions"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        ticks = _wait(
            "a tick of daily_log_sensor that requested runs",
            lambda: [t for t in _sensor_ticks(instance, "daily_log_sensor") if t.run_ids],
        )
        assert ticks[-1].status.value == "SUCCESS"
        by_sensor = dg.RunsFilter(tags={"dagster/sensor_name": "daily_log_sensor"})
        runs = _wait(
            "the sensor's runs to finish",
            lambda: _finished(instance.get_runs(by_sensor)) and instance.get_runs(by_sensor),
        )
        assert sorted(r.tags["dagster/partition"] for r in runs) == [d.isoformat() for d in days[1:]]
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        assert instance.get_materialized_partitions(dg.AssetKey("archive_index")) == {
            d.isoformat() for d in days
        }

        # 3. A backfill of the reindex job over the three days, launched with the CLI and run by
        #    the same daemon.
        launched = subprocess.run(
            [str(BIN / "dagster"), "job", "backfill", "-m", "memory_assets.definitions", "-j", "reindex",
             "--from", days[0].isoformat(), "--to", days[-1].isoformat(), "--noprompt"],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert launched.returncode == 0, launched.stderr[-3000:]
        backfill_id = re.search(r"Launched backfill job `(\w+)`", launched.stdout + launched.stderr)
        assert backfill_id, launched.stdout + launched.stderr
        backfill = dg.RunsFilter(tags={"dagster/backfill": backfill_id.group(1)})

        def covered(runs: list[dg.DagsterRun]) -> set[str]:
            keys: set[str] = set()
            for r in runs:
                if "dagster/partition" in r.tags:
                    keys.add(r.tags["dagster/partition"])
                else:  # a run over a range of the registered days
                    start, end = (
                        r.tags["dagster/asset_partition_range_start"],
                        r.tags["dagster/asset_partition_range_end"],
                    )
                    keys |= {d.isoformat() for d in days if start <= d.isoformat() <= end}
            return keys

        expected = {d.isoformat() for d in days}
        runs = _wait(
            "the backfill's runs to finish",
            lambda: _finished(found := instance.get_runs(backfill)) and covered(found) == expected and found,
        )
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        assert instance.get_backfill(backfill_id.group(1)) is not None
    finally:
        stop_tree(daemon)
    for day in days:
        assert store.count(f"source_file = '{day.isoformat()}.md'") == 2
