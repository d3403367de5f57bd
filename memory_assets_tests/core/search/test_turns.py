"""``turns.merge``: a fact and the turn it was written from are one hit, and a turn that gave many
facts is one hit too: its match lifts one of its facts, not each of them."""

import json
from typing import Any

from memory_assets.core.search.ranking import Scored
from memory_assets.core.search.turns import merge
from memory_assets.core.sources import ARCHIVE, TRANSCRIPT

DAY = "2023-05-30"


def fact(row_id: str, content: str, score: float, time: str = "09:15", chat: str = "chat-one") -> Scored:
    row: dict[str, Any] = {
        "id": row_id,
        "content": content,
        "source_type": ARCHIVE,
        "source_date": DAY,
        "source_file": f"archive/{DAY}.md",
        "metadata": json.dumps({"time": time, "chat": chat}),
    }
    return Scored(row, score, 0.0, 0.5, 1.0, False, score)


def turn(row_id: str, content: str, score: float, line: int = 1, time: str = "09:15") -> Scored:
    row: dict[str, Any] = {
        "id": row_id,
        "content": content,
        "source_type": TRANSCRIPT,
        "source_date": DAY,
        "source_file": "transcripts/captured/chat-one.jsonl",
        "metadata": json.dumps({"time": time, "chat": "chat-one", "line": line, "ts": f"{DAY}T{time}:00Z"}),
    }
    return Scored(row, score, 0.0, 0.3, 1.0, False, score)


def by_id(scored: list[Scored]) -> dict[str, Scored]:
    return {s.id: s for s in scored}


SAID = "I moved to Lisbon last spring, I keep bees on the roof, and I teach cello on Tuesdays."


def test_a_turn_with_three_facts_lifts_only_the_best_of_them() -> None:
    said = turn("t1", SAID, 0.9)
    facts = [
        fact("f-bees", "Keeps bees on the roof.", 0.6),
        fact("f-lisbon", "Moved to Lisbon last spring.", 0.4),
        fact("f-cello", "Teaches cello on Tuesdays.", 0.3),
    ]
    other = fact("f-other", "Grows tomatoes on the balcony.", 0.5, time="10:00", chat="chat-two")
    out = merge(sorted([said, *facts, other], key=lambda s: -s.score))
    ids = [s.id for s in out]
    assert "t1" not in ids  # the turn is its facts' provenance, not a hit of its own
    got = by_id(out)
    assert got["f-bees"].score == 0.9  # the best fact on its own takes the turn's score
    assert got["f-lisbon"].score == 0.4 and got["f-cello"].score == 0.3  # the others keep theirs
    assert ids == ["f-bees", "f-other", "f-lisbon", "f-cello"]
    for fid in ("f-bees", "f-lisbon", "f-cello"):
        assert got[fid].said is not None and got[fid].said["id"] == "t1"
    assert got["f-other"].said is None


def test_a_fact_that_beats_its_turn_keeps_its_score() -> None:
    out = by_id(merge([fact("f-bees", "Keeps bees on the roof.", 0.8), turn("t1", SAID, 0.5)]))
    assert set(out) == {"f-bees"} and out["f-bees"].score == 0.8
    assert out["f-bees"].said is not None and out["f-bees"].said["id"] == "t1"


def test_the_chunks_of_one_message_give_their_best_score_once() -> None:
    chunks = [turn("t1-a", SAID, 0.7, line=4), turn("t1-b", SAID + " Cello again.", 0.95, line=4)]
    facts = [
        fact("f-bees", "Keeps bees on the roof.", 0.6),
        fact("f-cello", "Teaches cello on Tuesdays.", 0.5),
    ]
    out = merge(sorted([*chunks, *facts], key=lambda s: -s.score))
    assert [s.id for s in out] == ["f-bees", "f-cello"]
    assert by_id(out)["f-bees"].score == 0.95 and by_id(out)["f-cello"].score == 0.5


def test_a_fact_sharing_no_word_with_the_turn_of_its_minute_is_not_from_it() -> None:
    out = merge([turn("t1", SAID, 0.9), fact("f-given", "Prefers oat milk.", 0.4)])
    got = by_id(out)
    assert set(got) == {"t1", "f-given"}
    assert got["f-given"].score == 0.4 and got["f-given"].said is None
