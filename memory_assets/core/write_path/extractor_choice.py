"""Which extractor a home uses: ``make_extractor(settings)``.

The chat extractor over the configured endpoint when ``MEMORY_LLM_URL`` is set (the rules as its
fallback on any failure), else the deterministic rule-based extractor. Apart from
``extraction.py`` (the interface both implementations import), so nothing imports in a circle.
"""

from typing import TYPE_CHECKING

from memory_assets.core.write_path.extraction import Extractor

if TYPE_CHECKING:
    from memory_assets.core.settings import Settings


def make_extractor(settings: "Settings") -> Extractor:
    """``ChatExtractor`` over ``make_chat_client(settings)`` (falling back to the rules) when
    ``MEMORY_LLM_URL`` is set, else the rule-based ``RuleExtractor``. A URL without a model raises
    ``LanguageModelError`` (a configuration error is loud; only a call's failure falls back)."""
    # Lazy: the chat client's HTTP stack and the rules' tables load only when something asks for
    # an extractor, and only the one it builds.
    from memory_assets.core.models.language_model import make_chat_client
    from memory_assets.core.write_path.chat_extractor import ChatExtractor
    from memory_assets.core.write_path.rule_extractor import RuleExtractor

    client = make_chat_client(settings)
    rules = RuleExtractor()
    return rules if client is None else ChatExtractor(client, rules)
