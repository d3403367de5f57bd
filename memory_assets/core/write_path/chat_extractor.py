"""Fact extraction through an OpenAI-compatible chat endpoint, falling back to the rules.

``ChatExtractor`` sends one turn (and the facts already in memory) to the model with
``ChatClient.complete_json`` and validates the answer against::

    {"facts": [{"content": str, "category": str, "importance": number, "tags": [str]}]}

It never raises into the write: an HTTP error, a timeout, an answer that is not JSON or not of
that shape makes it return what its fallback extractor (the rules) finds instead, with the
reason in ``Extraction.fallback``. ``extractor_choice.make_extractor(settings)`` picks the chat
extractor when ``MEMORY_LLM_URL`` is set, else the rule-based default.
"""

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memory_assets.core.knowledge.categories import CATEGORIES, EXTRACTED
from memory_assets.core.models.language_model import ChatClient, LanguageModelError
from memory_assets.core.text import excerpt
from memory_assets.core.write_path.extraction import ExtractedFact, Extraction, Extractor, Turn

DEFAULT_CATEGORY = "general"
DEFAULT_IMPORTANCE = 0.5
MAX_TAGS = 4
# A model's answer is data, not trusted: one turn yields at most this many facts, each at most
# this long (a daily-log line is one sentence; a runaway answer must not fill the log).
MAX_FACTS = 64
MAX_FACT_CHARS = 2000
QUOTE_CHARS = 80  # a value quoted in a warning
REASON_CHARS = 1000  # a fallback's reason, on one line
# How much of a turn goes into the prompt (small local models have small contexts; the user's own
# words carry the facts, the assistant's answer mostly context).
MAX_USER_CHARS = 12_000
MAX_ASSISTANT_CHARS = 4_000
KNOWN_HEADING = "## Already in memory"

SYSTEM_PROMPT = (
    "You maintain the long-term memory of a personal assistant. You read one conversation turn and "
    "note down what it reveals about the user that will still be worth knowing in later "
    "conversations.\n"
    "\n"
    "Worth noting: who the user is, where they live and work, the people in their life, what they "
    "like and dislike, how they want to be helped, their goals, plans and deadlines, the tools and "
    "systems they use, and decisions they have taken.\n"
    "Not worth noting: greetings, thanks and small talk; the user's questions as such (only what a "
    "question reveals about the user that will last); details that matter for this turn only (a "
    "one-off error, today's weather, a passing mood); and anything the assistant said, proposed or "
    "did, unless the user took it up as their own.\n"
    "\n"
    "Write every fact as one short sentence in the third person with the user as the implied "
    'subject, e.g. "Lives in Porto with two cats." or "Prefers answers with code samples in Go." '
    'No narration ("The user mentioned that ..."), one fact per sentence. Keep names, numbers, '
    "dates, places and versions exactly as given, and turn relative dates (tomorrow, next month) "
    "into absolute ones using the date of the turn. Fewer, sharper facts beat many vague ones.\n"
    "\n"
    "Answer with a single JSON object and nothing else:\n"
    '{"facts": [{"content": "<the fact>", "category": "<category>", "importance": <0 to 1>, '
    '"tags": ["<keyword>", "<keyword>"]}]}\n'
    "- category, exactly one of:\n"
    + "".join(f"  - {c.name}: {c.meaning}\n" for c in CATEGORIES if c.meaning)
    + "- importance: 0.8 or more for facts that define the user or must never be forgotten, "
    "0.5 to 0.8 for useful ones, below 0.5 for minor ones.\n"
    "- tags: 2 to 4 short lower-case keywords.\n"
    'When nothing in the turn is worth remembering, answer {"facts": []}.'
)

KNOWN_RULE = (
    "Do not repeat a fact listed above unless this turn changes it. A fact from this turn that "
    "changes, corrects or adds a specific to one of them MUST be emitted, as a complete sentence "
    'carrying the new detail: a new number, date, place or name is a change ("Runs 10 km on '
    'Sundays." is new next to "Runs on Sundays.").'
)


class FactSchemaError(ValueError):
    """An answer that is not ``{"facts": [...]}``."""


