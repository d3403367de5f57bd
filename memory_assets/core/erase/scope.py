"""What an erase removes: the request made concrete, before anything is changed (the dry run).

A request names one of: a text (matched inside longer text too, ``cut.Needle``), a row of the
index (``--id``: its text; a turn's row: that turn), a chat (every turn of it) or a day (every turn
said that day, UTC, and every line of that day's log). From it, ``plan_erase`` finds:

* **log lines** to empty: every daily-log line that holds a needle; the fact lines written from an
  erased turn (their block's marks, ``forgotten_turns.facts_of_turns``); for a day, every line of
  its log;
* **turns**: every turn whose message or answer holds a needle (the needle is cut out of it), and
  whole turns (the request's chat or day, and the turn each erased fact line was extracted from,
  ``forgotten_turns.turns_of_facts``, when it does not hold the fact's words);
* **bullets** to remove: the vault lines folded from an erased log line, and, the other way, every
  log line folded into a removed bullet (it states the same claim: left alone it would be a folded
  line no page holds), until nothing more is reached: forwards along the lineage
  (``index/lineage.py``, the one place the chain is named), which also gives each erased line's
  turn;
* **needles**: the texts cut wherever else they appear (pages, MEMORY.md's two zones, the state
  files): the request's text, and the text of every erased fact and whole turn;
* **near matches** left: lines that look like the text (a partial ratio of ``NEAR_RATIO`` or more)
  but do not hold it, named so that a person can decide.

The plan is a plain record (``to_dict``/``of``), kept in the erase's journal while it runs: the
lineage it followed cannot be found again once the log lines are empty.
"""

from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

from rapidfuzz import fuzz

from memory_assets.core.capture.daily_log import list_logs, read_daily_log
from memory_assets.core.capture.transcripts import list_transcripts, read_turns
from memory_assets.core.erase.cut import Needle
from memory_assets.core.index.forgotten_turns import (
    DayFact,
    SaidTurn,
    facts_of_turns,
    log_facts,
    said_turns,
    turns_of_chat,
    turns_of_day,
)
from memory_assets.core.index.lineage import trace_log_lines, trace_page_lines
from memory_assets.core.index.store import MemoryStore, quote
from memory_assets.core.index.target import Target
from memory_assets.core.knowledge.page_index import clean_line
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.settings import Settings
from memory_assets.core.sources import TRANSCRIPT
from memory_assets.core.text import json_object, normalise
from memory_assets.core.textfile import read_text

NEAR_RATIO = 85  # rapidfuzz partial_ratio: a line this alike that does not hold the text is named
MAX_NEAR = 20


class EraseError(ValueError):
    """A request erase cannot take, or a place it cannot reach (the message names it and the fix)."""


@dataclass
class Request:
    """A ``Target`` as the erase's journal keeps it (the day as YYYY-MM-DD)."""

    text: str | None = None
    row_id: str | None = None
    chat: str | None = None
    day: str | None = None  # YYYY-MM-DD

    @classmethod
    def of(cls, target: Target) -> "Request":
        day = target.day.isoformat() if target.day is not None else None
        return cls(text=target.text, row_id=target.row_id, chat=target.chat, day=day)

    def describe(self) -> str:
        if self.row_id is not None:
            return f"row {self.row_id}"
        if self.chat is not None:
            return f"chat {self.chat}"
        if self.day is not None:
            return f"day {self.day}"
        return "a text"


@dataclass
class TurnRef:
    path: str  # transcripts/<rel>
    offset: int  # the user line's byte offset: the turn's identity in its session
    line: int
    whole: bool  # erase the whole message (and, for a chat or a day, the answer): not only the needles
    answer: bool = False


@dataclass
class Plan:
    request: Request
    needles: list[str] = field(default_factory=list)
    log_lines: dict[str, list[int]] = field(default_factory=dict)  # YYYY-MM-DD.md -> 1-based lines
    turns: list[TurnRef] = field(default_factory=list)
    bullets: dict[str, list[str]] = field(default_factory=dict)  # page rel -> bullet lines (cleaned)
    whole_texts: list[str] = field(default_factory=list)  # erased facts and turns, for the keyed hashes
    near: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, data: dict[str, Any]) -> "Plan":
        return cls(
            request=Request(**data["request"]),
            needles=list(data["needles"]),
            log_lines={k: list(v) for k, v in data["log_lines"].items()},
            turns=[TurnRef(**t) for t in data["turns"]],
            bullets={k: list(v) for k, v in data["bullets"].items()},
            whole_texts=list(data["whole_texts"]),
            near=list(data["near"]),
        )

    def counts(self) -> dict[str, int]:
        return {
            "log_lines": sum(len(v) for v in self.log_lines.values()),
            "turns": len(self.turns),
            "turns_whole": sum(1 for t in self.turns if t.whole),
            "bullets": sum(len(v) for v in self.bullets.values()),
        }


