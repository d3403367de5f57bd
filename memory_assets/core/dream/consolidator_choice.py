"""Which consolidator a home's dream uses: ``make_consolidator(settings)``.

``settings.dream_consolidator`` names it: ``agent`` (a configured chat model with tool calling is
then required) or the rule-based default. Apart from ``consolidator.py`` (the interface both
implementations import), so nothing imports in a circle; only the one it builds is imported.
"""

from typing import TYPE_CHECKING

from memory_assets.core.dream.consolidator import Consolidator
from memory_assets.core.settings import SettingsError

if TYPE_CHECKING:
    from memory_assets.core.settings import Settings


def make_consolidator(settings: "Settings") -> Consolidator:
    """The consolidator ``settings.dream_consolidator`` names: ``agent`` (a configured chat model
    is then required) or the rule-based default."""
    if settings.dream_consolidator == "agent":
        from memory_assets.core.models.language_model import make_chat_client

        client = make_chat_client(settings)
        if client is None:
            raise SettingsError(
                "MEMORY_DREAM_CONSOLIDATOR=agent needs a chat model with tool calling: set MEMORY_LLM_URL "
                "(an OpenAI-compatible base URL such as http://127.0.0.1:11434/v1) and MEMORY_LLM_MODEL, "
                "or unset MEMORY_DREAM_CONSOLIDATOR to use the rule-based consolidator"
            )
        from memory_assets.core.dream.agent import AgentConsolidator

        return AgentConsolidator(client, settings)
    from memory_assets.core.dream.rule_consolidator import RuleConsolidator

    return RuleConsolidator()
