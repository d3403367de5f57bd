"""What extraction takes and gives: a conversation turn in, one-sentence facts out.

Two implementations share the ``Extractor`` interface: ``rule_extractor.RuleExtractor`` (the
deterministic default, no model) and ``chat_extractor.ChatExtractor`` (an OpenAI-compatible chat
endpoint, falling back to the rules on any failure, never raising into the write).
``extractor_choice.make_extractor(settings)`` chooses between them.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class Turn:
    """One conversation turn: what the user said and what the assistant answered."""

    user: str
    assistant: str = ""
    chat_id: str = "default"
    at: datetime | None = None  # when it happened (UTC); None = now. Decides the day's log.
    # Kept verbatim in transcripts/captured/ before it is acknowledged (the recall tier). False
    # for a turn read from a transcript (it is kept there already) and for a memory added directly
    # (``remember``: a fact, not something said).
    keep: bool = True


@dataclass(frozen=True)
class ExtractedFact:
    """One fact, stated as a third-person sentence about the user ("Lives in Lisbon.")."""

    content: str
    category: str = "general"
    tags: tuple[str, ...] = ()
    importance: float = 0.5  # 0-1; at or above 0.7 the fact is "important" (MEMORY.md refresh)


@dataclass
class Extraction:
    facts: list[ExtractedFact] = field(default_factory=list)
    extractor: str = ""  # which implementation produced the facts ("rules", "chat:<model>")
    fallback: str | None = None  # why the configured extractor was not used (its error), if it was not
    warnings: list[str] = field(default_factory=list)


class Extractor(Protocol):
    name: str

    def extract(self, turn: Turn, known: Sequence[str] = ()) -> Extraction:
        """Facts worth remembering from ``turn``. ``known``: facts already in memory (the
        extraction may skip a plain repeat of one, but must still emit a fact that changes one)."""
        ...


class GivenFacts:
    """An extractor that returns facts given in advance (``memory-assets remember``: one fact put
    straight through the classifier, with no extraction)."""

    name = "given"

    def __init__(self, facts: Sequence[ExtractedFact]):
        self.facts = list(facts)

    def extract(self, turn: Turn, known: Sequence[str] = ()) -> Extraction:
        return Extraction(facts=list(self.facts), extractor=self.name)
