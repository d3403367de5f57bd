"""The invariant checks on a real home, a real LanceDB and the real model: each passes on a healthy
home and fails on one damaged the way it exists to catch; the CLI maps them to exit codes."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from memory_assets.cli import main
from memory_assets.core.audit.checks import (
    ids_unique,
    logs_append_only,
    no_tombstoned_content,
    rows_match_logs,
    rows_match_transcripts,
    run_all,
    search_finds_rows,
    table_bounded,
)
from memory_assets.core.capture.transcripts import keep_turn
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.tombstones import RECONCILE, append_tombstone, tombstone_line
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.outcome import CheckOutcome
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import DAY, write_facts
from memory_assets_tests.core.index.test_store import assistant_table

NEXT = DAY + timedelta(days=1)


def healthy(settings: Settings, indexer: Indexer) -> None:
    """Two days of facts, a vault page and a core file, indexed by the indexer."""
    write_facts(settings, DAY, "Prefers metric units in all answers", "Drinks oat milk in coffee")
    write_facts(settings, NEXT, "Keeps bees on the roof of the flat")
    (settings.notebook_dir / "3_Personal" / "Health.md").write_text(
        "---\nstatus: stable\n---\n- Runs daily.\n"
    )
    (settings.memory_dir / "persona.md").write_text("You are a helpful assistant.\n")
    indexer.sweep()


def by_name(outcomes: list[CheckOutcome]) -> dict[str, CheckOutcome]:
    return {o.name: o for o in outcomes}


def edit_line(settings: Settings, number: int, new: str) -> None:
    path = settings.archive_dir / f"{DAY.isoformat()}.md"
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[number - 1] = new
    path.write_text("\n".join(lines), encoding="utf-8")


def test_every_check_passes_on_a_healthy_home(settings: Settings, indexer: Indexer) -> None:
    healthy(settings, indexer)
    outcomes = by_name(run_all(settings, indexer.store, indexer.embedder))
    assert list(outcomes) == [
        "logs_append_only",
        "rows_match_logs",
        "rows_match_transcripts",
        "facts_accounted_for",
        "turns_accounted_for",
        "days_consolidated",
        "ids_unique",
        "no_tombstoned_content",
        "table_bounded",
        "search_finds_rows",
    ]
    assert all(o.passed and not o.problems for o in outcomes.values()), outcomes
    assert outcomes["rows_match_logs"].metadata["planned_rows"] == 3
    assert outcomes["facts_accounted_for"].metadata["indexed"] == 3
    assert outcomes["rows_match_logs"].metadata["logs"] == 2
    assert outcomes["ids_unique"].metadata["rows"] == 5
    assert outcomes["logs_append_only"].metadata["new_logs"] == 2
    assert outcomes["table_bounded"].metadata["fragments"] >= 1
    assert (
        outcomes["search_finds_rows"].metadata["found"]
        == outcomes["search_finds_rows"].metadata["sampled"]
        == 5
    )
    json.dumps([o.to_dict() for o in outcomes.values()])  # serialisable as the CLI prints it


def test_an_empty_home_with_no_table_passes(settings: Settings, embedder: Embedder) -> None:
    store = MemoryStore(settings.index_uri)
    assert all(o.passed for o in run_all(settings, store, embedder))
    assert not store.exists()


def test_rows_match_logs_fails_on_a_row_deleted_behind_the_indexers_back(
    settings: Settings, indexer: Indexer
) -> None:
    healthy(settings, indexer)
    indexer.store.table().delete("content = 'Drinks oat milk in coffee'")
    outcome = rows_match_logs(settings, indexer.store)
    assert not outcome.passed and outcome.severity == "error"
    [problem] = outcome.problems
    assert problem.startswith(f"{DAY.isoformat()} (archive/{DAY.isoformat()}.md): 1 planned row(s) missing")
    assert "0 unexpected" in problem and "memory-assets reindex" in problem
    assert outcome.details == [
        {"day": DAY.isoformat(), "planned": 2, "stored": 1, "missing": 1, "unexpected": 0}
    ]
    indexer.sweep(full=True)  # the fix the problem names
    assert rows_match_logs(settings, indexer.store).passed


def test_rows_match_logs_fails_when_logs_have_facts_and_the_table_none(settings: Settings) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers")
    outcome = rows_match_logs(settings, MemoryStore(settings.index_uri))
    assert not outcome.passed and outcome.metadata["missing_rows"] == 1
    assert DAY.isoformat() in outcome.problems[0]


def test_rows_match_logs_names_rows_of_a_deleted_log(settings: Settings, indexer: Indexer) -> None:
    healthy(settings, indexer)
    (settings.archive_dir / f"{NEXT.isoformat()}.md").unlink()
    outcome = rows_match_logs(settings, indexer.store)
    [problem] = outcome.problems
    assert NEXT.isoformat() in problem and "1 unexpected (the log no longer exists)" in problem


def test_ids_unique_fails_on_an_id_inserted_twice(settings: Settings, indexer: Indexer) -> None:
    healthy(settings, indexer)
    table = indexer.store.table()
    copy = table.search().where("content = 'Keeps bees on the roof of the flat'").limit(1).to_arrow()
    table.add(copy)  # straight into LanceDB, bypassing the indexer
    outcome = ids_unique(indexer.store)
    assert not outcome.passed and outcome.metadata["duplicate_ids"] == 1
    [problem] = outcome.problems
    row_id = copy.column("id")[0].as_py()
    assert f"id {row_id} is stored 2 times (archive/{NEXT.isoformat()}.md)" in problem
    assert "memory-assets reindex" in problem
    indexer.sweep()  # the sweep repairs files whose ids are stored twice
    assert ids_unique(indexer.store).passed


def test_no_tombstoned_content_fails_on_a_tombstone_without_a_reindex(
    settings: Settings, indexer: Indexer
) -> None:
    healthy(settings, indexer)
    append_tombstone(settings.tombstones_path, "  drinks OAT milk in coffee ")
    outcome = no_tombstoned_content(settings, indexer.store)
    assert not outcome.passed and outcome.metadata["tombstoned_rows"] == 1
    [problem] = outcome.problems
    assert problem.startswith(f"archive/{DAY.isoformat()}.md: 1 row(s) hold tombstoned content")
    assert "memory-assets reindex" in problem
    indexer.sweep()
    assert no_tombstoned_content(settings, indexer.store).passed


def test_logs_append_only_passes_appends_and_fails_an_edited_earlier_line(
    settings: Settings, indexer: Indexer
) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers", "Drinks oat milk in coffee")
    first = logs_append_only(settings)
    assert first.passed and first.metadata["new_logs"] == 1
    write_facts(settings, DAY, "Keeps bees on the roof of the flat", hour=10)
    appended = logs_append_only(settings)
    assert appended.passed and appended.metadata["appended_logs"] == 1

    edit_line(settings, 6, "- [preference] Drinks cow milk in coffee")
    failed = logs_append_only(settings)
    assert not failed.passed and failed.severity == "error"
    [problem] = failed.problems
    assert f"archive/{DAY.isoformat()}.md line 6 was changed" in problem
    assert "Drinks cow milk" in problem and f"--accept-log {DAY.isoformat()}.md" in problem
    assert failed.details[0]["line"] == 6
    assert not logs_append_only(settings).passed  # it stays visible


def test_table_bounded_fails_past_a_small_bound_until_optimized(settings: Settings, indexer: Indexer) -> None:
    healthy(settings, indexer)
    table = indexer.store.table()
    row = table.search().limit(1).to_arrow()
    for i in range(6):  # six small direct adds: six more fragments
        extra = row.set_column(row.schema.get_field_index("id"), "id", pa.array([f"extra-{i}"]))
        extra = extra.set_column(extra.schema.get_field_index("source_type"), "source_type", pa.array(["x"]))
        table.add(extra)
    outcome = table_bounded(indexer.store, max_fragments=3)
    assert not outcome.passed and outcome.metadata["fragments"] > 3
    [problem] = outcome.problems
    assert "fragments, over the bound of 3" in problem and "memory-assets optimize" in problem
    versions = table_bounded(indexer.store, max_versions=2)
    assert not versions.passed and "versions kept, over the bound of 2" in versions.problems[0]
    indexer.optimize()
    assert table_bounded(indexer.store, max_fragments=3).passed


def test_every_check_reads_an_assistant_era_table_without_changing_it(
    settings: Settings, embedder: Embedder
) -> None:
    assistant_table(settings)
    write_facts(settings, DAY, "Prefers metric units in all answers")
    append_tombstone(settings.tombstones_path, "Was born in Coimbra")  # a row no file holds
    append_tombstone(settings.tombstones_path, "Prefers metric units in all answers")  # a log's row
    store = MemoryStore(settings.index_uri)
    version = store.version()
    outcomes = by_name(run_all(settings, store, embedder))
    assert store.version() == version and store.is_legacy()
    assert outcomes["search_finds_rows"].passed  # searched as it is
    assert outcomes["logs_append_only"].passed
    assert outcomes["ids_unique"].passed and outcomes["ids_unique"].metadata["rows"] == 2
    assert outcomes["table_bounded"].passed
    rows = outcomes["rows_match_logs"]
    assert not rows.passed and "memory-assets migrate" in rows.problems[0]
    tombstoned = outcomes["no_tombstoned_content"]
    assert not tombstoned.passed and tombstoned.metadata["tombstoned_rows"] == 2
    owned, unowned = tombstoned.problems
    assert owned.startswith(f"archive/{DAY.isoformat()}.md: 1 row(s)") and "memory-assets reindex" in owned
    assert "migrates the table" in owned
    assert unowned.startswith("legacy_direct row (no source file): 1 row(s)")
    assert "no reindex removes them" in unowned and "memory-assets migrate" in unowned


def test_cli_check_exits_0_when_healthy_and_1_naming_the_failing_day(
    settings: Settings, indexer: Indexer, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy(settings, indexer)
    home = str(settings.home)
    assert main(["--home", home, "check"]) == 0
    out = capsys.readouterr().out
    assert out.count("passed") == 11 and "FAILED" not in out  # the ten checks and the legacy one
    assert "passed  legacy_rows_recorded_nowhere_else: no legacy rows" in out

    indexer.store.table().delete("content = 'Keeps bees on the roof of the flat'")
    assert main(["--home", home, "check"]) == 1
    out = capsys.readouterr().out
    assert "FAILED  rows_match_logs" in out and f"{NEXT.isoformat()} (archive/{NEXT.isoformat()}.md)" in out

    assert main(["--home", home, "--json", "check"]) == 1
    outcomes = json.loads(capsys.readouterr().out)
    failed = [o for o in outcomes if not o["passed"]]
    assert [o["name"] for o in failed] == ["rows_match_logs", "facts_accounted_for"]
    assert failed[0]["metadata"]["missing_rows"] == 1 and NEXT.isoformat() in failed[0]["problems"][0]
    # The fact is on disk and in no row: stranded, named with its line and the fix.
    assert failed[1]["metadata"]["stranded_not_indexed"] == 1
    assert f"archive/{NEXT.isoformat()}.md line " in failed[1]["problems"][0]
    assert "`memory-assets reindex`" in failed[1]["problems"][0]


def test_cli_check_accepts_an_intended_log_edit(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    write_facts(settings, DAY, "Prefers metric units in all answers")
    home = str(settings.home)
    assert main(["--home", home, "check"]) == 1  # the fact is not indexed yet
    edit_line(settings, 5, "- [preference] Prefers metric units")
    assert main(["--home", home, "check"]) == 1
    out = capsys.readouterr().out
    assert f"archive/{DAY.isoformat()}.md line 5 was changed" in out
    assert main(["--home", home, "--json", "check", "--accept-log", f"{DAY.isoformat()}.md"]) == 1
    captured = capsys.readouterr()
    assert "accepted archive/2026-11-20.md" in captured.err
    assert by_name_json(captured.out)["logs_append_only"]["passed"]


def by_name_json(out: str) -> dict[str, dict[str, object]]:
    return {o["name"]: o for o in json.loads(out)}


PEOPLE = ["Anna", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiro", "Ines", "Jonas"]
DOINGS = [
    "plays the cello in an amateur orchestra",
    "is training for a marathon in Lisbon",
    "collects antique maps of the Baltic",
    "works night shifts as an emergency nurse",
    "keeps sourdough starter in the fridge",
    "is learning Japanese with a tutor",
]


def many_facts(settings: Settings, indexer: Indexer) -> None:
    """Sixty distinct facts (ten people, six doings), so a row can fall out of a top 10."""
    write_facts(settings, DAY, *[f"{p} {d}" for p in PEOPLE for d in DOINGS])
    indexer.sweep()


def test_search_finds_rows_fails_when_stored_vectors_no_longer_answer_the_model(
    settings: Settings, indexer: Indexer
) -> None:
    many_facts(settings, indexer)
    healthy_outcome = search_finds_rows(settings, indexer.store, indexer.embedder)
    assert healthy_outcome.passed and healthy_outcome.metadata["found_share"] == 1.0
    assert healthy_outcome.metadata["sampled"] == 20 and healthy_outcome.metadata["search_p50_ms"] > 0
    # Each row gets another row's vector: what vectors from a different model of the same width, or
    # written under the wrong ids, look like to a search embedded by the configured model.
    table = indexer.store.table()
    rows = table.to_arrow().sort_by("id")
    rolled = np.roll(np.stack(rows.column("vector").to_numpy(zero_copy_only=False)), 1, axis=0)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(rolled.ravel(), pa.float32()), rolled.shape[1])
    table.delete("true")
    table.add(rows.set_column(rows.schema.get_field_index("vector"), "vector", vectors))
    outcome = search_finds_rows(settings, indexer.store, indexer.embedder)
    assert not outcome.passed and outcome.severity == "error"
    assert outcome.metadata["found_share"] < 0.9 and len(outcome.details) == 20 - outcome.metadata["found"]
    [problem] = outcome.problems
    assert "came back in the top 10 when searched for by their own words" in problem
    assert "memory-assets reindex --rebuild" in problem
    indexer.sweep(full=True)  # a full diff keeps rows whose content did not change, vectors and all
    assert not search_finds_rows(settings, indexer.store, indexer.embedder).passed
    assert main(["--home", str(settings.home), "reindex", "--rebuild"]) == 0  # the fix it names
    assert search_finds_rows(settings, indexer.store, indexer.embedder).passed


def test_search_finds_rows_warns_past_its_latency_bound_and_skips_tombstoned_rows(
    settings: Settings, indexer: Indexer
) -> None:
    healthy(settings, indexer)
    append_tombstone(settings.tombstones_path, "Drinks oat milk in coffee")  # not reindexed yet
    outcome = search_finds_rows(settings, indexer.store, indexer.embedder, max_p50_ms=0.0)
    assert not outcome.passed and outcome.severity == "warn" and outcome.metadata["sampled"] == 4
    [problem] = outcome.problems
    assert "p50 is" in problem and "over the bound of 0 ms" in problem and "memory-assets optimize" in problem


def test_table_bounded_counts_the_versions_its_fix_can_prune(settings: Settings, indexer: Indexer) -> None:
    """Within the retention, young versions are kept by design; the bound counts only the versions
    an optimize prunes, so the fix it names works (fault probe D20: 2,165 young versions failed
    the check, and optimize changed nothing)."""
    import dataclasses
    import time

    healthy(settings, indexer)
    for n in range(4):  # four more versions
        write_facts(settings, DAY, f"Version fact number {n} for the bound", hour=10 + n)
        indexer.reindex_day(DAY)
    young = table_bounded(indexer.store, max_versions=2, retention_days=settings.version_retention_days)
    assert young.passed and "0 older than the retention" in young.summary
    assert not table_bounded(indexer.store, max_versions=2).passed  # counting every kept version
    # half a second, and no version kept for readers past it
    brief = dataclasses.replace(settings, version_retention_days=0.5 / 86400, lane_version_retention_s=0)
    time.sleep(1.0)
    aged = table_bounded(indexer.store, max_versions=2, retention_days=brief.version_retention_days)
    assert not aged.passed and "older than the retention" in aged.problems[0]
    assert "memory-assets optimize" in aged.problems[0]
    Indexer(brief, indexer.store).optimize()  # the fix, with the home's retention
    assert table_bounded(indexer.store, max_versions=2, retention_days=brief.version_retention_days).passed


# -- the recall tier: transcript rows ----------------------------------------------------------
AT = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def talk(settings: Settings, chat: str, *said: str) -> Path:
    """Turns kept as the write path keeps them (``transcripts/captured/<chat>.jsonl``), a minute apart."""
    path = settings.transcripts_dir
    for minute, text in enumerate(said):
        path = keep_turn(settings.transcripts_dir, chat, text, "Noted.", AT + timedelta(minutes=minute))
    return path


def test_rows_match_transcripts_fails_on_missing_unexpected_and_stale_rows_until_a_full_reindex(
    settings: Settings, indexer: Indexer
) -> None:
    talk(settings, "chat-1", "We adopted a cat called Miso", "The boiler broke again on Monday")
    chat2 = talk(settings, "chat-2", "Planning a trip to Kyoto in April")
    chat3 = talk(settings, "chat-3", "Allergic to peanuts since childhood")
    indexer.sweep()
    healthy_outcome = rows_match_transcripts(settings, indexer.store)
    assert healthy_outcome.passed and not healthy_outcome.problems
    assert healthy_outcome.metadata["transcripts"] == 3 and healthy_outcome.metadata["planned_rows"] == 4

    indexer.store.table().delete("content = 'We adopted a cat called Miso'")  # behind the indexer's back
    chat2.write_text("\n" + chat2.read_text())  # rewritten: the same turn, a line lower, under its id
    chat3.unlink()  # its row must go
    outcome = rows_match_transcripts(settings, indexer.store)
    assert not outcome.passed and outcome.severity == "error"
    assert (outcome.metadata["missing_rows"], outcome.metadata["unexpected_rows"]) == (1, 1)
    assert outcome.metadata["stale_rows"] == 1 and outcome.metadata["transcripts_mismatched"] == 3
    assert outcome.details == [
        {
            "transcript": "captured/chat-1.jsonl",
            "planned": 2,
            "stored": 1,
            "missing": 1,
            "unexpected": 0,
            "stale": 0,
        },
        {
            "transcript": "captured/chat-2.jsonl",
            "planned": 1,
            "stored": 1,
            "missing": 0,
            "unexpected": 0,
            "stale": 1,
        },
        {
            "transcript": "captured/chat-3.jsonl",
            "planned": 0,
            "stored": 1,
            "missing": 0,
            "unexpected": 1,
            "stale": 0,
        },
    ]
    first, _, gone = outcome.problems
    assert first.startswith("transcripts/captured/chat-1.jsonl: 1 planned row(s) missing from the index")
    assert "memory-assets reindex --full" in first and "transcript:captured/chat-1.jsonl" in first
    assert "(the transcript no longer exists, so its rows must go)" in gone
    # Only the files named: a run of transcript_index checks the files it wrote.
    only = rows_match_transcripts(settings, indexer.store, files=["captured/chat-2.jsonl"])
    assert only.metadata["stale_rows"] == 1 and only.metadata["missing_rows"] == 0
    indexer.sweep(full=True)  # the fix the problem names
    fixed = rows_match_transcripts(settings, indexer.store)
    assert fixed.passed and fixed.metadata["planned_rows"] == 3 and fixed.metadata["stored_rows"] == 3


def test_no_tombstoned_content_judges_transcript_rows_by_the_turn_rules(
    settings: Settings, indexer: Indexer
) -> None:
    """A turn is hidden by a person's forgotten text it holds, or by its whole turn forgotten (a
    fact, chat or day), never by the reconcile's retirement of a folded log line."""
    long_turn = " ".join(f"word{i}" for i in range(300))  # three windows, three rows
    talk(settings, "chat-1", "Our neighbour Priya lent us her ladder", "Prefers tea over coffee", long_turn)
    indexer.sweep()
    with settings.tombstones_path.open("a", encoding="utf-8") as fh:
        fh.write(tombstone_line("Prefers tea over coffee", by=RECONCILE))
    retired = no_tombstoned_content(settings, indexer.store)
    assert retired.passed and retired.metadata["transcript_rows"] == 5  # the turn of that text stays

    append_tombstone(settings.tombstones_path, "Priya")  # a person's forgetting, not yet reindexed
    with settings.tombstones_path.open("a", encoding="utf-8") as fh:
        fh.write(tombstone_line(long_turn, turn=True, with_="chat:chat-1"))
    outcome = no_tombstoned_content(settings, indexer.store)
    assert not outcome.passed and outcome.metadata["tombstoned_rows"] == 4  # Priya's turn and 3 windows
    [problem] = outcome.problems
    assert problem.startswith("transcripts/captured/chat-1.jsonl: 4 row(s) hold tombstoned content")
    assert "run `memory-assets reindex`, which removes them" in problem
    assert sum(1 for d in outcome.details if "Priya" in d["content"]) == 1
    indexer.sweep()
    assert no_tombstoned_content(settings, indexer.store).passed
    left = indexer.store.scan(["content"], where="source_type = 'transcript'").column("content").to_pylist()
    assert left == ["Prefers tea over coffee"]
