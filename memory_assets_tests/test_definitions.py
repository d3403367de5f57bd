"""The whole code location loads, its lineage flows one way, and maintenance runs by default."""

from pathlib import Path

import dagster as dg

from memory_assets.definitions import defs


def test_code_location_loads_and_resolves_every_job() -> None:
    dg.Definitions.validate_loadable(defs)
    repo = defs.get_repository_def()
    assert {"reindex", "index_files", "optimize_index"} <= {j.name for j in repo.get_all_jobs()}
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert {
        "daily_logs",
        "vault_pages",
        "core_files",
        "tombstones",
        "consolidation_log",
        "archive_index",
        "vault_index",
        "core_file_index",
        "transcript_index",
        "archival_memories",
    } <= keys
    assert {s.name for s in defs.sensors or []} >= {
        "daily_log_sensor",
        "vault_sensor",
        "transcript_index_sensor",
    }


def test_the_many_homes_code_location_loads_and_resolves_every_job(tmp_path: Path) -> None:
    """With ``MEMORY_ROOT`` set the location is another shape (the homes sensor, the upkeep batch):
    it loads as Dagster loads it, every job resolving."""
    from memory_assets_tests.defs.homes.test_homes import location

    with location(MEMORY_ROOT=str(tmp_path / "root")) as loc:
        dg.Definitions.validate_loadable(loc.defs)
        repo = loc.defs.get_repository_def()
        assert {"upkeep_batch", "reindex", "dream", "dedup_across_users_job"} <= {
            j.name for j in repo.get_all_jobs()
        }
        assert {s.name for s in loc.defs.sensors or []} == {"homes_sensor"}


def test_lineage_flows_one_way_from_logs_to_the_index() -> None:
    graph = defs.get_repository_def().asset_graph
    parents = {
        k.to_user_string(): {p.to_user_string() for p in graph.get(k).parent_keys}
        for k in graph.get_all_asset_keys()
    }
    assert {"daily_logs", "tombstones", "consolidation_log"} <= parents["archive_index"]
    assert parents["vault"] == {"daily_logs"} and parents["vault_pages"] == {"vault"}
    assert {"archive_index", "vault_index", "core_file_index", "transcript_index"} <= parents[
        "archival_memories"
    ]
    # The recall tier: the transcripts feed their own rows, as the logs feed theirs.
    assert parents["transcript_index"] == {"transcripts", "tombstones"}
    # Nothing reads back up the chain: the logs' only parent is the write path, fed by the transcripts.
    assert parents["daily_logs"] == {"ingested_turns"} and parents["ingested_turns"] == {"transcripts"}
    assert not parents["transcripts"]


def test_maintenance_and_the_sensors_run_by_default() -> None:
    """Maintenance that matters is RUNNING in the loaded definitions, not left for someone to start."""
    sensors = {s.name: s for s in defs.sensors or []}
    for name in ("daily_log_sensor", "vault_sensor", "transcript_index_sensor", "index_maintenance_sensor"):
        assert sensors[name].default_status == dg.DefaultSensorStatus.RUNNING, name
    assert sensors["index_maintenance_sensor"].job_name == "optimize_index"
    archival = defs.get_repository_def().asset_graph.get(dg.AssetKey("archival_memories"))
    assert archival.automation_condition is None  # no condition that needs the (stopped) automation sensor


def test_day_shaped_assets_share_the_log_days_and_backfill_ranges_in_few_runs() -> None:
    """One partitioning for every day-shaped asset: a partition per day that has a log (so no
    empty day shows as missing); a backfill of archive_index runs up to DAYS_PER_RUN days a run,
    the dream's vault one run per batch."""
    from memory_assets.defs.partitions import DAYS_PER_RUN, LOG_DAYS, day_key, day_of

    graph = defs.get_repository_def().asset_graph
    day_shaped = {"daily_logs", "archive_index", "vault"}
    for key in graph.get_all_asset_keys():
        partitions_def = graph.get(key).partitions_def
        if key.to_user_string() in day_shaped:
            assert isinstance(partitions_def, dg.DynamicPartitionsDefinition), key
            assert partitions_def.name == LOG_DAYS
        else:
            assert partitions_def is None, key
    archive = graph.get(dg.AssetKey("archive_index")).backfill_policy
    assert archive is not None and archive.max_partitions_per_run == DAYS_PER_RUN
    assert 365 / DAYS_PER_RUN <= 4  # a year of daily logs: a handful of runs
    vault = graph.get(dg.AssetKey("vault")).backfill_policy
    assert vault is not None and vault.max_partitions_per_run is None  # single run
    assert day_of(day_key(day_of("2025-03-09"))).isoformat() == "2025-03-09"