def build_user_prompt(turn: Turn, known: Sequence[str] = ()) -> str:
    """The user message: the turn, its date and, when there are any, the known facts and the rule
    that an update to one of them must still be emitted."""
    when = (turn.at or datetime.now(UTC)).date().isoformat()
    parts = [
        f"Date of the turn: {when}",
        "",
        "## The user said",
        _clip(turn.user.strip(), MAX_USER_CHARS) or "(nothing)",
    ]
    if turn.assistant.strip():
        parts += ["", "## The assistant answered", _clip(turn.assistant.strip(), MAX_ASSISTANT_CHARS)]
    facts = _unique_lines(known)
    if facts:
        parts += ["", KNOWN_HEADING, *(f"- {fact}" for fact in facts), "", KNOWN_RULE]
    parts += [
        "",
        "Note the facts from this turn worth remembering, as the JSON object described "
        '({"facts": []} when there are none).',
    ]
    return "\n".join(parts)


def parse_facts(data: Any) -> tuple[list[ExtractedFact], list[str]]:
    """The valid facts of an answer and one warning per repaired or dropped item.

    Raises ``FactSchemaError`` when the answer is not ``{"facts": [...]}`` at all. Per fact:
    ``content`` must be a non-empty string (its whitespace is collapsed onto one line), else the
    fact is dropped; an unknown or missing ``category`` becomes ``general``; ``importance`` is
    clamped to 0-1 and defaults to 0.5 when missing or not a number; ``tags`` keeps up to four
    non-empty strings (inner whitespace becomes ``-``; a comma-separated string is split). A
    repeated content (same words, ignoring case) is dropped."""
    if not isinstance(data, dict):
        raise FactSchemaError(f"the answer is {type(data).__name__}, not an object with a 'facts' list")
    if "facts" not in data:
        keys = ", ".join(repr(k) for k in list(data)[:5]) or "none"
        raise FactSchemaError(f"the answer has no 'facts' list (keys: {keys})")
    items = data["facts"]
    if not isinstance(items, list):
        raise FactSchemaError(f"'facts' is {type(items).__name__}, not a list")
    facts: list[ExtractedFact] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for position, item in enumerate(items):
        where = f"fact {position}"
        if not isinstance(item, dict):
            warnings.append(f"{where} dropped: {type(item).__name__}, not an object")
            continue
        raw_content = item.get("content")
        content = " ".join(raw_content.split()) if isinstance(raw_content, str) else ""
        if not content:
            problem = "missing" if raw_content is None else f"{type(raw_content).__name__}, empty or blank"
            warnings.append(f"{where} dropped: no content ({problem})")
            continue
        if len(facts) >= MAX_FACTS:
            warnings.append(
                f"{where} and {len(items) - position - 1} more dropped: a turn gives at most {MAX_FACTS} facts"
            )
            break
        if len(content) > MAX_FACT_CHARS:
            warnings.append(f"{where}: content cut from {len(content)} to {MAX_FACT_CHARS} characters")
            content = content[: MAX_FACT_CHARS - 1].rstrip() + "…"
        key = content.casefold()
        if key in seen:
            warnings.append(f"{where} dropped: repeats an earlier fact ({excerpt(content, QUOTE_CHARS)!r})")
            continue
        seen.add(key)
        facts.append(
            ExtractedFact(
                content=content,
                category=_category(item.get("category"), where, warnings),
                tags=_tags(item.get("tags"), where, warnings),
                importance=_importance(item.get("importance"), where, warnings),
            )
        )
    return facts, warnings


