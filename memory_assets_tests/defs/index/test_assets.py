"""Index assets materialised in a real (ephemeral) Dagster instance."""

from datetime import UTC, date, datetime, timedelta

import dagster as dg

from memory_assets.core.capture.transcripts import keep_turn
from memory_assets.core.home import Home
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.ops.reindex import day_rows
from memory_assets.core.settings import Settings
from memory_assets.defs.index.assets import (
    archival_memories,
    archive_index,
    core_file_index,
    transcript_index,
    vault_index,
)
from memory_assets.defs.index.checks import ids_unique, no_tombstoned_content, table_bounded
from memory_assets.defs.index.external import EXTERNAL_ASSETS
from memory_assets.defs.partitions import day_range_tags, register_days
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.write_path.external import transcripts
from memory_assets_tests.conftest import DAY, write_facts


def resources(settings: Settings) -> dict[str, object]:
    return {"memory": MemoryHomeResource(home=str(settings.home)), "embedder": EmbedderResource()}


def materialize_day(settings: Settings, instance: dg.DagsterInstance, day: date) -> dg.ExecuteInProcessResult:
    register_days(instance, [day])
    return dg.materialize(
        [*EXTERNAL_ASSETS, archive_index],
        partition_key=day.isoformat(),
        instance=instance,
        resources=resources(settings),
        selection=[archive_index],
    )


def test_a_day_materialises_with_metadata_and_a_passing_check(settings: Settings, embedder: object) -> None:
    instance = dg.DagsterInstance.ephemeral()
    write_facts(settings, DAY, "Prefers metric units in all answers", "Drinks oat milk in coffee")
    result = materialize_day(settings, instance, DAY)
    assert result.success
    meta = result.asset_materializations_for_node("archive_index")[0].metadata
    assert (meta["rows"].value, meta["embedded"].value, meta["deleted"].value) == (2, 2, 0)
    assert isinstance(meta["seconds"].value, float)
    [check] = result.get_asset_check_evaluations()
    assert check.passed and check.metadata["stored_rows"].value == 2
    assert check.partition == DAY.isoformat() and check.description  # shown per partition in the UI

    append_tombstone(settings.tombstones_path, "Drinks oat milk in coffee")
    again = materialize_day(settings, instance, DAY)
    meta = again.asset_materializations_for_node("archive_index")[0].metadata
    assert (meta["rows"].value, meta["embedded"].value, meta["deleted"].value) == (1, 0, 1)
    assert again.get_asset_check_evaluations()[0].passed
    events = instance.get_latest_materialization_event(dg.AssetKey("archive_index"))
    assert events is not None and events.dagster_event.partition == DAY.isoformat()


def test_one_run_over_a_range_of_days_records_each_day_with_its_own_numbers_and_check(
    settings: Settings, embedder: object
) -> None:
    """A backfill's run covers a range of day partitions (BackfillPolicy.multi_run): every day is
    reindexed, its materialisation carries that day's numbers, and its check is its own."""
    instance = dg.DagsterInstance.ephemeral()
    days = [date(2026, 3, 2), date(2026, 7, 14), date(2026, 11, 20)]  # sparse: months apart
    for n, day in enumerate(days):
        write_facts(settings, day, *[f"Fact number {k} of {day}" for k in range(n + 1)])
    assert register_days(instance, days[1:]) == [d.isoformat() for d in days[1:]]
    # An older day: the later keys are added again after it, so the keys keep calendar order.
    assert register_days(instance, days) == [d.isoformat() for d in days]
    assert register_days(instance, days) == []  # already there
    assert instance.get_dynamic_partitions("log_days") == [d.isoformat() for d in days]
    result = dg.materialize(
        [*EXTERNAL_ASSETS, archive_index],
        instance=instance,
        resources=resources(settings),
        selection=[archive_index],
        tags=day_range_tags(days[0], days[-1]),
    )
    assert result.success
    by_day = {m.partition: m.metadata for m in result.asset_materializations_for_node("archive_index")}
    assert sorted(by_day) == [d.isoformat() for d in days]
    assert [by_day[d.isoformat()]["rows"].value for d in days] == [1, 2, 3]
    assert all(by_day[d.isoformat()]["days_in_run"].value == 3 for d in days)
    checks = {c.partition: c for c in result.get_asset_check_evaluations()}
    assert sorted(checks) == [d.isoformat() for d in days]
    assert all(c.passed and c.check_name == "rows_match_log" for c in checks.values())
    assert [checks[d.isoformat()].metadata["stored_rows"].value for d in days] == [1, 2, 3]
    # Each evaluation targets its own day's materialisation, so the UI shows it as current.
    for day in days:
        target = checks[day.isoformat()].target_materialization_data
        assert target is not None and target.run_id == result.run_id


def test_the_row_check_fails_when_the_table_disagrees_with_the_log(
    settings: Settings, embedder: object
) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers")
    indexer = Indexer(settings, embedder=embedder)  # type: ignore[arg-type]
    result = indexer.reindex_day(DAY)
    from memory_assets.defs.index.assets import day_rows_check

    indexer.store.table().delete("source_type = 'archive_log'")  # someone bypassed the indexer
    check = day_rows_check(day_rows(Home(settings, store=indexer.store), DAY, result))
    assert not check.passed and check.metadata["missing"].value == 1
    assert check.metadata["partition"].value == DAY.isoformat() and "rematerialise" in check.description


