"""Each shape of the code location, pinned: its assets, asset checks, jobs, sensors and schedules.

The single home (``MEMORY_ROOT`` unset) and the many homes (``MEMORY_ROOT`` set) load different
definitions; each is summarised (names, groups, partitions, the jobs' assets, a sensor's jobs,
interval and default status, a schedule's cron, time zone and default status) and compared with
its committed snapshot under ``__snapshots__/test_definitions_snapshot/``. A removed schedule, a
sensor left stopped or an asset moved to another group then shows as a diff in review.

When a change to the definitions is meant, rewrite the snapshots and commit them with it:

    .venv/bin/pytest memory_assets_tests/test_definitions_snapshot.py --snapshot-update

(syrupy's option; a test without its snapshot fails, it is never written silently).
"""

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from memory_assets_tests.defs.homes.test_homes import location


def _partitions(partitions_def: dg.PartitionsDefinition | None) -> str | None:
    if partitions_def is None:
        return None
    if isinstance(partitions_def, dg.DynamicPartitionsDefinition):
        return f"dynamic:{partitions_def.name}"
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        dimensions = ", ".join(
            f"{d.name}={_partitions(d.partitions_def)}" for d in partitions_def.partitions_defs
        )
        return f"multi({dimensions})"
    return f"{type(partitions_def).__name__}: {partitions_def}"


def summary(defs: dg.Definitions) -> dict[str, Any]:
    """What a reviewer should see change: every asset (group, kind, partitions), every check, every
    job (its assets, or its ops when it has none), every sensor and every schedule."""
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        kind = (
            "materializable" if node.is_materializable else "observable" if node.is_observable else "external"
        )
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "kind": kind,
            "partitions": _partitions(node.partitions_def),
        }
    checks = sorted(f"{c.asset_key.to_user_string()}:{c.name}" for c in graph.asset_check_keys)
    jobs = {}
    for job in sorted(repo.get_all_jobs(), key=lambda j: j.name):
        if job.name.startswith("__"):  # Dagster's implicit job over every asset
            continue
        keys = sorted(k.to_user_string() for k in job.asset_layer.executable_asset_keys)
        jobs[job.name] = {
            "assets": keys,
            "ops": [] if keys else sorted(node.name for node in job.graph.nodes),
            "partitions": _partitions(job.partitions_def),
        }
    sensors = {
        s.name: {
            "type": type(s).__name__,
            "status": s.default_status.name,
            "interval_s": s.minimum_interval_seconds,
            "jobs": sorted(t.job_name for t in s.targets) if s.has_jobs else [],
        }
        for s in sorted(repo.sensor_defs, key=lambda s: s.name)
    }
    schedules = {
        s.name: {
            "cron": s.cron_schedule,
            "timezone": s.execution_timezone,
            "status": s.default_status.name,
            "job": s.job_name,
        }
        for s in sorted(repo.schedule_defs, key=lambda s: s.name)
    }
    return {
        "assets": assets,
        "asset_checks": checks,
        "jobs": jobs,
        "sensors": sensors,
        "schedules": schedules,
    }


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


def test_the_single_home_location_is_as_pinned(snapshot_json: SnapshotAssertion) -> None:
    with location(MEMORY_ROOT="") as loc:
        shape = summary(loc.defs)
    assert shape["sensors"] and shape["schedules"] and shape["assets"]  # a real location, not an empty one
    assert shape == snapshot_json


def test_the_many_homes_location_is_as_pinned(snapshot_json: SnapshotAssertion, tmp_path: Path) -> None:
    with location(MEMORY_ROOT=str(tmp_path / "root")) as loc:
        shape = summary(loc.defs)
    assert "homes_sensor" in shape["sensors"] and shape["assets"]  # the many-homes shape, not the single home
    assert shape == snapshot_json
