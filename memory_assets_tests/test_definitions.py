"""The whole code location loads, its lineage flows one way, and maintenance runs by default."""

from pathlib import Path

import dagster as dg
import pytest

from memory_assets.core.settings import SettingsError
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
        "archival_memories",
    } <= keys
    assert {s.name for s in defs.sensors or []} >= {"daily_log_sensor", "vault_sensor"}


def test_lineage_flows_one_way_from_logs_to_the_index() -> None:
    graph = defs.get_repository_def().asset_graph
    parents = {
        k.to_user_string(): {p.to_user_string() for p in graph.get(k).parent_keys}
        for k in graph.get_all_asset_keys()
    }
    assert {"daily_logs", "tombstones", "consolidation_log"} <= parents["archive_index"]
    assert parents["vault"] == {"daily_logs"} and parents["vault_pages"] == {"vault"}
    assert {"archive_index", "vault_index", "core_file_index"} <= parents["archival_memories"]
    # Nothing reads back up the chain: the logs' only parent is the write path, fed by the transcripts.
    assert parents["daily_logs"] == {"ingested_turns"} and parents["ingested_turns"] == {"transcripts"}
    assert not parents["transcripts"]


def test_maintenance_and_the_sensors_run_by_default() -> None:
    """Maintenance that matters is RUNNING in the loaded definitions, not left for someone to start."""
    sensors = {s.name: s for s in defs.sensors or []}
    for name in ("daily_log_sensor", "vault_sensor", "index_maintenance_sensor"):
        assert sensors[name].default_status == dg.DefaultSensorStatus.RUNNING, name
    assert sensors["index_maintenance_sensor"].job_name == "optimize_index"
    archival = defs.get_repository_def().asset_graph.get(dg.AssetKey("archival_memories"))
    assert archival.automation_condition is None  # no condition that needs the (stopped) automation sensor


def test_partitions_start_at_the_oldest_log_unless_overridden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, date, datetime

    from memory_assets.core.capture.daily_log import LogFact, append_facts
    from memory_assets.defs import partitions

    home = tmp_path / "home"
    for day in (date(2025, 3, 9), date(2025, 7, 1)):
        append_facts(
            home / "memory" / "archive",
            "c0ffee00",
            [LogFact("A fact")],
            now=datetime(day.year, day.month, day.day, tzinfo=UTC),
        )
    monkeypatch.setenv("MEMORY_HOME", str(home))
    monkeypatch.delenv("MEMORY_PARTITIONS_START", raising=False)
    partitions.partitions_start.cache_clear()
    try:
        assert partitions.partitions_start() == date(2025, 3, 9)
        partitions.partitions_start.cache_clear()
        monkeypatch.setenv("MEMORY_PARTITIONS_START", "2024-12-31")
        assert partitions.partitions_start() == date(2024, 12, 31)
        partitions.partitions_start.cache_clear()
        monkeypatch.setenv("MEMORY_PARTITIONS_START", "yesterday")
        with pytest.raises(
            SettingsError, match="MEMORY_PARTITIONS_START='yesterday' is not a YYYY-MM-DD date"
        ):
            partitions.partitions_start()
    finally:
        partitions.partitions_start.cache_clear()
    assert not list((home / "memory" / "archive").glob("*.lock"))  # no lock files among the logs