def plan_erase(settings: Settings, store: MemoryStore | None, request: Request) -> Plan:
    """The plan for ``request`` (see the module docstring); reads only."""
    plan = Plan(request)
    turns = said_turns(settings.transcripts_dir)
    facts = log_facts(settings.archive_dir)
    whole_turns: list[SaidTurn] = []
    answers = False
    if request.text is not None:
        plan.needles.append(request.text)
    elif request.row_id is not None:
        text, turn = _row(settings, store, request.row_id, turns)
        if turn is not None:
            whole_turns.append(turn)
        else:
            plan.needles.append(text)
    elif request.chat is not None:
        whole_turns = turns_of_chat(turns, request.chat)
        answers = True
        if not whole_turns:
            raise EraseError(
                f"no turn of chat {request.chat!r} in this home; search hits carry a turn's chat as `chat`"
            )
    elif request.day is not None:
        whole_turns = turns_of_day(turns, date.fromisoformat(request.day))
        answers = True
        day_log = settings.archive_dir / f"{request.day}.md"
        if day_log.is_file():
            plan.log_lines[day_log.name] = _content_lines(day_log)
        if not whole_turns and not plan.log_lines:
            raise EraseError(f"nothing was said or logged on {request.day} (UTC) in this home")
    for said in whole_turns:
        plan.turns.append(TurnRef(f"transcripts/{said.rel}", said.turn.offset, said.turn.line, True, answers))
        plan.whole_texts.append(said.turn.user)
    erased_facts: list[DayFact] = list(facts_of_turns(facts, whole_turns)) if whole_turns else []
    needles = [Needle(n) for n in plan.needles]
    for fact in facts:
        if any(n.found(fact.fact.content) for n in needles):
            erased_facts.append(fact)
    _follow_lineage(settings, plan, facts, erased_facts)
    for fact in erased_facts:
        _add_line(plan, fact.day + ".md", fact.fact.line)
    erased_texts = list(dict.fromkeys(f.fact.content for f in erased_facts))
    plan.whole_texts += erased_texts
    for text in erased_texts:  # a fact's words elsewhere (a page, MEMORY.md, the state files)
        if text not in plan.needles and not any(n.found(text) for n in needles):
            plan.needles.append(text)
    _lines_holding(settings, plan)
    _turns_holding(settings, plan)
    plan.whole_texts = list(dict.fromkeys(t for t in plan.whole_texts if normalise(t)))
    if request.text is not None:
        plan.near = near_matches(settings, request.text)
    return plan


def _row(
    settings: Settings, store: MemoryStore | None, row_id: str, turns: list[SaidTurn]
) -> tuple[str, SaidTurn | None]:
    """A row's text, or the turn a transcript row belongs to."""
    rows = (
        store.scan(
            ["id", "content", "source_type", "source_file", "metadata"], where=f"id = {quote(row_id)}"
        ).to_pylist()
        if store is not None and store.exists()
        else []
    )
    if not rows:
        raise EraseError(f"no row with id {row_id!r} in the index; `memory-assets search --json` shows ids")
    row = rows[0]
    if row.get("source_type") == TRANSCRIPT:
        line = json_object(row.get("metadata")).get("line")
        for said in turns:
            if said.rel == row.get("source_file") and said.turn.line == line:
                return row["content"], said
    return str(row["content"]), None


def _content_lines(path: Any) -> list[int]:
    """Every non-blank line of a log but its title (a whole day erased)."""
    lines = read_text(path).text.split("\n")
    return [n for n, line in enumerate(lines, start=1) if line.strip() and not line.startswith("# ")]


def _add_line(plan: Plan, filename: str, line: int) -> None:
    lines = plan.log_lines.setdefault(filename, [])
    if line not in lines:
        lines.append(line)
        lines.sort()


