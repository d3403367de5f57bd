"""The whole code location loads; the domain core never imports Dagster."""

import ast
from pathlib import Path

import dagster as dg

import memory_assets
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
    assert "daily_logs" in parents["vault_pages"]
    assert {"archive_index", "vault_index", "core_file_index"} <= parents["archival_memories"]
    assert not parents["daily_logs"]  # nothing reads back up the chain


def test_domain_core_imports_no_dagster() -> None:
    core = Path(memory_assets.__file__).parent / "core"
    offenders = []
    for path in [*core.rglob("*.py"), core.parent / "settings.py", core.parent / "cli.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "dagster"]
    assert offenders == []
