"""remember: one fact through the classifier, with no extraction (the CLI's and the server's)."""

import math
from datetime import UTC, datetime

import pytest

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets.core.write_path.remember import memory_turn, remember

AT = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)


def test_a_fact_is_written_once_then_confirmed(settings: Settings, embedder: Embedder) -> None:
    first = remember("Keeps  bees on\tthe roof", settings, category="personal", at=AT, embedder=embedder)
    assert first.summary()["counts"] == {"new": 1, "revision": 0, "confirmation": 0}
    [fact] = read_daily_log(settings.archive_dir / "2026-11-20.md").facts
    assert (fact.content, fact.category) == ("Keeps bees on the roof", "personal")
    again = remember("Keeps bees on the roof", settings, at=AT, embedder=embedder)
    assert [f.outcome for f in again.facts] == ["confirmation"] and again.lines_written == []


@pytest.mark.parametrize("importance", [-0.1, 1.5, math.nan, math.inf])
def test_an_importance_outside_zero_to_one_is_refused(importance: float) -> None:
    with pytest.raises(ValueError, match="from 0 to 1"):
        memory_turn("Owns a red canoe", importance=importance)


def test_a_text_without_words_is_refused_and_the_category_defaults_to_general() -> None:
    for wordless in (" \n\t ", "!!! ... ???", "-- * --", "\u2014 \u2026"):
        with pytest.raises(ValueError, match="at least one word"):
            memory_turn(wordless)
    for worded in ("42", "\u00e9t\u00e9!", "\u6771\u4eac"):  # a digit, or a letter of any script, is a word
        assert memory_turn(worded)[1].facts[0].content == worded
    turn, given = memory_turn("Owns a red canoe", chat_id="c1")
    [fact] = given.facts
    assert (fact.category, fact.importance, turn.chat_id) == ("general", 0.5, "c1")
