"""The chat extractor against a real ``/v1/chat/completions`` server in the test process.

Every case ends in facts or a reported fallback, never an exception. The fallback here is a tiny
local extractor: these tests check that it is called and reported, not what the rules find.
"""

import json
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_assets.core.knowledge.categories import EXTRACTED
from memory_assets.core.models.language_model import ChatClient
from memory_assets.core.write_path import chat_extractor
from memory_assets.core.write_path.chat_extractor import (
    KNOWN_HEADING,
    SYSTEM_PROMPT,
    ChatExtractor,
    build_user_prompt,
    parse_facts,
)
from memory_assets.core.write_path.extraction import ExtractedFact, Extraction, Turn
from memory_assets_tests.core.models.test_language_model import (
    SECRET,
    Answer,
    ChatServer,
    completion,
    error,
)

TURN = Turn(
    user="I moved to Berlin last month, and I now run 10 km every Sunday. Thanks!",
    assistant="Congratulations on the move!",
    chat_id="c0ffee00",
    at=datetime(2026, 11, 20, 9, 30, tzinfo=UTC),
)
KNOWN = ["Lives in Lisbon.", "Runs on Sundays."]
GOOD_FACTS = {
    "facts": [
        {
            "content": "Lives in Berlin since October 2026.",
            "category": "personal",
            "importance": 0.9,
            "tags": ["home", "berlin"],
        },
        {
            "content": "Runs 10 km every Sunday.",
            "category": "preference",
            "importance": 0.6,
            "tags": ["running"],
        },
    ]
}


class StubFallback:
    """Stands in for the rules: records its calls, answers one fixed fact (or raises)."""

    name = "stub-rules"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[Turn, list[str]]] = []

    def extract(self, turn: Turn, known: Sequence[str] = ()) -> Extraction:
        self.calls.append((turn, list(known)))
        if self.fail:
            raise RuntimeError("the rules broke")
        return Extraction(facts=[ExtractedFact("Fact from the fallback.")], extractor=self.name)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    srv = ChatServer()
    yield srv
    srv.close()


def extractor(
    server: ChatServer, fallback: StubFallback | None = None, **kwargs: Any
) -> tuple[ChatExtractor, StubFallback]:
    fallback = fallback or StubFallback()
    kwargs.setdefault("backoff", 0.01)
    chat = ChatClient(server.base_url, "test-model", SECRET, **kwargs)
    return ChatExtractor(chat, fallback), fallback


def facts_answer(data: object) -> Answer:
    return completion(json.dumps(data))


def assert_fell_back(result: Extraction, fallback: StubFallback, *fragments: str) -> None:
    assert len(fallback.calls) == 1
    assert fallback.calls[0] == (TURN, KNOWN)
    assert [f.content for f in result.facts] == ["Fact from the fallback."]
    assert result.extractor == "stub-rules"
    assert result.fallback is not None and "\n" not in result.fallback
    assert result.fallback.startswith("chat:test-model: ")
    for fragment in fragments:
        assert fragment in result.fallback, result.fallback


# -- the happy path and the request -----------------------------------------------------------------
def test_valid_facts_come_back_and_the_request_carries_turn_known_facts_and_rule(
    server: ChatServer,
) -> None:
    server.answer_with(facts_answer(GOOD_FACTS))
    chat, fallback = extractor(server)
    result = chat.extract(TURN, KNOWN)

    assert chat.name == "chat:test-model"
    assert result.extractor == "chat:test-model" and result.fallback is None and result.warnings == []
    assert result.facts == [
        ExtractedFact("Lives in Berlin since October 2026.", "personal", ("home", "berlin"), 0.9),
        ExtractedFact("Runs 10 km every Sunday.", "preference", ("running",), 0.6),
    ]
    assert fallback.calls == []

    [request] = server.requests
    assert request["headers"]["authorization"] == f"Bearer {SECRET}"
    body = request["body"]
    assert body["model"] == "test-model"
    assert body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user"
    prompt = user["content"]
    assert TURN.user in prompt and TURN.assistant in prompt
    assert "Date of the turn: 2026-11-20" in prompt
    assert KNOWN_HEADING in prompt
    known_section = prompt.split(KNOWN_HEADING, 1)[1]
    assert "- Lives in Lisbon.\n- Runs on Sundays." in known_section
    assert "Do not repeat a fact listed above unless this turn changes it" in known_section
    assert "changes, corrects or adds a specific to one of them MUST be emitted" in known_section
    assert "a new number, date, place or name is a change" in known_section


def test_the_system_prompt_asks_for_terse_facts_in_the_known_categories() -> None:
    for name in EXTRACTED:
        assert f"- {name}: " in SYSTEM_PROMPT
    for phrase in ("third person", "small talk", "questions", "the assistant said", "JSON", "2 to 4"):
        assert phrase in SYSTEM_PROMPT


def test_without_known_facts_there_is_no_already_in_memory_section() -> None:
    prompt = build_user_prompt(Turn(user="I use Neovim.", at=TURN.at), ["  ", ""])
    assert KNOWN_HEADING not in prompt and "MUST be emitted" not in prompt
    assert "The assistant answered" not in prompt  # an empty answer is left out
    assert "I use Neovim." in prompt


def test_an_empty_facts_list_is_a_valid_answer(server: ChatServer) -> None:
    server.answer_with(facts_answer({"facts": []}))
    chat, fallback = extractor(server)
    result = chat.extract(TURN, KNOWN)
    assert result.facts == [] and result.fallback is None and fallback.calls == []


