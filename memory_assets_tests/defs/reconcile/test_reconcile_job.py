"""The reconcile in Dagster: the job retires the dream's hand-off on a real instance (its check
passing), and reconcile_after_dream requests it after a successful dream run, once per run."""

import uuid

import dagster as dg

from memory_assets.core.index.store import MemoryStore
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets.defs.reconcile.assets import HANDOFF_CHECK
from memory_assets.defs.reconcile.jobs import reconcile_after_dream
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets_tests.core.test_reconcile import DAYS, build


def test_the_reconcile_job_retires_the_hand_off_and_its_check_passes(
    settings: Settings, embedder: Embedder
) -> None:
    from memory_assets.definitions import defs

    build(settings, embedder)
    instance = dg.DagsterInstance.ephemeral()
    result = defs.resolve_job_def("reconcile").execute_in_process(
        instance=instance,
        resources={"memory": MemoryHomeResource(home=str(settings.home)), "embedder": EmbedderResource()},
    )
    assert result.success
    [meta] = [
        m.metadata
        for m in result.asset_materializations_for_node("superseded_retired")
        if m.asset_key == dg.AssetKey("superseded_retired")
    ]
    assert (meta["retired"].value, meta["refused"].value, meta["unmatched"].value) == (6, 1, 1)
    assert meta["days_reindexed"].value == len(DAYS)
    [check] = [
        e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
        and e.event_specific_data.check_name == HANDOFF_CHECK
    ]
    assert check.passed and settings.superseded_path.read_text() == ""
    logs = sorted(c for _, c, kind in MemoryStore(settings.index_uri).contents() if kind == "archive_log")
    assert logs == sorted(f"Unfolded fact of {d}, which stays indexed" for d in DAYS)
    materialized = {e.asset_key for e in result.get_asset_materialization_events()}
    assert dg.AssetKey("archival_memories") in materialized  # optimize ran last


def test_a_successful_dream_run_requests_the_reconcile_once() -> None:
    from memory_assets.definitions import defs

    instance = dg.DagsterInstance.ephemeral()
    run_id = str(uuid.uuid4())
    run = instance.create_run_for_job(defs.resolve_job_def("dream"), run_id=run_id)
    context = dg.build_run_status_sensor_context(
        sensor_name=reconcile_after_dream.name,
        dagster_instance=instance,
        dagster_run=run,
        dagster_event=dg.DagsterEvent(event_type_value="PIPELINE_SUCCESS", job_name=run.job_name),
    )
    request = reconcile_after_dream(context)
    assert request.run_key == f"reconcile-after:{run_id}"  # one reconcile per dream run
