"""Confirm, revise or new: what the write path does with each extracted fact (design §5.6).

The comparison is lexical on purpose: the only band that changes behaviour is "practically the
same sentence", which an edit-distance ratio measures well and a semantic score is too generous
about. Similarity and specifics are the shared ones of ``knowledge/claims.py`` (an edit-distance
ratio over the folded text; numbers, dates, quotes, paths, URLs, versions), so the write path and
the dream draw the line between a repeat and an update with the same ruler.

* **confirmation**: similarity >= 0.97 to a fact recorded in a durable source (a daily-log row or
  a vault page) and no new specific. It is not logged again; it becomes a line in
  ``.state/confirmations.jsonl`` and the dream folds it into the claim's ``(confirmed Nx)``.
* **revision**: similarity >= 0.90 to a known fact, or the fact's words strictly contain a known
  fact's words and add a specific. Written, tagged ``revision``.
* **new**: anything else. Written.

Two guards keep the write path from ever swallowing an update (invariant 5b): a match found only
in a transcript, in MEMORY.md, in a core file or in a legacy row can never make a confirmation
(none of them is a record the write path can defer to); and any new specific (a number, a date
or time, a month or weekday, a quoted string, a path, a URL or e-mail, a version) makes a
restatement a revision however similar the rest is ("moved to Berlin in 2024" is not a repeat of
"moved to Berlin").
"""

from collections.abc import Sequence
from dataclasses import dataclass

from memory_assets.core.knowledge.claims import similarity, specifics
from memory_assets.core.sources import DURABLE_SOURCES
from memory_assets.core.text import fold

CONFIRM_AT = 0.97
REVISE_AT = 0.90
CONFIRMATION, REVISION, NEW = "confirmation", "revision", "new"


@dataclass(frozen=True)
class Known:
    """A fact already in memory, as recall found it."""

    content: str
    source_type: str
    source_file: str | None = None
    zone: str | None = None  # MEMORY.md's "generated" or "manual" zone, for core-file rows

    @property
    def durable(self) -> bool:
        return self.source_type in DURABLE_SOURCES


@dataclass(frozen=True)
class Verdict:
    outcome: str  # confirmation | revision | new
    similarity: float  # to the best-matching known fact (0 when nothing is known)
    matched: Known | None  # the known fact the outcome refers to
    new_specifics: tuple[str, ...] = ()


def classify(fact: str, known: Sequence[Known]) -> Verdict:
    """Classify ``fact`` against the recalled ``known`` facts."""
    if not known:
        return Verdict(NEW, 0.0, None)
    own = specifics(fact)
    scored = sorted(
        ((similarity(fact, k.content), i, k) for i, k in enumerate(known)), key=lambda s: (-s[0], s[1])
    )
    best_score, _, best = scored[0]

    def added(k: Known) -> tuple[str, ...]:
        return tuple(sorted((own - specifics(k.content)).elements()))

    for score, _, candidate in scored:
        if score < CONFIRM_AT:
            break
        if candidate.durable and not added(candidate):
            return Verdict(CONFIRMATION, round(score, 4), candidate)
    if best_score >= REVISE_AT:
        return Verdict(REVISION, round(best_score, 4), best, added(best))
    words = set(fold(fact).split())
    for score, _, candidate in scored:
        theirs = set(fold(candidate.content).split())
        new = added(candidate)
        if theirs and theirs < words and new:
            return Verdict(REVISION, round(score, 4), candidate, new)
    return Verdict(NEW, round(best_score, 4), best)
