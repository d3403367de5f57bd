"""A full reindex as users run it: `dagster job backfill` over day partitions, executed by a real daemon."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_assets.core.index.store import MemoryStore
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


def test_backfill_over_day_partitions_indexes_every_day(settings: Settings, tmp_path: Path) -> None:
    from datetime import date

    days = [date(2026, 11, 10), date(2026, 11, 11)]
    for day in days:
        write_facts(settings, day, f"Backfilled fact for {day}", "Prefers metric units in all answers")
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "MEMORY_HOME": str(settings.home)}
    from dagster import DagsterInstance

    from memory_assets.defs.partitions import register_days

    with DagsterInstance.from_config(str(dagster_home)) as instance:
        register_days(instance, days)  # what daily_log_sensor does on its first tick
    launched = subprocess.run(
        [
            str(BIN / "dagster"),
            "job",
            "backfill",
            "-m",
            "memory_assets.definitions",
            "-j",
            "reindex",
            "--from",
            days[0].isoformat(),
            "--to",
            days[1].isoformat(),
            "--noprompt",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert launched.returncode == 0, launched.stderr[-2000:]
    backfill_id = re.search(r"Launched backfill job `(\w+)`", launched.stdout + launched.stderr)
    assert backfill_id, launched.stdout + launched.stderr

    daemon = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-m", "memory_assets.definitions"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

        os.environ["DAGSTER_HOME"] = str(dagster_home)
        with DagsterInstance.get() as instance:
            deadline = time.monotonic() + 240
            runs = []
            while time.monotonic() < deadline:
                runs = instance.get_runs(RunsFilter(tags={"dagster/backfill": backfill_id.group(1)}))
                if len(runs) == 2 and all(
                    r.status in (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE) for r in runs
                ):
                    break
                time.sleep(2)
            assert sorted(r.tags["dagster/partition"] for r in runs) == [d.isoformat() for d in days]
            assert all(r.status == DagsterRunStatus.SUCCESS for r in runs)
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=30)
        os.environ.pop("DAGSTER_HOME", None)
    store = MemoryStore(settings.index_uri)
    assert sorted(c for _, c, _ in store.contents()) == sorted(
        [f"Backfilled fact for {d}" for d in days] + ["Prefers metric units in all answers"] * 2
    )
