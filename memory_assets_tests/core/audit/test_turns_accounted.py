"""``turns_accounted_for`` on a real home, LanceDB and model: every user turn of every transcript
is indexed, forgotten by a person, past the retention, or empty; a turn that is none is stranded,
named with its file, line and the fix; a transcript that cannot be read is reported."""

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memory_assets.core.audit.turns_accounted import turns_accounted_for
from memory_assets.core.capture.transcripts import keep_turn
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.target import Target
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.reconcile import forget
from memory_assets.core.settings import Settings
from memory_assets_tests.core.index.test_rows import run_unprivileged


def test_every_turn_is_in_one_state_and_a_stranded_one_is_named_until_reindexed(
    settings: Settings, embedder: Embedder
) -> None:
    now = datetime.now(UTC)
    kept = replace(settings, transcript_retention_days=30)
    said = settings.transcripts_dir
    keep_turn(said, "chat-a", "An old remark about the boiler", "", now - timedelta(days=40))
    keep_turn(said, "chat-a", "A recent remark about the kettle", "", now - timedelta(days=2))
    keep_turn(
        said, "chat-a", "Our neighbour Priya lent us her ladder", "Kind of her.", now - timedelta(days=1)
    )
    keep_turn(said, "chat-a", "", "(an empty message)", now - timedelta(days=1))
    keep_turn(said, "chat-b", "Bought a red bicycle for the commute", "", now - timedelta(hours=3))
    (said / "s1.jsonl").write_text(  # the assistant's own transcript, with a line that is no turn
        json.dumps({"ts": (now - timedelta(days=1)).isoformat(), "role": "user", "content": "Kyoto in April"})
        + "\nnot json\n"
    )
    indexer = Indexer(kept, embedder=embedder)
    indexer.sweep()
    forget(kept, indexer, Target(text="Priya"))
    indexer.store.table().delete("content = 'Bought a red bicycle for the commute'")  # bypassing the indexer

    outcome = turns_accounted_for(kept, indexer.store)
    assert not outcome.passed and outcome.severity == "error"
    assert {k: outcome.metadata[k] for k in ("indexed", "forgotten", "expired", "empty", "stranded")} == {
        "indexed": 2,
        "forgotten": 1,
        "expired": 1,
        "empty": 1,
        "stranded": 1,
    }
    assert outcome.metadata["turns"] == 6 and outcome.metadata["transcripts"] == 3
    assert outcome.metadata["skipped_lines"] == 1 and outcome.metadata["retention_days"] == 30
    [problem] = outcome.problems
    assert problem.startswith(
        "transcripts/captured/chat-b.jsonl line 1: 'Bought a red bicycle for the commute' is stranded"
    )
    assert "`memory-assets reindex`" in problem
    assert outcome.details == [
        {
            "file": "transcripts/captured/chat-b.jsonl",
            "line": 1,
            "turn": "Bought a red bicycle for the commute",
            "missing_rows": 1,
        }
    ]

    indexer.sweep(full=True)  # the fix the problem names
    fixed = turns_accounted_for(kept, indexer.store)
    assert fixed.passed and not fixed.problems and fixed.metadata["indexed"] == 3
    assert "past the retention (30 day(s))" in fixed.summary
    # The retention lifted: the old turn is a turn to index again, stranded until a reindex writes it.
    forever = turns_accounted_for(settings, indexer.store)
    assert forever.metadata["expired"] == 0 and forever.metadata["stranded"] == 1
    Indexer(settings, embedder=embedder).sweep()
    assert turns_accounted_for(settings, indexer.store).passed


def test_a_long_turn_is_indexed_only_when_every_window_is(settings: Settings, embedder: Embedder) -> None:
    words = " ".join(f"word{i}" for i in range(300))  # three overlapping windows
    keep_turn(settings.transcripts_dir, "chat-l", words, "", datetime.now(UTC) - timedelta(hours=1))
    indexer = Indexer(settings, embedder=embedder)
    indexer.sweep()
    assert turns_accounted_for(settings, indexer.store).metadata["indexed"] == 1
    indexer.store.table().delete("content LIKE 'word90 %'")  # the second window only
    outcome = turns_accounted_for(settings, indexer.store)
    assert outcome.details[0]["missing_rows"] == 1
    assert "1 of its 3 rows are not in the index" in outcome.problems[0]


@pytest.mark.slow
def test_an_unreadable_transcript_is_reported_and_its_turns_not_counted(
    settings: Settings, embedder: Embedder
) -> None:
    now = datetime.now(UTC)
    keep_turn(settings.transcripts_dir, "chat-r", "Readable turn about the garden", "", now)
    locked = keep_turn(settings.transcripts_dir, "chat-x", "A turn nobody can read now", "", now)
    Indexer(settings, embedder=embedder).sweep()
    locked.chmod(0)
    try:
        [check] = run_unprivileged([["--home", str(settings.home), "--json", "check"]])
    finally:
        locked.chmod(0o644)
    outcomes = {o["name"]: o for o in json.loads(check["out"])}
    turns = outcomes["turns_accounted_for"]
    assert turns["passed"] and turns["metadata"]["unreadable_transcripts"] == 1
    assert turns["metadata"]["turns"] == 1 and turns["metadata"]["indexed"] == 1
    assert "1 transcript(s) could not be read" in turns["summary"]
    assert any(
        w.startswith("transcripts/captured/chat-x.jsonl: cannot be read (Permission denied)")
        and "make it readable" in w
        for w in turns["warnings"]
    )
    rows = outcomes["rows_match_transcripts"]  # its rows stay as they were, and are not compared
    assert rows["passed"] and rows["metadata"]["unreadable_transcripts"] == 1
