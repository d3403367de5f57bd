"""Which consolidator ``make_consolidator`` builds: the agent needs a chat model; the rules are the
default, imported only when chosen."""

import dataclasses
import sys
import types

import pytest

from memory_assets.core.dream.agent import AgentConsolidator
from memory_assets.core.dream.consolidator_choice import make_consolidator
from memory_assets.core.settings import Settings, SettingsError


def test_make_consolidator_needs_a_chat_model_for_the_agent(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SettingsError) as info:
        make_consolidator(dataclasses.replace(settings, dream_consolidator="agent"))
    assert "MEMORY_LLM_URL" in str(info.value) and "MEMORY_LLM_MODEL" in str(info.value)
    chosen = make_consolidator(
        dataclasses.replace(
            settings, dream_consolidator="agent", llm_url="http://127.0.0.1:9/v1", llm_model="m"
        )
    )
    assert isinstance(chosen, AgentConsolidator) and chosen.name == "agent:m"

    class FakeRules:
        name = "rules"

    monkeypatch.setitem(
        sys.modules,
        "memory_assets.core.dream.rule_consolidator",
        types.SimpleNamespace(RuleConsolidator=FakeRules),
    )
    assert isinstance(make_consolidator(settings), FakeRules)  # the default, imported only then
