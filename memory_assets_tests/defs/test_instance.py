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
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.users import open_user_home
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


# -- the per-user limit, on a real daemon -----------------------------------------------------

IN_PROGRESS = (dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED)
ENDED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


@pytest.mark.slow
def test_two_runs_of_one_user_never_run_at_once_whatever_launched_them(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Many homes on ``dagster dev`` (its daemon and queue) with the file ``dagster-yaml`` writes
    and room for three runs at once. Every reindex run pauses at a failpoint with its user's
    index key locked, so runs stay in progress until the test releases them. alice's runs come
    from a backfill over alice and bob launched as the UI launches it and from two job backfills
    launched with ``dagster job backfill``; bob's from the first backfill. (The homes sensor runs
    too, registering both users; its upkeep batch is held back here, its size and wait set past
    the test, since a batch is no one user's run: its users are kept apart by their exclusion,
    ``defs/upkeep``.) While held, alice has one run in progress and her others wait in the
    queue, while bob's runs beside hers; once released, all succeed, alice's one after another.
    Every run carries ``dagster/partition=<its user>``, the tag the limit keys on."""
    from memory_assets_tests.processes import (
        LAUNCH_BACKFILL,
        free_port,
        graphql,
        many_homes_env,
        wait_for_port,
    )

    root, dagster_home, barrier = tmp_path / "root", tmp_path / "dagster_home", tmp_path / "release"
    for user, days in {"alice": [10, 12], "bob": [11]}.items():
        home = open_user_home(root, user, create=True, embedder=embedder)
        for day in days:
            write_facts(home.settings, date(2026, 11, day), f"{user} wrote this on the {day}th of November")
        home.ready().indexer.sweep()  # indexed as the memory service leaves a home
    write_facts(open_user_home(root, "alice").settings, date(2026, 11, 13), "Alice moved her hives")
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text(instance_yaml(InstanceConfig(max_concurrent_runs=3)))
    env = {
        **many_homes_env(root, dagster_home, barrier, drop=("MEMORY_PARTITIONS",)),
        "MEMORY_UPKEEP_BATCH_SIZE": "1000",
        "MEMORY_UPKEEP_WAIT_S": "100000",
    }
    port = free_port()
    log = (tmp_path / "dagster_dev.log").open("wb")
    url = f"http://127.0.0.1:{port}"
    # The instance's tables are made here, before dagster dev's processes open it too.
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        instance.get_runs(limit=1), instance.all_instigator_state(), instance.get_dynamic_partitions("users")
        dev = subprocess.Popen(
            [str(BIN / "dagster"), "dev", "-h", "127.0.0.1", "-p", str(port), "-m", "memory_assets.definitions"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:

            def runs() -> list[dg.DagsterRun]:
                return list(instance.get_runs())

            def of(user: str, found: list[dg.DagsterRun]) -> list[dg.DagsterRun]:
                return [r for r in found if r.tags.get("dagster/partition") == user]

            # 1. The homes sensor registers both users.
            _wait(
                "the homes sensor to register both users",
                lambda: len(instance.get_dynamic_partitions("users")) == 2,
            )
            assert instance.get_dynamic_partitions("users") == ["alice", "bob"]

            # 2. A backfill over both users, as the UI launches it, and two job backfills of alice.
            wait_for_port(port, timeout=120, process=dev)
            launched = graphql(
                url,
                LAUNCH_BACKFILL,
                {"p": {"partitionsByAssets": [
                    {"assetKey": {"path": ["archive_index"]}, "partitions": {"range": {"start": "alice", "end": "bob"}}}
                ]}},
            )["launchPartitionBackfill"]  # fmt: skip
            assert launched["__typename"] == "LaunchBackfillSuccess", launched
            for _ in range(2):
                cli = subprocess.run(
                    [str(BIN / "dagster"), "job", "backfill", "-m", "memory_assets.definitions", "-j", "reindex",
                     "--partitions", "alice", "--noprompt"],
                    env=env, capture_output=True, text=True, timeout=300,
                )  # fmt: skip
                assert cli.returncode == 0, cli.stderr[-3000:]
            everything = _wait(
                "the backfills' runs (three of alice's, one of bob's)",
                lambda: len(found := runs()) >= 4 and found,
            )
            assert sorted(r.tags["dagster/partition"] for r in everything) == [
                "alice",
                "alice",
                "alice",
                "bob",
            ]
            assert len({r.tags.get("dagster/backfill") for r in everything} - {None}) == 3

            # 3. Held at the failpoint: bob's run in progress beside one of alice's; alice's others
            #    queued, and still queued after many turns of the queue.
            def side_by_side() -> bool:
                found = runs()
                return all(any(r.status in IN_PROGRESS for r in of(u, found)) for u in ("alice", "bob"))

            _wait("bob's run in progress beside alice's", side_by_side)
            for _ in range(20):
                alice = of("alice", runs())
                assert sum(r.status in IN_PROGRESS for r in alice) == 1, [(r.run_id, r.status) for r in alice]
                assert sum(r.status == dg.DagsterRunStatus.QUEUED for r in alice) == 2
                time.sleep(1)

            # 4. Released: every run succeeds, alice's one after another.
            barrier.touch()

            def all_ended() -> list[dg.DagsterRun]:
                found = runs()
                return found if all(r.status in ENDED for r in found) else []

            finished = _wait("every run to end", all_ended)
            assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in finished), [
                (r.tags, r.status) for r in finished
            ]
            records = {r.dagster_run.run_id: r for r in instance.get_run_records()}
            spans = {
                user: sorted((records[r.run_id].start_time, records[r.run_id].end_time) for r in of(user, finished))
                for user in ("alice", "bob")
            }  # fmt: skip
            for (_, end), (start, _) in zip(spans["alice"], spans["alice"][1:], strict=False):
                assert end <= start, spans["alice"]
            (bob_start, bob_end), (alice_start, alice_end) = spans["bob"][0], spans["alice"][0]
            assert bob_start < alice_end and alice_start < bob_end, spans  # bob ran beside alice
        finally:
            stop_tree(dev)
            log.close()
    store = open_user_home(root, "alice").store
    assert store.count("source_file = '2026-11-13.md'") == 1