def test_files_assets_table_asset_and_checks(settings: Settings, embedder: object) -> None:
    (settings.notebook_dir / "3_Personal" / "Health.md").write_text(
        "---\nstatus: stable\n---\n- Runs daily.\n"
    )
    (settings.memory_dir / "persona.md").write_text("You are a helpful assistant.\n")
    write_facts(settings, DAY, "Prefers metric units in all answers")
    instance = dg.DagsterInstance.ephemeral()
    res = resources(settings)
    assert materialize_day(settings, instance, DAY).success
    result = dg.materialize(
        [
            *EXTERNAL_ASSETS,
            archive_index,
            vault_index,
            core_file_index,
            archival_memories,
            no_tombstoned_content,
            table_bounded,
            ids_unique,
        ],
        instance=instance,
        resources=res,
        selection=[vault_index, core_file_index, archival_memories],
    )
    assert result.success
    vault_meta = result.asset_materializations_for_node("vault_index")[0].metadata
    assert (vault_meta["files_updated"].value, vault_meta["embedded"].value) == (1, 1)
    table_meta = result.asset_materializations_for_node("archival_memories")[0].metadata
    assert (
        table_meta["rows"].value == 3
        and table_meta["fragments"].value <= table_meta["fragments_before"].value
    )
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {"no_tombstoned_content": True, "table_bounded": True, "ids_unique": True}

    # A tombstone written without a reindex is exactly what the check exists to catch.
    append_tombstone(settings.tombstones_path, "You are a helpful assistant.")
    failing = dg.materialize(
        [
            *EXTERNAL_ASSETS,
            archive_index,
            vault_index,
            core_file_index,
            archival_memories,
            no_tombstoned_content,
        ],
        instance=instance,
        resources=res,
        selection=[archival_memories, no_tombstoned_content],
    )
    [check] = failing.get_asset_check_evaluations()
    assert not check.passed and check.metadata["tombstoned_rows"].value == 1


def test_vault_index_reindexes_only_the_configured_files(settings: Settings, embedder: object) -> None:
    for name in ("A", "B"):
        (settings.notebook_dir / "2_Wiki" / "Concepts" / f"{name}.md").write_text(f"Concept {name} text.\n")
    result = dg.materialize(
        [*EXTERNAL_ASSETS, vault_index],
        resources=resources(settings),
        instance=dg.DagsterInstance.ephemeral(),
        selection=[vault_index],
        run_config={"ops": {"vault_index": {"config": {"files": ["notebook:2_Wiki/Concepts/A.md"]}}}},
    )
    meta = result.asset_materializations_for_node("vault_index")[0].metadata
    assert (meta["files_checked"].value, meta["embedded"].value) == (1, 1)


def materialize_transcripts(
    settings: Settings, instance: dg.DagsterInstance, files: list[str] | None = None
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [*EXTERNAL_ASSETS, transcripts, transcript_index],
        instance=instance,
        resources=resources(settings),
        selection=[transcript_index],
        run_config={"ops": {"transcript_index": {"config": {"files": files}}}} if files else None,
    )


def test_transcript_index_embeds_exactly_the_appended_turns(settings: Settings, embedder: object) -> None:
    """The recall tier's diff, as the asset records it: 20 turns embedded, then 5 appended turns are
    the only rows embedded (5 / 5 = 1.00), nothing deleted, and the run's own row check passes."""
    at = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    for i in range(20):
        keep_turn(
            settings.transcripts_dir,
            "chat-1",
            f"Message number {i} about the garden",
            "",
            at + timedelta(minutes=i),
        )
    instance = dg.DagsterInstance.ephemeral()
    first = materialize_transcripts(settings, instance)
    assert first.success
    meta = first.asset_materializations_for_node("transcript_index")[0].metadata
    assert (meta["files_updated"].value, meta["embedded"].value, meta["rows"].value) == (1, 20, 20)
    for i in range(20, 25):
        keep_turn(
            settings.transcripts_dir,
            "chat-1",
            f"Message number {i} about the garden",
            "",
            at + timedelta(minutes=i),
        )
    again = materialize_transcripts(settings, instance, files=["transcript:captured/chat-1.jsonl"])
    meta = again.asset_materializations_for_node("transcript_index")[0].metadata
    assert meta["embedded"].value / 5 == 1.00
    assert (meta["deleted"].value, meta["rows"].value, meta["files_checked"].value) == (0, 25, 1)
    assert "`transcript:captured/chat-1.jsonl`" in meta["updated_files"].value
    [check] = again.get_asset_check_evaluations()
    assert check.check_name == "rows_match_transcript" and check.passed
    assert (check.metadata["planned_rows"].value, check.metadata["stored_rows"].value) == (25, 25)
    events = instance.get_latest_materialization_event(dg.AssetKey("transcript_index"))
    assert events is not None and events.run_id == again.run_id


def test_the_transcript_row_check_fails_when_the_table_disagrees_with_the_transcript(
    settings: Settings, embedder: object
) -> None:
    keep_turn(settings.transcripts_dir, "chat-9", "We adopted a cat called Miso", "", datetime.now(UTC))
    indexer = Indexer(settings, embedder=embedder)  # type: ignore[arg-type]
    sweep = indexer.reindex_files(labels=["transcript"])
    from memory_assets.defs.index.assets import transcript_rows_check

    home = Home(settings, store=indexer.store)
    assert transcript_rows_check(home, sweep).passed
    indexer.store.table().delete("source_type = 'transcript'")  # someone bypassed the indexer
    check = transcript_rows_check(home, sweep)
    assert not check.passed and check.metadata["missing_rows"].value == 1
    assert "transcripts/captured/chat-9.jsonl: 1 planned row(s) missing" in (check.description or "")
