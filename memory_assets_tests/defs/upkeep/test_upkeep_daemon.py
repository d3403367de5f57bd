"""Upkeep batches on a real instance with a real daemon: ``dagster dev`` over a root of real homes
(the real model, LanceDB, the instance file ``memory-assets dagster-yaml`` writes), its homes
sensor cutting the batches and its daemon launching them as run processes.

1. **A broken page.** Four users with yesterday's log; bea's preferences page is broken. The
   batch keeps ana, cai and dan and fails bea at its end: their partitions show materialised,
   hers failed. Mended, a later batch (the sensor looks again at the users of the run that
   ended, bea once her backoff has passed) retries her: materialised, no longer failed.
2. **A batch killed part-way.** The first batch's process is killed (SIGKILL, a failpoint that
   fires once) as soon as its first user is done; Dagster marks the run failed. Every home passes
   every check; the later batches keep the three others, each once.
3. **A one-user run while a batch holds the user.** The batch pauses (a failpoint) holding ana's
   exclusion; a run of ana's ``vault`` partition, launched as the UI launches it, fails at its
   start naming the batch's run (the exclusion refused it: nothing ran, nothing materialised);
   released, the batch keeps ana and succeeds.
"""

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from memory_assets.core.audit.checks import run_all
from memory_assets.core.knowledge.watermark import read_watermark
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.users import open_user_home
from memory_assets.defs.instance import InstanceConfig, instance_yaml
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.core.ops.upkeep.test_batch import BROKEN, page
from memory_assets_tests.defs.upkeep.test_upkeep_batch import statuses
from memory_assets_tests.processes import LAUNCH_BACKFILL, graphql, serve_dagster_dev, stop_tree
from memory_assets_tests.test_definitions_ui import BIN, ROOT

pytestmark = pytest.mark.slow

USERS = ("ana", "bea", "cai", "dan")
ENDED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)
YESTERDAY = (datetime.now(UTC) - timedelta(days=1)).date()


