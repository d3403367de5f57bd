"""Forgetting reaches the turns (issue 25, item 5): ``forget "X"`` hides every turn that holds X and
the turn a fact X was written from, ``forget --chat`` / ``--day`` hide a whole chat or a day of
talk with the facts written from it, and ``unforget`` brings each back. After a forget, the text
is in no row of the table (not only filtered out of search), and no search finds it."""

from datetime import UTC, date, datetime

from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.index.target import Target
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.reconcile import forget, unforget
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings
from memory_assets.core.write_path.extraction import ExtractedFact, GivenFacts, Turn
from memory_assets.core.write_path.process import process_turn

DAY = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
NEXT = datetime(2026, 11, 21, 18, 30, tzinfo=UTC)


def said(settings: Settings, embedder: Embedder, user: str, at: datetime, chat: str, *facts: str) -> None:
    """One turn through the write path whose extraction is exactly ``facts`` (none: a turn no rule
    takes a fact from)."""
    result = process_turn(
        Turn(user, "Noted.", chat_id=chat, at=at),
        settings,
        extractor=GivenFacts([ExtractedFact(f, "personal") for f in facts]),
        embedder=embedder,
    )
    assert result.reindex_error is None and result.turn_rows_embedded >= 1


def contents(settings: Settings, kind: str | None = None) -> list[str]:
    where = f"source_type = '{kind}'" if kind else None
    rows = MemoryStore.of(settings).scan(["content"], where=where).to_pylist()
    return [r["content"] for r in rows]


def found(settings: Settings, embedder: Embedder, query: str) -> list[str]:
    return [h.content for h in search(MemoryStore.of(settings), query, embedder=embedder, settings=settings)]


def test_forget_hides_every_turn_holding_the_text_and_the_turn_a_fact_came_from(
    settings: Settings, embedder: Embedder
) -> None:
    said(
        settings,
        embedder,
        "We finally got a puppy this weekend, his name is Rex!",
        DAY,
        "chat-a",
        "Has a dog named Rex",
    )
    said(
        settings,
        embedder,
        "My sister's codeword for the alarm is bluefinch77",
        DAY.replace(hour=10),
        "chat-a",
    )
    said(settings, embedder, "Remind me: bluefinch77 also opens the shed", NEXT, "chat-b")
    said(settings, embedder, "The weather in Lisbon was lovely", NEXT.replace(minute=45), "chat-b")
    assert sum("bluefinch77" in c for c in contents(settings, "transcript")) == 2
    assert any("bluefinch77" in c for c in found(settings, embedder, "alarm codeword"))

    # A text only turns hold (no fact states it): the tombstone hides every turn holding it.
    done = forget(settings, Indexer(settings, embedder=embedder), Target(text="bluefinch77"))
    assert done["tombstoned"] and done["rows_deleted"] == 2 and done["left_in_your_own_lines"] == []
    assert sorted(done["files"]) == ["transcript:captured/chat-a.jsonl", "transcript:captured/chat-b.jsonl"]
    assert not any("bluefinch77" in c for c in contents(settings))
    for query in ("alarm codeword", "bluefinch77", "what opens the shed"):
        assert not any("bluefinch77" in c for c in found(settings, embedder, query))

    # A fact: it goes, and so does the turn it was written from, whose words do not hold it.
    done = forget(settings, Indexer(settings, embedder=embedder), Target(text="Has a dog named Rex"))
    assert done["tombstoned"] and done["turns_hidden"] == 1
    assert not any("Rex" in c for c in contents(settings))
    assert not any("Rex" in c for c in found(settings, embedder, "what is the dog called"))
    assert "The weather in Lisbon was lovely" in contents(settings, "transcript")

    # unforget brings the fact and its turn back together.
    back = unforget(settings, Indexer(settings, embedder=embedder), "Has a dog named Rex")
    assert back["tombstones_removed"] == 2 and not back["still_forgotten"]
    assert "Has a dog named Rex" in contents(settings, "archive_log")
    assert "We finally got a puppy this weekend, his name is Rex!" in contents(settings, "transcript")
    back = unforget(settings, Indexer(settings, embedder=embedder), "bluefinch77")
    assert back["tombstones_removed"] == 1
    assert sum("bluefinch77" in c for c in contents(settings, "transcript")) == 2


def test_forget_a_chat_or_a_day_of_talk_and_take_it_back(settings: Settings, embedder: Embedder) -> None:
    said(
        settings,
        embedder,
        "I started learning the oboe with a teacher called Ines",
        DAY,
        "chat-a",
        "Learns the oboe",
    )
    said(settings, embedder, "Ines says my reed technique is improving", DAY.replace(hour=11), "chat-a")
    said(
        settings, embedder, "Booked the train to Porto for the conference", NEXT, "chat-b", "Travels to Porto"
    )
    said(settings, embedder, "Packing list: charger, badge, umbrella", NEXT.replace(minute=50), "chat-c")
    indexer = Indexer(settings, embedder=embedder)

    chat = forget(settings, indexer, Target(chat="chat-a"))
    assert chat["forgot"] == "chat:chat-a" and chat["turns"] == 2 and chat["facts"] == 1
    left = contents(settings)
    assert not any("oboe" in c or "Ines" in c for c in left)
    assert "Booked the train to Porto for the conference" in left and "Travels to Porto" in left
    assert not any("Ines" in c or "oboe" in c for c in found(settings, embedder, "who teaches me the oboe"))

    day = forget(settings, indexer, Target(day=date(2026, 11, 21)))
    assert day["forgot"] == "day:2026-11-21" and day["turns"] == 2 and day["facts"] == 1
    assert contents(settings, "transcript") == [] and contents(settings, "archive_log") == []

    assert unforget(settings, indexer, chat="chat-a")["tombstones_removed"] == 3
    assert sorted(contents(settings, "transcript")) == [
        "I started learning the oboe with a teacher called Ines",
        "Ines says my reed technique is improving",
    ]
    assert unforget(settings, indexer, day=date(2026, 11, 21))["tombstones_removed"] == 3
    assert len(contents(settings, "transcript")) == 4 and len(contents(settings, "archive_log")) == 2
