"""A fact and the turn it was written from are one hit (design §5.7): the recall tier in a search.

The write path keeps every turn in its chat's transcript (``source_type`` ``transcript``, one row
per user message, chunked when long) and writes the facts it extracts to the day's log under a
block header ``## HH:MM — <chat>``. The two carry the same marks, so a fact row and its turn's row
are linked by them, with no column of their own: the day (``source_date``), the minute
(``metadata.time``) and the chat as a block header carries it (``block_chat``: its first 8
characters, one word). Two turns of one chat in one minute share the marks; a fact then goes with
the one whose content words it shares most, and with none when it shares none
(``claims.said_overlap``: a fact given directly in the minute of a turn is not that turn's).

What a search does with them:

* ``merge``: among the candidates, a turn whose fact is a candidate too is not a hit of its own:
  the fact takes the better of the two scores and carries the turn as ``said``; the chunks of one
  long message are one hit (the best chunk), so the top k is never spent twice on one turn;
* ``said_lookup``: the final facts whose turn was not a candidate get it from one query (the turns
  of their days; ``fact_date`` is indexed), so every fact that came from a kept turn says so.

Reads only.
"""

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from memory_assets.core.capture.daily_log import block_chat
from memory_assets.core.index.store import quote
from memory_assets.core.knowledge.claims import said_overlap
from memory_assets.core.search.ranking import Scored, sort_key
from memory_assets.core.sources import ARCHIVE, TRANSCRIPT
from memory_assets.core.text import json_object

Marks = tuple[str, str, str]  # (day, HH:MM, the chat as a block header carries it)
SAID_COLUMNS = ["id", "content", "source_file", "source_date", "metadata"]


def fact_marks(row: dict[str, Any]) -> Marks | None:
    """The marks of a daily-log fact row (None for any other row, or one without a block)."""
    if row.get("source_type") != ARCHIVE:
        return None
    meta = json_object(row.get("metadata"))
    day, time, chat = row.get("source_date"), meta.get("time"), meta.get("chat")
    if not (isinstance(day, str) and isinstance(time, str) and isinstance(chat, str)):
        return None
    return day, time, chat


def turn_marks(row: dict[str, Any]) -> Marks | None:
    """The marks of a transcript row, as its facts' block header carries them."""
    if row.get("source_type") != TRANSCRIPT:
        return None
    meta = json_object(row.get("metadata"))
    day, time, chat = row.get("source_date"), meta.get("time"), meta.get("chat")
    if not (isinstance(day, str) and isinstance(time, str) and isinstance(chat, str)):
        return None
    return day, time, block_chat(chat)


def turn_identity(row: dict[str, Any]) -> tuple[str, object]:
    """One turn's identity (its transcript and line): the chunks of a long message share it."""
    return (str(row.get("source_file")), json_object(row.get("metadata")).get("line", row.get("id")))


def said(row: dict[str, Any]) -> dict[str, Any]:
    """A turn row as a fact's ``said`` provenance: what was said, in which chat, when."""
    meta = json_object(row.get("metadata"))
    return {
        "id": row.get("id"),
        "content": row.get("content"),
        "chat": meta.get("chat"),
        "ts": meta.get("ts"),
        "source_file": row.get("source_file"),
        "line": meta.get("line"),
    }


def _best_turn(fact: dict[str, Any], turns: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The turn (of the fact's marks) the fact shares most content words with; None when it
    shares none with any (``said_overlap``)."""
    best = max(turns, key=lambda t: (said_overlap(fact["content"], t["content"]), str(t.get("id"))))
    return best if said_overlap(fact["content"], best["content"]) else None


def merge(scored: Sequence[Scored]) -> list[Scored]:
    """The candidates (best first) with each turn that a candidate fact came from folded into that
    fact, and each long message's chunks folded into its best chunk; best first again."""
    facts: dict[Marks, list[Scored]] = {}
    for s in scored:
        marks = fact_marks(s.row)
        if marks is not None:
            facts.setdefault(marks, []).append(s)
    turns: dict[Marks, list[Scored]] = {}
    for s in scored:
        marks = turn_marks(s.row)
        if marks is not None and marks in facts:
            turns.setdefault(marks, []).append(s)
    absorbed: set[tuple[str, object]] = set()  # the turns some candidate fact came from
    for marks, said_here in turns.items():
        for fact in facts[marks]:
            turn = max(
                said_here, key=lambda t: (said_overlap(fact.row["content"], t.row["content"]), -t.score)
            )
            if not said_overlap(fact.row["content"], turn.row["content"]):
                continue  # no word in common: not written from a turn of this minute
            identity = turn_identity(turn.row)
            fact.said = said(turn.row)
            # a turn's chunks are one turn: the fact takes the best score any of them has
            best = max(t.score for t in said_here if turn_identity(t.row) == identity)
            if best > fact.score:
                fact.score = best
            absorbed.add(identity)
    out: list[Scored] = []
    seen_turns: set[tuple[str, object]] = set()
    for s in sorted(scored, key=sort_key):
        if s.row.get("source_type") == TRANSCRIPT:
            identity = turn_identity(s.row)
            if identity in absorbed or identity in seen_turns:
                continue
            seen_turns.add(identity)
        out.append(s)
    return out


def said_clause(facts: Iterable[Scored]) -> str | None:
    """The where clause for the turns of the days of these facts lacking ``said`` (None: none)."""
    days = sorted({m[0] for s in facts if s.said is None and (m := fact_marks(s.row)) is not None})
    if not days:
        return None
    return f"source_type = {quote(TRANSCRIPT)} AND fact_date IN ({', '.join(quote(d) for d in days)})"


def attach_said(facts: Iterable[Scored], data: pa.Table) -> None:
    """Give each fact lacking ``said`` its turn from ``data`` (rows of ``said_clause``'s query)."""
    by_marks: dict[Marks, list[dict[str, Any]]] = {}
    for row in data.to_pylist():
        row.setdefault("source_type", TRANSCRIPT)
        marks = turn_marks(row)
        if marks is not None:
            by_marks.setdefault(marks, []).append(row)
    for s in facts:
        marks = fact_marks(s.row)
        if s.said is None and marks is not None and marks in by_marks:
            turn = _best_turn(s.row, by_marks[marks])
            if turn is not None:
                s.said = said(turn)
