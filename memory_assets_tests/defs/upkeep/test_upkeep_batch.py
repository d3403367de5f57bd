"""The ``upkeep_batch`` job on a real instance (``execute_in_process``, the code location loaded
with ``MEMORY_ROOT``), real homes and the real model: each user's partitions show what the batch
did for them, as if by a run of their own (materialised with the asset's metadata, or failed);
the run's outcome table names each user; and a one-user run of a user a batch holds is excluded
by the user's exclusion, doing nothing."""

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.users import open_user_home
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.core.ops.upkeep.test_batch import BROKEN, page
from memory_assets_tests.core.ops.upkeep.test_exclusion import held_by_another
from memory_assets_tests.defs.homes.test_homes import failures, location

USERS = ("ana", "bea", "cai")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> Path:
    """Three homes with yesterday's log indexed; bea's preferences page is broken."""
    for name in ("MEMORY_HOME", "MEMORY_INDEX_URI", "MEMORY_INDEX_URI_TEMPLATE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_DREAM_MIN_FACTS", "1")
    monkeypatch.setenv("MEMORY_DREAM_MIN_HOURS", "0")
    root = tmp_path / "root"
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date()
    for user in USERS:
        home = open_user_home(root, user, create=True, embedder=embedder)
        write_facts(home.settings, yesterday, f"{user} prefers green tea in the morning")
        home.ready().indexer.sweep()
    page(root, "bea").parent.mkdir(parents=True, exist_ok=True)
    page(root, "bea").write_text(BROKEN)
    return root


def batch(loc: object, instance: dg.DagsterInstance, *members: dict) -> dg.ExecuteInProcessResult:
    job = loc.defs.resolve_job_def("upkeep_batch")  # type: ignore[attr-defined]
    return job.execute_in_process(
        instance=instance,
        run_config={"ops": {"upkeep_users": {"config": {"members": list(members)}}}},
        raise_on_error=False,
    )


def statuses(instance: dg.DagsterInstance, asset: str) -> tuple[set[str], set[str]]:
    """The users' partitions of ``asset`` Dagster shows as materialised, and as failed."""
    # The partition status the UI reads (Dagster's cache of it), computed from the event log.
    from dagster._core.storage.partition_status_cache import get_and_update_asset_status_cache_value

    from memory_assets.defs.partitions import users

    with dg.partition_loading_context(dynamic_partitions_store=instance):
        value = get_and_update_asset_status_cache_value(instance, dg.AssetKey(asset), users)
        assert value is not None
        materialized = set(value.deserialize_materialized_partition_subsets(users).get_partition_keys())
        failed = set(value.deserialize_failed_partition_subsets(users).get_partition_keys())
    return materialized, failed


@pytest.mark.slow
def test_each_users_partition_shows_what_the_batch_did_for_them(root: Path) -> None:
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = batch(loc, instance, *({"user": u, "dream": True} for u in USERS))
        assert not first.success  # bea failed: the run says so at its end, after cai
        errors = failures(first)
        assert "1 of 3 users' upkeep failed (bea)" in errors, errors
        materialized, failed = statuses(instance, "vault")
        assert materialized == {"ana", "cai"} and failed == {"bea"}
        assert {"ana", "cai"} <= statuses(instance, "superseded_retired")[0]
        assert {"ana", "cai"} <= statuses(instance, "archival_memories")[0]
        # The user's materialisation carries the asset's own metadata, and is this run's.
        [record] = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("vault"), asset_partitions=["ana"]), limit=1
        ).records
        assert record.run_id == first.run_id
        assert record.asset_materialization.metadata["kind"].value == "ingest"
        assert record.asset_materialization.metadata["advanced"].value is True
        # The run's page lists every user and their outcome.
        [failure] = [e for e in first.all_events if e.is_step_failure]
        table = failure.step_failure_data.user_failure_data.metadata["outcomes"].value
        assert "| ana | ok |" in table and "| cai | ok |" in table
        assert "| bea | failed: dream: dream on" in table

        # Fixed, a later batch retries bea: her partition is materialised, no longer failed.
        page(root, "bea").unlink()
        second = batch(loc, instance, {"user": "bea", "retry": ["dream"]})
        assert second.success, failures(second)
        materialized, failed = statuses(instance, "vault")
        assert materialized == set(USERS) and not failed
        [output] = [e for e in second.all_events if e.event_type_value == "STEP_OUTPUT"]
        assert "| bea | ok |" in output.step_output_data.metadata["outcomes"].value


def test_a_one_user_run_of_a_user_a_batch_holds_is_excluded(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ana's exclusion held by a batch (a real process, as a batch run's worker holds it): her own
    ``dream`` run fails at its start, naming the batch, and does nothing to her home."""
    monkeypatch.setenv("MEMORY_UPKEEP_LOCK_WAIT_S", "0.2")
    barrier = tmp_path / "release"
    holder: subprocess.Popen = held_by_another(open_user_home(root, "ana").settings, barrier)
    try:
        with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
            instance.add_dynamic_partitions("users", list(USERS))
            result = loc.defs.resolve_job_def("dream").execute_in_process(
                instance=instance, partition_key="ana", raise_on_error=False
            )
            assert not result.success
            errors = failures(result)
            assert "is held by upkeep batch run B1 (pid" in errors, errors
            assert not instance.get_materialized_partitions(dg.AssetKey("vault"))
            assert not page(root, "ana").exists()  # her dream never ran
    finally:
        barrier.touch()
        holder.wait(timeout=30)
