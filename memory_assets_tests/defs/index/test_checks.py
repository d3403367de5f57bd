"""The asset checks, run in a real (ephemeral) Dagster instance over a real home, index and model."""

from datetime import UTC, datetime, timedelta

import dagster as dg

from memory_assets.core.capture.transcripts import keep_turn
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.settings import Settings
from memory_assets.defs.index.assets import INDEX_ASSETS, archival_memories
from memory_assets.defs.index.checks import (
    INDEX_CHECKS,
    ids_unique,
    logs_append_only,
    no_tombstoned_content,
    rows_match_logs,
    rows_match_transcripts,
    search_finds_rows,
    table_bounded,
    turns_accounted_for,
)
from memory_assets.defs.index.external import EXTERNAL_ASSETS
from memory_assets.defs.resources import EmbedderResource, MemoryHomeResource
from memory_assets.defs.text_free import TextFree
from memory_assets_tests.conftest import DAY, write_facts


def resources(settings: Settings) -> dict[str, object]:
    return {"memory": MemoryHomeResource(home=str(settings.home)), "embedder": EmbedderResource()}


def evaluations(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_every_check_has_a_description_and_targets_its_asset() -> None:
    targets = {}
    for check in INDEX_CHECKS:
        [spec] = check.check_specs
        assert spec.description, spec.name
        targets[spec.name] = spec.asset_key.to_user_string()
    assert targets == {
        "ids_unique": "archival_memories",
        "rows_match_logs": "archival_memories",
        "rows_match_transcripts": "archival_memories",
        "turns_accounted_for": "archival_memories",
        "no_tombstoned_content": "archival_memories",
        "table_bounded": "archival_memories",
        "search_finds_rows": "archival_memories",
        "logs_append_only": "daily_logs",
        "facts_accounted_for": "archival_memories",
    }


def test_archival_memories_checks_pass_then_one_fails_with_its_metadata(
    settings: Settings, indexer: Indexer
) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers", "Drinks oat milk in coffee")
    indexer.sweep()
    instance = dg.DagsterInstance.ephemeral()
    assets = [*EXTERNAL_ASSETS, *INDEX_ASSETS]
    checks = [ids_unique, rows_match_logs, no_tombstoned_content, table_bounded, search_finds_rows]
    result = dg.materialize(
        [*assets, *checks], instance=instance, resources=resources(settings), selection=[archival_memories]
    )
    assert result.success
    passed = evaluations(result)
    assert set(passed) == {
        "ids_unique",
        "rows_match_logs",
        "no_tombstoned_content",
        "table_bounded",
        "search_finds_rows",
    }
    assert all(e.passed for e in passed.values())
    assert passed["rows_match_logs"].metadata["planned_rows"].value == 2
    assert passed["table_bounded"].metadata["max_fragments"].value == 64
    probe = passed["search_finds_rows"]
    assert probe.metadata["found"].value == probe.metadata["sampled"].value == 2
    assert probe.metadata["search_p50_ms"].value > 0 and probe.metadata["misses"].value == "_none_"

    # A tombstone written without a reindex: the row is still there, and the day's rows no longer
    # match its plan either.
    append_tombstone(settings.tombstones_path, "Drinks oat milk in coffee")
    failing = dg.materialize(
        [*assets, *checks], instance=instance, resources=resources(settings), selection=[archival_memories]
    )
    assert failing.success  # an ERROR check fails without failing the run
    found = evaluations(failing)
    tomb = found["no_tombstoned_content"]
    assert not tomb.passed and tomb.severity == dg.AssetCheckSeverity.ERROR
    assert tomb.metadata["tombstoned_rows"].value == 1
    # The row is named by id and file; its words by their keyed tag, never as they are (Dagster
    # keeps a check's metadata for good, where no erase reaches: defs/text_free.py).
    tag = TextFree(settings.state_dir).tag("Drinks oat milk in coffee")
    assert f"| archive/{DAY.isoformat()}.md | {tag} |" in tomb.metadata["tombstoned"].value
    assert tag in tomb.metadata["problems"].value
    assert "oat milk" not in repr(tomb.metadata) + str(tomb.description)
    assert "memory-assets reindex" in tomb.metadata["problems"].value
    assert tomb.description and "1 row(s)" in tomb.description
    days = found["rows_match_logs"]
    assert not days.passed and days.metadata["unexpected_rows"].value == 1
    assert f"| {DAY.isoformat()} | 1 | 2 | 0 | 1 |" in days.metadata["days"].value
    ids = found["ids_unique"]
    assert ids.passed and ids.metadata["duplicate_ids"].value == 0
    assert ids.metadata["duplicates"].value == "_none_"


def test_logs_append_only_runs_on_the_external_daily_logs(settings: Settings) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers", "Drinks oat milk in coffee")
    instance = dg.DagsterInstance.ephemeral()

    def run() -> dg.AssetCheckEvaluation:
        result = dg.materialize(
            [*EXTERNAL_ASSETS, logs_append_only],
            instance=instance,
            resources=resources(settings),
            selection=dg.AssetSelection.checks(logs_append_only),
        )
        [evaluation] = result.get_asset_check_evaluations()
        return evaluation

    first = run()
    assert first.passed and first.metadata["new_logs"].value == 1
    path = settings.archive_dir / f"{DAY.isoformat()}.md"
    path.write_text(path.read_text().replace("Drinks oat milk", "Drinks cow milk"))
    second = run()
    assert not second.passed and second.metadata["changed_logs"].value == 1
    assert f"| archive/{DAY.isoformat()}.md | 6 |" in second.metadata["changes"].value
    assert "line 6 was changed" in second.metadata["problems"].value


def test_the_recall_tiers_checks_pass_then_name_a_stranded_turn(settings: Settings, indexer: Indexer) -> None:
    """rows_match_transcripts and turns_accounted_for on archival_memories: they pass on an indexed
    home with turns, and both fail, naming the transcript, when a turn's row goes behind the
    indexer's back."""
    at = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    keep_turn(settings.transcripts_dir, "chat-1", "We adopted a cat called Miso", "Lovely!", at)
    keep_turn(
        settings.transcripts_dir, "chat-1", "The boiler broke again on Monday", "", at + timedelta(minutes=1)
    )
    indexer.sweep()
    instance = dg.DagsterInstance.ephemeral()
    checks = [rows_match_transcripts, turns_accounted_for, no_tombstoned_content]

    def run() -> dict[str, dg.AssetCheckEvaluation]:
        result = dg.materialize(
            [*EXTERNAL_ASSETS, *INDEX_ASSETS, *checks],
            instance=instance,
            resources=resources(settings),
            selection=dg.AssetSelection.checks(*checks),
        )
        return evaluations(result)

    passed = run()
    assert all(e.passed for e in passed.values()), passed
    assert passed["rows_match_transcripts"].metadata["planned_rows"].value == 2
    assert passed["turns_accounted_for"].metadata["indexed"].value == 2
    indexer.store.table().delete("content = 'The boiler broke again on Monday'")
    failing = run()
    rows, turns = failing["rows_match_transcripts"], failing["turns_accounted_for"]
    assert not rows.passed and rows.severity == dg.AssetCheckSeverity.ERROR
    assert "| captured/chat-1.jsonl | 2 | 1 | 1 | 0 | 0 |" in rows.metadata["transcripts"].value
    assert not turns.passed and turns.metadata["stranded"].value == 1
    table = turns.metadata["stranded_turns"].value
    tag = TextFree(settings.state_dir).tag("The boiler broke again on Monday")
    assert f"| transcripts/captured/chat-1.jsonl | 3 | {tag} | 1 |" in table  # the turn by file, line, tag
    assert "boiler" not in repr(turns.metadata)
    assert "memory-assets reindex" in turns.metadata["problems"].value