class ChatExtractor:
    """Extraction by a chat model, with ``fallback`` (the rules) for every failure.

    A failed call (HTTP error, time limit, an answer that is not JSON) or an answer of the wrong
    shape (no ``facts`` list, or facts none of which is valid) returns ``fallback.extract(turn,
    known)`` with ``Extraction.fallback`` set to the reason on one line. Partially valid answers
    keep their valid facts: an invalid fact is dropped (no content) or repaired (unknown category
    -> ``general``, importance clamped or defaulted, bad tags dropped), with one warning each in
    ``Extraction.warnings``; a model that gets one fact wrong should not cost the turn its other
    facts. An empty ``facts`` list is a valid answer (nothing worth remembering), not a failure.
    ``extract`` never raises, even when the fallback itself fails (then the result is empty)."""

    def __init__(self, client: ChatClient, fallback: Extractor) -> None:
        self.client = client
        self.fallback = fallback
        self.name = f"chat:{client.model}"

    def __repr__(self) -> str:
        return f"ChatExtractor({self.client!r}, fallback={getattr(self.fallback, 'name', self.fallback)!r})"

    def extract(self, turn: Turn, known: Sequence[str] = ()) -> Extraction:
        try:
            data = self.client.complete_json(SYSTEM_PROMPT, build_user_prompt(turn, known))
            facts, warnings = parse_facts(data)
        except Exception as exc:  # every failure of the model ends in the fallback, never in the write
            return self._fall_back(turn, known, _reason(exc))
        if not facts and warnings:
            return self._fall_back(
                turn, known, f"no valid fact in the model's answer ({'; '.join(warnings)})", warnings
            )
        return Extraction(facts=facts, extractor=self.name, warnings=warnings)

    def _fall_back(
        self, turn: Turn, known: Sequence[str], reason: str, warnings: Sequence[str] = ()
    ) -> Extraction:
        reason = excerpt(f"{self.name}: {reason}", REASON_CHARS)
        try:
            result = self.fallback.extract(turn, known)
        except Exception as exc:  # the fallback failing must not break the write either
            return Extraction(
                extractor=getattr(self.fallback, "name", type(self.fallback).__name__),
                fallback=excerpt(f"{reason}; the fallback failed too: {_reason(exc)}", REASON_CHARS),
                warnings=list(warnings),
            )
        result.fallback = reason
        result.warnings[:0] = warnings
        return result


# -- helpers ---------------------------------------------------------------------------------------
def _category(value: Any, where: str, warnings: list[str]) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        return DEFAULT_CATEGORY
    name = value.strip().lower() if isinstance(value, str) else ""
    if name in EXTRACTED or name == DEFAULT_CATEGORY:  # general is the fallback, asked for or not
        return name
    warnings.append(
        f"{where}: unknown category {excerpt(str(value), QUOTE_CHARS)!r}, written as {DEFAULT_CATEGORY!r}"
    )
    return DEFAULT_CATEGORY


def _importance(value: Any, where: str, warnings: list[str]) -> float:
    if value is None:
        return DEFAULT_IMPORTANCE
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        warnings.append(
            f"{where}: importance {excerpt(str(value), QUOTE_CHARS)!r} is not a number, using {DEFAULT_IMPORTANCE}"
        )
        return DEFAULT_IMPORTANCE
    clamped = min(1.0, max(0.0, number))
    if clamped != number:
        warnings.append(f"{where}: importance {number:g} clamped to {clamped:g}")
    return clamped


def _tags(value: Any, where: str, warnings: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        warnings.append(f"{where}: tags are {type(value).__name__}, not a list; dropped")
        return ()
    tags: list[str] = []
    for tag in value:
        if not isinstance(tag, str):
            continue
        clean = "-".join(tag.replace("`", " ").split())
        if clean and clean not in tags:
            tags.append(clean)
    return tuple(tags[:MAX_TAGS])


def _unique_lines(texts: Sequence[str]) -> list[str]:
    lines: list[str] = []
    seen: set[str] = set()
    for text in texts:
        line = " ".join(str(text).split())
        if line and line.casefold() not in seen:
            seen.add(line.casefold())
            lines.append(line)
    return lines


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" [... {len(text) - limit} more characters not shown]"


def _reason(exc: BaseException) -> str:
    """An exception as a one-line reason (its type too, unless it is one of ours with a full message)."""
    message = str(exc) or repr(exc)
    if isinstance(exc, LanguageModelError | FactSchemaError):
        return excerpt(message, REASON_CHARS)
    return excerpt(f"{type(exc).__name__}: {message}", REASON_CHARS)