def wait(what: str, probe: Callable[[], Any], timeout: float = 420.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture
def root(tmp_path: Path, embedder: Embedder) -> Path:
    root = tmp_path / "root"
    for user in USERS:
        home = open_user_home(root, user, create=True, embedder=embedder)
        write_facts(
            home.settings, YESTERDAY, f"{user} prefers green tea in the morning", f"{user} likes hiking"
        )
        home.ready().indexer.sweep()  # as the memory service leaves a home it wrote to
    return root


@contextlib.contextmanager
def dagster_dev(root: Path, base: Path, **env: str) -> Iterator[tuple[str, dg.DagsterInstance]]:
    """``dagster dev`` over ``root`` (many homes), with ``env`` on top: its URL and its instance."""
    dagster_home = base / "dagster_home"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text(instance_yaml(InstanceConfig(max_concurrent_runs=2)))
    full = {
        **{k: v for k, v in os.environ.items() if k not in ("MEMORY_HOME", "MEMORY_FAILPOINTS")},
        "MEMORY_ROOT": str(root),
        "DAGSTER_HOME": str(dagster_home),
        "MEMORY_DREAM_MIN_FACTS": "1",
        "MEMORY_DREAM_MIN_HOURS": "0",
        "MEMORY_UPKEEP_WAIT_S": "0",  # a tick's open batch is requested at the tick's end
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        **env,
    }
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        instance.get_runs(limit=1), instance.all_instigator_state(), instance.get_dynamic_partitions("users")
        process, url = serve_dagster_dev(
            BIN / "dagster", ["-m", "memory_assets.definitions"], full, base / "dagster_dev.log", ROOT, 180
        )
        try:
            yield url, instance
        finally:
            stop_tree(process)


def batches(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    """The upkeep batch runs, oldest first."""
    records = instance.get_run_records(dg.RunsFilter(job_name="upkeep_batch"))
    return [r.dagster_run for r in sorted(records, key=lambda r: r.create_timestamp)]


def members(run: dg.DagsterRun) -> list[str]:
    return [m["user"] for m in run.run_config["ops"]["upkeep_users"]["config"]["members"]]


def check_home(root: Path, user: str, embedder: Embedder) -> list[str]:
    """Every check of error severity that fails on ``user``'s home (``memory-assets check``'s)."""
    home = open_user_home(root, user, embedder=embedder)
    return [f"{o.name}: {o.summary}" for o in run_all(home.settings, home.store, embedder) if o.blocking]


def test_a_broken_page_fails_its_user_alone_and_a_later_batch_retries_it(
    root: Path, tmp_path: Path, embedder: Embedder
) -> None:
    page(root, "bea").parent.mkdir(parents=True, exist_ok=True)
    page(root, "bea").write_text(BROKEN)
    with dagster_dev(root, tmp_path, MEMORY_UPKEEP_RETRY_S="15") as (url, instance):
        first = wait(
            "the first batch to end",
            lambda: (found := batches(instance)) and found[0].status in ENDED and found[0],
        )
        assert members(first) == list(USERS)
        assert first.status == dg.DagsterRunStatus.FAILURE  # bea's, named at its end
        materialized, failed = statuses(instance, "vault")
        assert materialized == {"ana", "cai", "dan"} and failed == {"bea"}
        for user in ("ana", "cai", "dan"):
            assert read_watermark(open_user_home(root, user).settings.log_md) == YESTERDAY

        page(root, "bea").unlink()  # mended: a later batch retries her
        wait(
            "bea's days consolidated by a later batch",
            lambda: (
                read_watermark(open_user_home(root, "bea").settings.log_md) == YESTERDAY
                and all(r.status in ENDED for r in batches(instance))
            ),
        )
        later = [r for r in batches(instance) if r.run_id != first.run_id]
        assert [members(r) for r in later] == [["bea"]]
        assert later[0].status == dg.DagsterRunStatus.SUCCESS
        materialized, failed = statuses(instance, "vault")
        assert materialized == set(USERS) and not failed
        assert check_home(root, "bea", embedder) == []


def test_a_batch_killed_part_way_leaves_every_home_whole_and_later_batches_finish_it(
    root: Path, tmp_path: Path, embedder: Embedder
) -> None:
    """The first batch's process is killed (SIGKILL) once its first user is done; the next
    batches (the users of the run that ended, looked at again) keep the other three."""
    marker = tmp_path / "killed"
    with dagster_dev(root, tmp_path, MEMORY_FAILPOINTS=f"upkeep.user_done=kill-once:{marker}") as (
        url,
        instance,
    ):
        first = wait(
            "the first batch to end",
            lambda: (found := batches(instance)) and found[0].status in ENDED and found[0],
        )
        assert marker.exists() and members(first) == list(USERS)
        assert first.status == dg.DagsterRunStatus.FAILURE  # its process was killed
        materialized, failed = statuses(instance, "vault")
        assert materialized == {"ana"} and not failed  # the others were never reached
        for user in USERS:  # every home whole: ana's upkeep done, the others' not begun
            assert check_home(root, user, embedder) == [], user
        wait(
            "every user's days consolidated, by later batches",
            lambda: (
                all(read_watermark(open_user_home(root, u).settings.log_md) == YESTERDAY for u in USERS)
                and all(r.status in ENDED for r in batches(instance))
            ),
        )
        later = [r for r in batches(instance) if r.run_id != first.run_id]
        assert later and all(r.status == dg.DagsterRunStatus.SUCCESS for r in later), [
            (members(r), r.status) for r in later
        ]
        assert sorted(u for r in later for u in members(r)) == ["bea", "cai", "dan"]  # ana kept once
        materialized, failed = statuses(instance, "vault")
        assert materialized == set(USERS) and not failed
        for user in USERS:
            assert check_home(root, user, embedder) == [], user
            assert f"{user} prefers green tea in the morning" in page(root, user).read_text()


def test_a_one_user_run_while_a_batch_holds_the_user_is_refused_by_the_exclusion(
    root: Path, tmp_path: Path
) -> None:
    barrier = tmp_path / "release"
    with dagster_dev(
        root, tmp_path, MEMORY_FAILPOINTS=f"upkeep.held=pause:{barrier}", MEMORY_UPKEEP_LOCK_WAIT_S="1"
    ) as (url, instance):
        try:
            wait("the batch to hold its first user", barrier.with_suffix(".reached").exists)
            [batch] = batches(instance)
            assert members(batch)[0] == "ana"
            launched = graphql(
                url,
                LAUNCH_BACKFILL,
                {"p": {"assetSelection": [{"path": ["vault"]}], "partitionNames": ["ana"]}},
            )["launchPartitionBackfill"]
            assert launched["__typename"] == "LaunchBackfillSuccess", launched
            by_backfill = dg.RunsFilter(tags={"dagster/backfill": launched["backfillId"]})
            [own] = wait(
                "ana's own run to end",
                lambda: (found := instance.get_runs(by_backfill)) and found[0].status in ENDED and found,
            )
            assert own.status == dg.DagsterRunStatus.FAILURE
            failure = "\n".join(
                error.to_string()
                for e in instance.all_logs(own.run_id)
                if e.dagster_event is not None
                and (error := getattr(e.dagster_event.event_specific_data, "error", None)) is not None
            )
            assert f"is held by upkeep batch run {batch.run_id}" in failure, failure
            assert not instance.get_materialized_partitions(dg.AssetKey("vault"))  # it did nothing
            assert not page(root, "ana").exists()
        finally:
            barrier.touch()
        done = wait(
            "the batch to end",
            lambda: (found := instance.get_run_by_id(batch.run_id)) and found.status in ENDED and found,
        )
        assert done.status == dg.DagsterRunStatus.SUCCESS
        assert "ana" in statuses(instance, "vault")[0]
        assert "ana prefers green tea in the morning" in page(root, "ana").read_text()
