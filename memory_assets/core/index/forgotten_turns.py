"""Which turns, and which facts, a person's forgetting reaches (the recall tier, design §5.8).

A tombstone hides a fact by its whole text; a turn is what was said, so forgetting reaches turns
in three ways (``retire.forget_said`` writes what this module finds):

* ``forget "X"``: every turn that holds X is hidden by X's own tombstone
  (``Tombstones.hides_turn``); the turn each fact X was written from is hidden too
  (``turns_of_facts``), since its words need not hold X ("we got a puppy, Rex!" for "Has a dog
  named Rex");
* ``forget --chat ID``: every turn of that chat (``turns_of_chat``), and the facts written from
  them (``facts_of_turns``);
* ``forget --day D``: every turn said that day, UTC (``turns_of_day``), and the facts written from
  them.

A fact and its turn are linked by the marks its log block carries: the log's day, the block's
``HH:MM`` and the chat as the header carries it (``daily_log.block_chat``); the turn's time (UTC)
and chat give the same marks (``search/turns.py`` links them the same way in a search). Two turns
of one chat in one minute share the marks: a fact then goes with the one whose words it shares
most. Reads only; an unreadable file is skipped (the sweep and ``check`` report it).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date
from pathlib import Path

from memory_assets.core.capture.daily_log import LogFact, block_chat, list_logs, read_daily_log
from memory_assets.core.capture.transcripts import TranscriptTurn, list_transcripts, read_turns
from memory_assets.core.knowledge.claims import said_overlap
from memory_assets.core.knowledge.tombstones import claim_core
from memory_assets.core.sources import IndexKey
from memory_assets.core.text import normalise

Marks = tuple[str, str, str]  # (day, HH:MM, the chat as a block header carries it)


@dataclass(frozen=True)
class SaidTurn:
    rel: str  # the transcript, as its path under transcripts/
    turn: TranscriptTurn

    @property
    def key(self) -> str:
        return str(IndexKey.for_transcript(self.rel))

    @property
    def marks(self) -> Marks | None:
        at = self.turn.at
        if at is None:
            return None
        at = at.astimezone(UTC)
        return at.date().isoformat(), f"{at:%H:%M}", block_chat(self.turn.chat_id)


@dataclass(frozen=True)
class DayFact:
    day: str  # the log's day
    fact: LogFact

    @property
    def key(self) -> str:
        return str(IndexKey.for_log(f"{self.day}.md"))

    @property
    def marks(self) -> Marks | None:
        if self.fact.time is None or self.fact.chat is None:
            return None
        return self.day, self.fact.time, self.fact.chat


def said_turns(transcripts_dir: Path) -> list[SaidTurn]:
    """Every turn of every transcript the recall tier indexes, in file order."""
    out: list[SaidTurn] = []
    for rel, path in list_transcripts(transcripts_dir):
        try:
            read = read_turns(path, cap=None)
        except OSError:
            continue
        out += [SaidTurn(rel, t) for t in read.turns if t.user.strip()]
    return out


def log_facts(archive_dir: Path) -> list[DayFact]:
    """Every fact line of every daily log, with its log's day."""
    out: list[DayFact] = []
    for day, path in list_logs(archive_dir):
        try:
            facts = read_daily_log(path, f"archive/{path.name}").facts
        except OSError:
            continue
        out += [DayFact(day.isoformat(), f) for f in facts]
    return out


def turns_of_chat(turns: list[SaidTurn], chat_id: str) -> list[SaidTurn]:
    return [t for t in turns if t.turn.chat_id == chat_id]


def turns_of_day(turns: list[SaidTurn], day: date) -> list[SaidTurn]:
    return [t for t in turns if t.turn.at is not None and t.turn.at.astimezone(UTC).date() == day]


def by_marks(turns: Iterable[SaidTurn]) -> dict[Marks, list[SaidTurn]]:
    """The turns that have marks, grouped by them (file order kept within a group)."""
    out: dict[Marks, list[SaidTurn]] = {}
    for t in turns:
        if (m := t.marks) is not None:
            out.setdefault(m, []).append(t)
    return out


def turn_of(fact: DayFact, turns_by_marks: dict[Marks, list[SaidTurn]]) -> SaidTurn | None:
    """The one turn ``fact`` was written from: of the turns with its marks, the one it shares most
    content words with (the earlier on a tie); None when it has no marks, no turn has them, or it
    shares no content word with any (a fact given directly)."""
    here = turns_by_marks.get(fact.marks) if fact.marks is not None else None
    if not here:
        return None
    best = max(here, key=lambda t: (said_overlap(fact.fact.content, t.turn.user), -t.turn.offset))
    return best if said_overlap(fact.fact.content, best.turn.user) else None


def turns_of_facts(facts: list[DayFact], turns: list[SaidTurn], text: str) -> list[SaidTurn]:
    """The turns the log facts stating ``text`` (whole, case and spacing aside) were written from."""
    norm, core = normalise(text), claim_core(text)
    grouped = by_marks(turns)
    out: dict[tuple[str, int], SaidTurn] = {}
    for f in facts:
        if normalise(f.fact.content) != norm and claim_core(f.fact.content) != core:
            continue
        best = turn_of(f, grouped)
        if best is not None:
            out[(best.rel, best.turn.offset)] = best
    return list(out.values())


def facts_of_turns(facts: list[DayFact], turns: list[SaidTurn]) -> list[DayFact]:
    """The log facts written from these turns: their blocks carry a turn's marks, and they share a
    content word with it (``claims.said_overlap``)."""
    grouped = by_marks(turns)
    return [
        f
        for f in facts
        if f.marks is not None
        and any(said_overlap(f.fact.content, t.turn.user) for t in grouped.get(f.marks, ()))
    ]