# -- malformed answers ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (completion("Sure, the user moved to Berlin."), "no JSON object"),
        (facts_answer({"items": [{"content": "Lives in Berlin."}]}), "no 'facts' list"),
        (facts_answer({"facts": "Lives in Berlin."}), "'facts' is str, not a list"),
        (facts_answer({"facts": [{"category": "personal"}, {"content": "  "}]}), "no valid fact"),
    ],
    ids=["not-json", "no-facts-key", "facts-not-a-list", "no-fact-has-content"],
)
def test_malformed_answers_fall_back_and_say_why(server: ChatServer, answer: Answer, fragment: str) -> None:
    server.answer_with(answer)
    chat, fallback = extractor(server)
    result = chat.extract(TURN, KNOWN)
    assert_fell_back(result, fallback, fragment)


def test_partially_valid_answers_keep_the_valid_facts_and_warn(server: ChatServer) -> None:
    server.answer_with(
        facts_answer(
            {
                "facts": [
                    {"category": "personal", "importance": 0.9},  # no content: dropped
                    {"content": "Lives in\nBerlin.", "category": "Hometown", "importance": 1.7},
                    {
                        "content": "Uses Neovim.",
                        "category": "TECHNICAL",
                        "importance": "high",
                        "tags": "editor, vim",
                    },
                    {"content": "Runs 10 km every Sunday.", "importance": -0.2, "tags": ["sport run", 3, ""]},
                    {"content": "uses neovim."},  # a repeat: dropped
                    "Likes tea.",  # not an object: dropped
                ]
            }
        )
    )
    chat, fallback = extractor(server)
    result = chat.extract(TURN, KNOWN)
    assert fallback.calls == [] and result.fallback is None and result.extractor == "chat:test-model"
    assert result.facts == [
        ExtractedFact("Lives in Berlin.", "general", (), 1.0),
        ExtractedFact("Uses Neovim.", "technical", ("editor", "vim"), 0.5),
        ExtractedFact("Runs 10 km every Sunday.", "general", ("sport-run",), 0.0),
    ]
    warnings = "\n".join(result.warnings)
    assert "fact 0 dropped: no content" in warnings
    assert "fact 1: unknown category 'Hometown', written as 'general'" in warnings
    assert "fact 1: importance 1.7 clamped to 1" in warnings
    assert "fact 2: importance 'high' is not a number" in warnings
    assert "fact 3: importance -0.2 clamped to 0" in warnings
    assert "fact 4 dropped: repeats an earlier fact" in warnings
    assert "fact 5 dropped: str, not an object" in warnings


def test_parse_facts_defaults() -> None:
    facts, warnings = parse_facts({"facts": [{"content": "Prefers metric units."}]})
    assert facts == [ExtractedFact("Prefers metric units.", "general", (), 0.5)] and warnings == []
    facts, _ = parse_facts({"facts": [{"content": "A.", "tags": ["a", "b", "c", "d", "e", "a"]}]})
    assert facts[0].tags == ("a", "b", "c", "d")


# -- transport failures -----------------------------------------------------------------------------
def test_a_timeout_falls_back_within_the_limit(server: ChatServer) -> None:
    server.answer_with(Answer(body={"choices": []}, delay=5.0))
    chat, fallback = extractor(server, timeout=0.5)
    started = time.monotonic()
    result = chat.extract(TURN, KNOWN)
    assert time.monotonic() - started < 1.5
    assert_fell_back(result, fallback, "no answer within the 0.5 s time limit")


def test_an_http_500_falls_back_with_the_status_and_the_servers_text(server: ChatServer) -> None:
    server.answer_with(error(500, "CUDA out of memory"))
    chat, fallback = extractor(server, max_retries=1)
    result = chat.extract(TURN, KNOWN)
    assert_fell_back(result, fallback, "HTTP 500", "CUDA out of memory")
    assert len(server.requests) == 2


def test_a_429_then_success_is_retried_and_gives_the_models_facts(server: ChatServer) -> None:
    server.answer_with(error(429, "rate limited", **{"Retry-After": "0"}), facts_answer(GOOD_FACTS))
    chat, fallback = extractor(server)
    result = chat.extract(TURN, KNOWN)
    assert len(server.requests) == 2
    assert fallback.calls == [] and result.fallback is None
    assert [f.content for f in result.facts] == [
        "Lives in Berlin since October 2026.",
        "Runs 10 km every Sunday.",
    ]


def test_a_failing_fallback_still_never_raises(server: ChatServer) -> None:
    server.answer_with(completion("no json here"))
    chat, fallback = extractor(server, fallback=StubFallback(fail=True))
    result = chat.extract(TURN, KNOWN)
    assert result.facts == [] and len(fallback.calls) == 1
    assert result.fallback is not None and "\n" not in result.fallback
    assert "no JSON object" in result.fallback and "RuntimeError: the rules broke" in result.fallback


def test_a_runaway_answer_is_capped_in_facts_and_length_with_warnings() -> None:
    """A model's answer is data: 5,000 facts, or one fact of 200,000 characters, cannot fill the log."""
    many = {"facts": [{"content": f"Owns {n} distinct things.", "category": "general"} for n in range(5000)]}
    facts, warnings = parse_facts(many)
    assert len(facts) == chat_extractor.MAX_FACTS
    assert any(f"and {5000 - chat_extractor.MAX_FACTS - 1} more dropped" in w for w in warnings)
    assert not any("unknown category" in w for w in warnings)  # general is a category, not a repair
    long_one, warnings = parse_facts({"facts": [{"content": "word " * 40_000}]})
    assert len(long_one[0].content) == chat_extractor.MAX_FACT_CHARS and long_one[0].content.endswith("…")
    assert any("cut from" in w for w in warnings)
