"""The recall tier's rows (issue 25, item 2): a turn kept in its chat's transcript is one row per
user message (chunked when long), a reindex after appended turns embeds exactly the appended
ones (embeddings / appended turns = 1.00), the retention setting takes old turns out of the index
while the files keep them, and a transcript the assistant wrote itself is indexed as it is."""

import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from memory_assets.core.capture.transcripts import keep_turn, read_turns
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.rows import TURN_CHUNK_OVERLAP, TURN_CHUNK_WORDS, plan_transcript, turn_chunks
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.tombstones import Tombstones
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings

AT = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def turns(settings: Settings) -> list[dict[str, object]]:
    rows = MemoryStore.of(settings).scan(
        ["content", "source_file", "metadata"], where="source_type = 'transcript'"
    )
    return rows.to_pylist()


def test_a_kept_turn_is_a_row_of_the_users_words_with_its_chat_and_time(settings: Settings) -> None:
    path = keep_turn(settings.transcripts_dir, "chat-7", "We adopted a cat called Miso", "Lovely!", AT)
    [turn] = read_turns(path, cap=None).turns
    assert (turn.user, turn.assistant, turn.chat_id, turn.at) == (
        "We adopted a cat called Miso",
        "Lovely!",
        "chat-7",
        AT,
    )
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["role"], line["content"]) for line in lines] == [
        ("user", "We adopted a cat called Miso"),
        ("assistant", "Lovely!"),
    ]  # suzent's format: ts, role, content
    plan = plan_transcript(path, "captured/chat-7.jsonl", Tombstones(), AT.date())
    [row] = plan.rows
    meta = json.loads(row.metadata)
    assert row.content == "We adopted a cat called Miso" and row.source_type == "transcript"
    assert row.importance == 0.3 and row.source_date == "2026-11-20"
    assert (meta["chat"], meta["time"], meta["line"]) == ("chat-7", "09:00", 1)


def test_a_long_message_is_cut_into_overlapping_windows_that_cover_it() -> None:
    words = [f"w{i}" for i in range(300)]
    chunks = turn_chunks(" ".join(words))
    assert len(chunks) > 1 and all(len(c.split()) == TURN_CHUNK_WORDS for c in chunks)
    covered = {w for c in chunks for w in c.split()}
    assert covered == set(words) and chunks[-1].split()[-1] == "w299"
    first, second = chunks[0].split(), chunks[1].split()
    assert first[-TURN_CHUNK_OVERLAP:] == second[:TURN_CHUNK_OVERLAP]
    assert turn_chunks("  short message  ") == ["short message"] and turn_chunks("   ") == []


def test_a_reindex_embeds_exactly_the_appended_turns(settings: Settings, embedder: Embedder) -> None:
    for i in range(20):
        keep_turn(
            settings.transcripts_dir,
            "chat-1",
            f"Message number {i} about the garden",
            "",
            AT + timedelta(minutes=i),
        )
    indexer = Indexer(settings, embedder=embedder)
    assert indexer.sweep().summary()["embedded"] == 20
    for i in range(20, 25):
        keep_turn(
            settings.transcripts_dir,
            "chat-1",
            f"Message number {i} about the garden",
            "",
            AT + timedelta(minutes=i),
        )
    result = Indexer(settings, embedder=embedder).reindex_key("transcript:captured/chat-1.jsonl")
    assert result.embedded / 5 == 1.00 and result.deleted == 0
    assert len(turns(settings)) == 25


def test_retention_takes_old_turns_out_of_the_index_and_the_files_keep_them(
    settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    today = datetime.now(UTC)
    keep_turn(
        settings.transcripts_dir, "chat-r", "An old remark about the boiler", "", today - timedelta(days=40)
    )
    keep_turn(
        settings.transcripts_dir, "chat-r", "A recent remark about the kettle", "", today - timedelta(days=2)
    )
    Indexer(settings, embedder=embedder).sweep()
    assert len(turns(settings)) == 2
    short = replace(settings, transcript_retention_days=30)
    Indexer(short, embedder=embedder).sweep()
    assert [r["content"] for r in turns(short)] == ["A recent remark about the kettle"]
    plan = plan_transcript(
        short.transcripts_dir / "captured" / "chat-r.jsonl",
        "captured/chat-r.jsonl",
        Tombstones(),
        date.today(),
        30,
    )
    assert plan.expired == 1
    assert (
        "An old remark about the boiler" in (short.transcripts_dir / "captured" / "chat-r.jsonl").read_text()
    )
    Indexer(settings, embedder=embedder).sweep()  # forever again: the turn comes back
    assert len(turns(settings)) == 2


def test_the_assistants_own_transcript_is_indexed_as_it_is(settings: Settings, embedder: Embedder) -> None:
    settings.transcripts_dir.mkdir(parents=True, exist_ok=True)
    (settings.transcripts_dir / "s1.jsonl").write_text(
        '{"ts": "2026-11-20T08:00:00+00:00", "role": "user", "content": "Planning a trip to Kyoto in April"}\n'
        '{"ts": "2026-11-20T08:00:05+00:00", "role": "assistant", "content": "Cherry blossom season!"}\n'
    )
    Indexer(settings, embedder=embedder).sweep()
    [row] = turns(settings)
    assert row["content"] == "Planning a trip to Kyoto in April" and row["source_file"] == "s1.jsonl"
