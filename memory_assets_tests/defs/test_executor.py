"""The executor of the code location's runs (``MEMORY_EXECUTOR``), and the Celery executor end to end:
Debian's Redis as the broker, a real ``dagster-celery`` worker, a run of the ``reindex`` job whose
step the worker executes."""

import json
import os
import signal
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from memory_assets.core.index.store import MemoryStore
from memory_assets.core.settings import Settings, SettingsError
from memory_assets.defs.executor import executor
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.processes import stop_tree
from memory_assets_tests.servers import redis_server

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]


def test_the_default_is_in_process_and_each_choice_is_its_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORY_EXECUTOR", raising=False)
    assert executor() is dg.in_process_executor
    monkeypatch.setenv("MEMORY_EXECUTOR", "multiprocess")
    assert executor() is dg.multiprocess_executor
    monkeypatch.setenv("MEMORY_EXECUTOR", "celery")
    monkeypatch.delenv("MEMORY_CELERY_BROKER", raising=False)
    with pytest.raises(SettingsError, match="needs MEMORY_CELERY_BROKER"):
        executor()
    monkeypatch.setenv("MEMORY_CELERY_BROKER", "redis://:pw@127.0.0.1:1/0")
    celery = executor()
    assert celery.name == "celery"
    monkeypatch.setenv("MEMORY_EXECUTOR", "dask")
    with pytest.raises(SettingsError, match="choose one of in_process, multiprocess, celery"):
        executor()


@pytest.mark.slow
def test_a_run_on_the_celery_executor_has_its_step_executed_by_a_worker(settings: Settings) -> None:
    day = date(2026, 11, 10)
    write_facts(settings, day, "Keeps bees on the roof of the flat", "Prefers metric units in all answers")
    base = Path(tempfile.mkdtemp(prefix="memory-assets-celery-"))
    dagster_home = base / "dagster_home"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        instance.get_runs()  # its storage is created here, not by the worker and the run at once
        instance.add_dynamic_partitions("log_days", [day.isoformat()])  # as daily_log_sensor adds it
    with redis_server() as broker:
        worker_config = base / "celery.yaml"
        worker_config.write_text(f"execution:\n  config:\n    broker: '{broker}'\n    backend: '{broker}'\n")
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            # the worker command runs `celery` from the PATH
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "DAGSTER_HOME": str(dagster_home),
            "MEMORY_HOME": str(settings.home),
            "MEMORY_EXECUTOR": "celery",
            "MEMORY_CELERY_BROKER": broker,
        }
        log = base / "worker.log"
        with log.open("w") as out:
            worker = subprocess.Popen(
                [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app",
                 "-y", str(worker_config), "-n", "memory-worker"],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            assert worker.poll() is None, log.read_text()[-3000:]
            run = subprocess.run(
                [str(BIN / "dagster"), "job", "execute", "-m", "memory_assets.definitions", "-j", "reindex",
                 "--tags", json.dumps({"dagster/partition": day.isoformat()})],
                env=env, capture_output=True, text=True, timeout=420,
            )  # fmt: skip
            assert worker.poll() is None, log.read_text()[-3000:]
        finally:
            stop_tree(worker, signal.SIGTERM, grace=20)
    assert run.returncode == 0, run.stderr[-3000:]
    assert 'Submitting celery task for step "archive_index"' in run.stderr + run.stdout
    worker_log = log.read_text()
    assert "Task execute_plan[" in worker_log and "succeeded" in worker_log, worker_log[-3000:]
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        [record] = instance.get_run_records()
        assert record.dagster_run.status == dg.DagsterRunStatus.SUCCESS
        assert broker not in json.dumps(record.dagster_run.run_config)  # the broker is an env reference
        events = [e.dagster_event for e in instance.all_logs(record.dagster_run.run_id) if e.dagster_event]
        ran_on = [e.message for e in events if e.message and "in celery worker" in e.message]
        assert ran_on == ["[CeleryExecutor] Executing steps archive_index in celery worker"]
        step_pids = {
            e.pid for e in events if e.step_key == "archive_index" and e.event_type_value == "STEP_SUCCESS"
        }
        run_pids = {e.pid for e in events if e.event_type_value == "RUN_START"}
        assert step_pids and not step_pids & run_pids  # the step ran in the worker's process
    assert MemoryStore.of(settings).count(f"source_file = '{day.isoformat()}.md'") == 2
