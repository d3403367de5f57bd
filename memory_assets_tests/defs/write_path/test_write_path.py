"""The write path in Dagster: the transcripts sensor requests it while turns are waiting, the asset
ingests them on a real instance, and its metadata counts facts by outcome."""

import dagster as dg

from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets.defs.index.external import daily_logs
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.write_path.assets import ingested_turns
from memory_assets.defs.write_path.external import transcripts
from memory_assets.defs.write_path.sensors import transcripts_sensor
from memory_assets_tests.core.write_path.test_ingest import write_transcripts


def tick(settings: Settings, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    with dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"memory": MemoryHomeResource(home=str(settings.home))}
    ) as context:
        return transcripts_sensor(context)


def test_the_sensor_requests_the_write_path_and_the_asset_counts_outcomes(
    settings: Settings, embedder: Embedder
) -> None:
    instance = dg.DagsterInstance.ephemeral()
    quiet = tick(settings, instance, None)
    assert not quiet.run_requests  # no transcript yet
    write_transcripts(settings)
    due = tick(settings, instance, quiet.cursor)
    [request] = due.run_requests
    assert "sessA" in request.tags["memory_assets/sessions_behind"]
    result = dg.materialize(
        [transcripts, ingested_turns, daily_logs],
        selection=[ingested_turns],
        instance=instance,
        resources={"memory": MemoryHomeResource(home=str(settings.home)), "embedder": EmbedderResource()},
        tags={"dagster/run_key": request.run_key},
    )
    [meta] = [
        m.metadata
        for m in result.asset_materializations_for_node("ingested_turns")
        if m.asset_key == ingested_turns.key
    ]
    assert meta["turns"].value == 7
    assert meta["new"].value + meta["revision"].value >= 4 and meta["confirmation"].value >= 1
    logged = [
        e.event_specific_data.materialization.partition
        for e in result.get_asset_materialization_events()
        if e.asset_key == daily_logs.key
    ]
    assert "2026-10-01" in logged
    assert not tick(settings, instance, due.cursor).run_requests  # caught up
