"""What a consolidator is given and what it reports (design §5.9).

A consolidator folds a batch of days' facts into the vault's pages: ``3_Personal/`` pages, one
per category, one bullet per claim, with four outcomes (confirm, sharpen, supersede, add). It
writes pages only; the runner owns everything else (the watermark, the counters, the
``superseded.txt`` hand-off, which it writes from ``folded``, the confirmations' truncation,
MEMORY.md).

Two implementations: the rule-based default (``rule_consolidator.py``) and the agent
(``agent.py``); ``consolidator_choice.make_consolidator`` picks one (``settings.dream_consolidator``).
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Protocol

from memory_assets.core.knowledge.confirmations import Confirmation

if TYPE_CHECKING:
    from memory_assets.core.settings import Settings


@dataclass(frozen=True)
class BatchFact:
    """One fact line of a daily log in the batch."""

    content: str
    category: str
    tags: tuple[str, ...]
    day: date
    line: int  # 1-based line number in its log
    source_file: str  # "YYYY-MM-DD.md"


class PageJournal(Protocol):
    """Where a consolidator declares a page write before making it (``dream/journal.py``), so the
    runner can roll back a run that fails or is killed. Called under the page's lock."""

    def record(self, rel: str, before: bytes | None, after: bytes) -> None: ...


@dataclass
class Batch:
    days: list[date]  # the days being consolidated, oldest first
    facts: list[BatchFact]  # their pending fact lines (tombstoned ones left out), in log order
    confirmations: list[Confirmation]  # the first lines of confirmations.jsonl, shown to the run
    confirmations_shown: int  # how many lines that is (skipped malformed lines included)
    revisit: list[str]  # 3_Personal/ pages to re-confirm: stale first (soonest), then undated
    today: date
    # How far each log was read (complete lines, bytes): what the run's commit records.
    read: dict[str, tuple[int, int]] = field(default_factory=dict)
    journal: PageJournal | None = None  # None: nothing to roll back (a dry run on a clone)
    confirmation_lines: list[bytes] = field(default_factory=list)  # the lines shown, as read

    def declare(self, rel: str, before: bytes | None, after: bytes) -> None:
        """A consolidator calls this just before replacing page ``rel`` (see ``PageJournal``)."""
        if self.journal is not None:
            self.journal.record(rel, before, after)


@dataclass
class ConsolidationResult:
    pages_changed: list[str] = field(default_factory=list)  # vault-relative paths written
    outcomes: Counter[str] = field(default_factory=Counter)  # confirm / sharpen / supersede / add
    folded: list[str] = field(default_factory=list)  # log fact texts now held by a page (the hand-off)
    confirmations_folded: int = 0
    revisited: list[str] = field(default_factory=list)  # revisit-queue pages re-confirmed
    warnings: list[str] = field(default_factory=list)
    summary: str = ""


class Consolidator(Protocol):
    name: str

    def consolidate(self, settings: "Settings", batch: Batch) -> ConsolidationResult:
        """Fold ``batch`` into the vault. Raise (or report no change) on failure: the runner
        then counts a failed attempt and leaves the watermark where it is."""
        ...
