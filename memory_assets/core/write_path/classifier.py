"""Confirm, revise or new: what the write path does with each extracted fact (docs/design.md §5.6).

The comparison is lexical on purpose: the only band that changes behaviour is "practically the
same sentence", which an edit-distance ratio measures well and a semantic score is too generous
about. Similarity is ``rapidfuzz.fuzz.ratio / 100`` over the folded text (NFKC, lower case,
punctuation folded to spaces, whitespace collapsed).

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

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from memory_assets.core.text import fold

CONFIRM_AT = 0.97
REVISE_AT = 0.90
CONFIRMATION, REVISION, NEW = "confirmation", "revision", "new"
# Sources a confirmation may defer to: records the dream consolidates (never a transcript, the
# generated zone of MEMORY.md, a core file or a legacy row the index alone holds).
DURABLE_SOURCES = ("archive_log", "notebook")

# Month and weekday names are date specifics too ("may" the verb counts as one: the safe side,
# since a specific can only turn a confirmation into a written revision).
CALENDAR_WORDS = frozenset(
    {
        *("january", "february", "march", "april", "may", "june", "july", "august"),
        *("september", "october", "november", "december"),
        *("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"),
        *("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
        # Holidays and seasons name dates too ("by Christmas" -> "by mid July" is a new date).
        *("christmas", "easter", "thanksgiving", "halloween", "ramadan", "diwali", "hanukkah"),
        *("summer", "autumn", "winter"),
    }
)
# Each pattern finds one kind of specific in the ORIGINAL text (before folding strips punctuation).
_SPECIFIC_PATTERNS = (
    re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),  # e-mail
    re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE),  # URL
    re.compile(r"(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]*)+|\b[A-Za-z]:\\\S+"),  # path
    re.compile(r"\bv?\d+(?:\.\d+)+\b|\bv\d+\b", re.IGNORECASE),  # version, decimal, dotted date
    re.compile(r"\d+(?:[:/-]\d+)*(?:st|nd|rd|th|am|pm|h|%)?", re.IGNORECASE),  # number, time, date
    re.compile(r"\"[^\"]+\"|“[^”]+”|‘[^’]+’|'[^'\s][^']*[^'\s]'"),  # quoted string
)


def specifics(text: str) -> Counter[str]:
    """The specifics a text carries, normalised, with how often each occurs: a restatement that
    repeats a number the known fact already has ("5 plants ... at 5") still adds a specific."""
    found: Counter[str] = Counter()
    for pattern in _SPECIFIC_PATTERNS:
        for m in pattern.finditer(text):
            value = m.group(0).lower().strip("\"'“”‘’").rstrip(".,;:!?)")
            if value:
                found[value] += 1
    found.update(w for w in fold(text).split() if w in CALENDAR_WORDS)
    return found


def similarity(a: str, b: str) -> float:
    return fuzz.ratio(fold(a), fold(b)) / 100.0


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
