"""The legacy jobs on a real Dagster instance: apply refuses before the export, the export job
appends and indexes, apply only reports until confirmed, and the asset check warns while any row
is recorded nowhere and fails when legacy rows are in the table after an apply claimed success."""

from typing import Any

import dagster as dg
import pytest

from memory_assets.core.index.store import MemoryStore
from memory_assets.core.legacy.backup import restore
from memory_assets.core.legacy.find import CHECK_NAME, find_legacy
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets_tests.core.legacy.test_find import Row, at, build_home, table_rows

pytestmark = pytest.mark.usefixtures("embedder")  # the model, loaded once per session


def run(
    job: str, settings: Settings, instance: dg.DagsterInstance, **config: Any
) -> dg.ExecuteInProcessResult:
    from memory_assets.definitions import defs

    op = {"legacy_export": "legacy_rows_exported", "legacy_apply": "legacy_rows_deleted"}[job]
    return defs.resolve_job_def(job).execute_in_process(
        instance=instance,
        resources={"memory": MemoryHomeResource(home=str(settings.home)), "embedder": EmbedderResource()},
        run_config={"ops": {op: {"config": config}}} if config else None,
        raise_on_error=False,
    )


def materialized(result: dg.ExecuteInProcessResult, asset: str) -> list[Any]:
    return [
        m.metadata for m in result.asset_materializations_for_node(asset) if m.asset_key == dg.AssetKey(asset)
    ]


def check(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    [evaluation] = [
        e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION" and e.event_specific_data.check_name == CHECK_NAME
    ]
    return evaluation


def test_export_then_confirmed_apply_and_the_check_through_it(settings: Settings, embedder: Embedder) -> None:
    from datetime import date

    scenario = build_home(settings, n_legacy=80)
    instance = dg.DagsterInstance.ephemeral()
    original = table_rows(settings.index_uri)

    refused = run("legacy_apply", settings, instance)
    assert not refused.success and table_rows(settings.index_uri) == original
    [failure] = [e for e in refused.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "legacy export" in failure.event_specific_data.error.message  # names the fix

    exported = run("legacy_export", settings, instance)
    assert exported.success
    [meta] = materialized(exported, "legacy_rows_exported")
    assert meta["exported"].value == len(scenario.unrecorded) + 2  # + the persona and facts blocks
    assert meta["rows_embedded"].value >= len(scenario.unrecorded)
    logs = {
        e.event_specific_data.materialization.partition
        for e in exported.get_asset_materialization_events()
        if e.asset_key == dg.AssetKey("daily_logs")
    }
    assert logs and all(d >= "2026-01-01" for d in logs)
    evaluation = check(exported)
    assert evaluation.passed and evaluation.metadata["unrecorded"].value == 0

    dry = run("legacy_apply", settings, instance)
    assert dry.success and not materialized(dry, "legacy_rows_deleted")
    [observed] = [
        e.event_specific_data.asset_observation.metadata
        for e in dry.all_events
        if e.event_type_value == "ASSET_OBSERVATION"
    ]
    assert observed["confirmed"].value is False and observed["deleted"].value == 0
    assert find_legacy(settings).rows  # nothing deleted

    done = run("legacy_apply", settings, instance, confirm=True)
    assert done.success
    [applied] = materialized(done, "legacy_rows_deleted")
    assert applied["deleted"].value == len(scenario.legacy) and applied["backup"].value.startswith("legacy-")
    assert find_legacy(settings).rows == [] and check(done).passed
    assert MemoryStore(settings.index_uri).count("source_type IS NULL") == 0

    # A restore is journalled: the rows are back, all recorded, and the check passes.
    restore(settings, applied["backup"].value)
    again = run("legacy_export", settings, instance)
    assert check(again).passed and check(again).metadata["legacy_rows"].value == len(scenario.legacy)
    # An apply that claims success and then finds legacy rows in the table (the old assistant
    # still writing, say) fails the check as an error, with the fix.
    assert run("legacy_apply", settings, instance, confirm=True).success
    lone = Row("Met the new neighbour, a retired pilot called Iris", at(date(2026, 11, 2)), {})
    lone.id = "late-legacy-row"
    import lancedb

    table = lancedb.connect(settings.index_uri).open_table("archival_memories")
    vector = embedder.embed([lone.content])[0]
    table.add(
        [
            {
                **{k: v for k, v in table.search().limit(1).to_list()[0].items() if k != "_distance"},
                "id": lone.id,
                "content": lone.content,
                "vector": vector,
                "source_type": None,
                "source_file": None,
                "metadata": "{}",
            }
        ]
    )
    late = run("legacy_export", settings, instance, table=None)
    evaluation = check(late)
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert "claimed success" in (evaluation.description or "")


def test_the_check_warns_while_rows_are_recorded_nowhere(settings: Settings) -> None:
    scenario = build_home(settings, n_legacy=80)
    from memory_assets.core.legacy.find import recorded_nowhere_else

    outcome = recorded_nowhere_else(settings)
    assert not outcome.passed and outcome.severity == "warn"
    # every copy of a text counts (the export appends it once), and the persona and facts blocks
    assert outcome.metadata["unrecorded"] == len(scenario.unrecorded) + len(scenario.duplicates) + 2
    assert "legacy export" in outcome.problems[0]
    assert [d["recorded_in"] for d in outcome.details[: outcome.metadata["unrecorded"]]] == ["-"] * int(
        outcome.metadata["unrecorded"]
    )  # every unrecorded row is listed for the UI's table
