"""The dream in Dagster: the dream_sensor requests a run over the pending batch from persisted state
(adding the batch's day partitions that are missing), the dream job consolidates it on a real
instance, and the next tick does not request the same days again."""

from datetime import UTC, date, datetime, timedelta

import dagster as dg

from memory_assets.core.knowledge.watermark import read_watermark
from memory_assets.core.settings import Settings
from memory_assets.defs.dream.sensors import dream_sensor
from memory_assets.defs.partitions import LOG_DAYS
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets_tests.conftest import write_facts


def tick(settings: Settings, instance: dg.DagsterInstance) -> dg.SensorResult:
    with dg.build_sensor_context(
        instance=instance, resources={"memory": MemoryHomeResource(home=str(settings.home))}
    ) as context:
        return dream_sensor(context)


def test_the_sensor_requests_the_batch_and_the_dream_job_consolidates_it(settings: Settings) -> None:
    from memory_assets.definitions import defs

    today = datetime.now(UTC).date()
    days = [today - timedelta(days=n) for n in range(9, 2, -1)]  # a week behind
    early = days[0] - timedelta(days=20)  # a log weeks older than the rest
    for day in [early, *days]:
        write_facts(
            settings,
            day,
            f"Plays the cello in a quartet on {day:%A}s",
            f"Keeps a reading list of {day.day} books for the winter",
            f"Walks to the market on {day:%B %d} for fresh bread",
        )  # 24 fact lines: past the default min_facts
    instance = dg.DagsterInstance.ephemeral()
    first = tick(settings, instance)
    assert first.run_requests, first.skip_reason
    [request] = first.run_requests
    assert request.job_name == "dream" and request.tags["memory_assets/decision"] == "ingest"
    assert request.tags["dagster/asset_partition_range_start"] == early.isoformat()
    last = request.tags["dagster/asset_partition_range_end"]
    assert date.fromisoformat(last) in days
    # The batch's days get their partitions in the same tick, oldest first.
    [added] = first.dynamic_partitions_requests
    assert isinstance(added, dg.AddDynamicPartitionsRequest)
    assert added.partitions_def_name == LOG_DAYS and added.partition_keys == sorted(added.partition_keys)
    assert {early.isoformat(), last} <= set(added.partition_keys)
    instance.add_dynamic_partitions(LOG_DAYS, list(added.partition_keys))
    result = defs.resolve_job_def("dream").execute_in_process(
        instance=instance,
        resources={"memory": MemoryHomeResource(home=str(settings.home)), "embedder": EmbedderResource()},
        tags={k: v for k, v in request.tags.items() if k.startswith("dagster/")},
    )
    assert result.success
    [meta] = [m.metadata for m in result.asset_materializations_for_node("vault") if m.partition == last]
    assert meta["advanced"].value is True and meta["add"].value > 0
    watermark = read_watermark(settings.log_md)
    assert watermark is not None and watermark.isoformat() == last and watermark >= days[0]
    again = tick(settings, instance)
    assert not [
        r for r in again.run_requests or [] if r.tags.get("dagster/asset_partition_range_end") == last
    ]
