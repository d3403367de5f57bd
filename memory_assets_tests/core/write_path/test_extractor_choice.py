"""Which extractor ``make_extractor`` builds: the chat extractor over the configured endpoint
when ``MEMORY_LLM_URL`` is set (the rules as its fallback), else the rule-based default."""

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_assets.core.settings import Settings
from memory_assets.core.write_path.chat_extractor import ChatExtractor
from memory_assets.core.write_path.extractor_choice import make_extractor
from memory_assets_tests.core.models.test_language_model import SECRET, ChatServer
from memory_assets_tests.core.write_path.test_chat_extractor import (
    GOOD_FACTS,
    KNOWN,
    TURN,
    StubFallback,
    facts_answer,
)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    srv = ChatServer()
    yield srv
    srv.close()


class FakeRuleExtractor(StubFallback):
    name = "rules"

    def __init__(self) -> None:
        super().__init__()


@pytest.fixture
def fake_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """make_extractor's choice, independent of the rules module's contents."""
    module = types.ModuleType("memory_assets.core.write_path.rule_extractor")
    module.RuleExtractor = FakeRuleExtractor  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "memory_assets.core.write_path.rule_extractor", module)


@pytest.mark.usefixtures("fake_rules")
def test_make_extractor_picks_the_chat_extractor_when_an_llm_url_is_set(
    tmp_path: Path, server: ChatServer
) -> None:
    env = {"MEMORY_LLM_URL": server.base_url, "MEMORY_LLM_MODEL": "test-model", "MEMORY_LLM_API_KEY": SECRET}
    chosen = make_extractor(Settings.load(tmp_path, env=env))
    assert isinstance(chosen, ChatExtractor) and chosen.name == "chat:test-model"
    assert isinstance(chosen.fallback, FakeRuleExtractor)
    assert chosen.client.url == server.base_url + "/chat/completions"

    server.answer_with(facts_answer(GOOD_FACTS))
    assert len(chosen.extract(TURN, KNOWN).facts) == 2
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {SECRET}"


@pytest.mark.usefixtures("fake_rules")
def test_make_extractor_defaults_to_the_rules_without_an_llm_url(tmp_path: Path) -> None:
    assert isinstance(make_extractor(Settings.load(tmp_path, env={})), FakeRuleExtractor)


def test_make_extractor_default_is_the_real_rule_extractor(tmp_path: Path) -> None:
    rules = pytest.importorskip("memory_assets.core.write_path.rule_extractor")
    chosen = make_extractor(Settings.load(tmp_path, env={}))
    assert isinstance(chosen, rules.RuleExtractor)