def _follow_lineage(settings: Settings, plan: Plan, facts: list[DayFact], erased: list[DayFact]) -> None:
    """Forwards along the lineage (``index/lineage.py``, the one place the chain is named): each
    erased log line's vault lines (bullets) go, and every log line folded into such a bullet goes
    too (it states the same claim: left alone it would be a folded line no page holds), until
    nothing more is reached; and each erased line's turn is erased whole where it does not hold a
    needle (its words may differ from the fact's). Adds to ``erased`` and to the plan."""
    by_key = {(f.day + ".md", f.fact.line): f for f in facts}
    queue = [(f.day + ".md", f.fact.line) for f in erased]
    seen = set(queue)
    bullets: set[tuple[str, int]] = set()
    needles = [Needle(n) for n in plan.needles]
    have = {(t.path, t.offset) for t in plan.turns}
    while queue:
        traces = trace_log_lines(settings, [k for k in queue if k in by_key])
        queue = []
        for trace in traces:
            for turn in trace.log_line.turns:
                key = (f"transcripts/{turn.transcript}", turn.offset)
                if key not in have and not any(n.found(turn.said) for n in needles):
                    plan.turns.append(TurnRef(key[0], turn.offset, turn.line, True))
                    plan.whole_texts.append(turn.said)
                    have.add(key)
            for bullet in trace.bullets:
                if (bullet.page, bullet.line) in bullets:
                    continue
                bullets.add((bullet.page, bullet.line))
                plan.bullets.setdefault(bullet.page, []).append(normalise(clean_line(bullet.text)))
                for source in trace_page_lines(settings, bullet.page, [bullet.line]):
                    for line in source.log_lines:
                        key = (line.file, line.line)
                        if key not in seen and key in by_key:
                            seen.add(key)
                            erased.append(by_key[key])
                            queue.append(key)


def _lines_holding(settings: Settings, plan: Plan) -> None:
    """Every log line (fact lines and any other) that holds a needle."""
    needles = [Needle(n) for n in plan.needles]
    for _, path in list_logs(settings.archive_dir):
        try:
            lines = read_text(path).text.split("\n")
        except OSError:
            continue
        for number, line in enumerate(lines, start=1):
            if line.strip() and any(n.found(line) for n in needles):
                _add_line(plan, path.name, number)


def _turns_holding(settings: Settings, plan: Plan) -> None:
    """Turns whose message or answer holds a needle: the needle is cut out of them."""
    needles = [Needle(n) for n in plan.needles]
    have = {(t.path, t.offset) for t in plan.turns}
    for rel, path in list_transcripts(settings.transcripts_dir):
        try:
            read = read_turns(path, cap=None).turns
        except OSError:
            continue
        for turn in read:
            key = (f"transcripts/{rel}", turn.offset)
            if key not in have and any(n.found(turn.user) or n.found(turn.assistant) for n in needles):
                plan.turns.append(TurnRef(key[0], turn.offset, turn.line, False))
                have.add(key)


def near_matches(settings: Settings, text: str) -> list[dict[str, Any]]:
    """Lines of the logs and pages, and user messages, that look like ``text`` but do not hold it."""
    needle, target = Needle(text), normalise(text)
    out: list[dict[str, Any]] = []

    def look(where: str, line: int, said: str) -> None:
        if (
            len(out) < MAX_NEAR
            and said.strip()
            and not needle.found(said)
            and fuzz.partial_ratio(target, normalise(said)) >= NEAR_RATIO
        ):
            out.append({"file": where, "line": line, "text": said.strip()})

    for _, path in list_logs(settings.archive_dir):
        try:
            for fact in read_daily_log(path).facts:
                look(f"memory/archive/{path.name}", fact.line, fact.content)
        except OSError:
            continue
    for rel in list_pages(settings.notebook_dir):
        try:
            for number, line in enumerate(read_text(settings.notebook_dir / rel).text.split("\n"), start=1):
                look(f"notebook/{rel}", number, line)
        except OSError:
            continue
    for rel, path in list_transcripts(settings.transcripts_dir):
        try:
            for turn in read_turns(path, cap=None).turns:
                look(f"transcripts/{rel}", turn.line, turn.user)
        except OSError:
            continue
    return out
