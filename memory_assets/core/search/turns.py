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
  the fact carries the turn as ``said``, and the best of its facts (on their own scores) takes the
  better of its score and the turn's, the others keeping theirs; the chunks of one long message
  are one hit (the best chunk), so the top k is never spent twice on one turn;
* ``said_lookup``: the final facts whose turn was not a candidate get it from one query (the turns
  of their days; ``fact_date`` is indexed), so every fact that came from a kept turn says so.

Reads only.
"""

import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memory_assets.core.capture.daily_log import block_chat
from memory_assets.core.index.store import quote
from memory_assets.core.knowledge.claims import said_overlap
from memory_assets.core.search.ranking import Scored, sort_key
from memory_assets.core.sources import ARCHIVE, TRANSCRIPT
from memory_assets.core.text import json_object

Marks = tuple[str, str, str]  # (day, HH:MM, the chat as a block header carries it)
SAID_COLUMNS = ["id", "content", "source_file", "source_date", "metadata"]
_block_chat = lru_cache(maxsize=4096)(block_chat)  # one chat id's header form, computed once


def fact_marks(row: dict[str, Any], meta: dict[str, Any] | None = None) -> Marks | None:
    """The marks of a daily-log fact row (None for any other row, or one without a block).
    ``meta``: the row's metadata, when the caller has parsed it already."""
    return _marks(row, ARCHIVE, meta)


def turn_marks(row: dict[str, Any], meta: dict[str, Any] | None = None) -> Marks | None:
    """The marks of a transcript row, as its facts' block header carries them."""
    marks = _marks(row, TRANSCRIPT, meta)
    return None if marks is None else (marks[0], marks[1], _block_chat(marks[2]))


def _marks(row: dict[str, Any], source_type: str, meta: dict[str, Any] | None) -> Marks | None:
    """The day, time and chat a row of ``source_type`` records (None for another row, or one
    missing any of them)."""
    if row.get("source_type") != source_type:
        return None
    meta = json_object(row.get("metadata")) if meta is None else meta
    day, time, chat = row.get("source_date"), meta.get("time"), meta.get("chat")
    if not (isinstance(day, str) and isinstance(time, str) and isinstance(chat, str)):
        return None
    return day, time, chat


def turn_identity(row: dict[str, Any], meta: dict[str, Any] | None = None) -> tuple[str, object]:
    """One turn's identity (its transcript and line): the chunks of a long message share it."""
    meta = json_object(row.get("metadata")) if meta is None else meta
    return (str(row.get("source_file")), meta.get("line", row.get("id")))


def said(row: dict[str, Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A turn row as a fact's ``said`` provenance: what was said, in which chat, when."""
    meta = json_object(row.get("metadata")) if meta is None else meta
    return {
        "id": row.get("id"),
        "content": row.get("content"),
        "chat": meta.get("chat"),
        "ts": meta.get("ts"),
        "source_file": row.get("source_file"),
        "line": meta.get("line"),
    }


def _best_turn(
    fact: dict[str, Any], turns: Sequence[tuple[dict[str, Any], dict[str, Any]]]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The turn (of the fact's marks; each with its parsed metadata) the fact shares most content
    words with; None when it shares none with any (``said_overlap``)."""
    best = max(turns, key=lambda t: (said_overlap(fact["content"], t[0]["content"]), str(t[0].get("id"))))
    return best if said_overlap(fact["content"], best[0]["content"]) else None


def merge(scored: Sequence[Scored]) -> list[Scored]:
    """The candidates (best first) with each turn that a candidate fact came from folded into that
    fact, and each long message's chunks folded into its best chunk; best first again.

    Each row's metadata is parsed once, a fact's only when a turn candidate is of its day."""
    identity: dict[int, tuple[str, object]] = {}  # a turn candidate's identity, by id(Scored)
    turns_at: dict[Marks, list[tuple[Scored, dict[str, Any]]]] = {}  # every turn candidate by marks
    for s in scored:
        if s.row.get("source_type") == TRANSCRIPT:
            meta = json_object(s.row.get("metadata"))
            identity[id(s)] = turn_identity(s.row, meta)
            marks = turn_marks(s.row, meta)
            if marks is not None:
                turns_at.setdefault(marks, []).append((s, meta))
    days = {marks[0] for marks in turns_at}
    facts: dict[Marks, list[Scored]] = {}  # the facts of a turn candidate's marks
    for s in scored:
        if s.row.get("source_type") == ARCHIVE and s.row.get("source_date") in days:
            marks = fact_marks(s.row)
            if marks is not None and marks in turns_at:
                facts.setdefault(marks, []).append(s)
    # The turns some candidate fact came from, each with the best score any of its chunks has
    # and the fact that takes it.
    absorbed: dict[tuple[str, object], tuple[float, Scored]] = {}
    for marks, said_here in turns_at.items():  # in the order of each marks' first turn candidate
        for fact in facts.get(marks, ()):
            content = fact.row["content"]
            turn, meta = max(
                said_here, key=lambda t: (said_overlap(content, t[0].row["content"]), -t[0].score)
            )
            if not said_overlap(content, turn.row["content"]):
                continue  # no word in common: not written from a turn of this minute
            its = identity[id(turn)]
            fact.said = said(turn.row, meta)
            taker = absorbed.get(its)
            if taker is None:
                best = max(t.score for t, _ in said_here if identity[id(t)] == its)
                absorbed[its] = (best, fact)
            elif sort_key(fact) < sort_key(taker[1]):
                absorbed[its] = (taker[0], fact)
    # A turn's match lifts one of its facts, the best on its own: a turn that gave five facts is
    # one hit, not five at the turn's score (the others keep their own scores and their ``said``).
    for best, fact in absorbed.values():
        if best > fact.score:
            fact.score = best
    out: list[Scored] = []
    seen_turns: set[tuple[str, object]] = set()
    for s in sorted(scored, key=sort_key):
        its = identity.get(id(s))
        if its is not None:
            if its in absorbed or its in seen_turns:
                continue
            seen_turns.add(its)
        out.append(s)
    return out


def said_clause(facts: Iterable[Scored]) -> str | None:
    """The where clause for the turns of the days of these facts lacking ``said`` (None: none)."""
    days = sorted({m[0] for s in facts if s.said is None and (m := fact_marks(s.row)) is not None})
    if not days:
        return None
    return f"source_type = {quote(TRANSCRIPT)} AND fact_date IN ({', '.join(quote(d) for d in days)})"


def attach_said(facts: Iterable[Scored], data: pa.Table) -> None:
    """Give each fact lacking ``said`` its turn from ``data`` (rows of ``said_clause``'s query).

    Only the rows whose metadata holds one of those facts' times as a JSON string (``"HH:MM"``, as
    the metadata of every turn of that minute holds it) are read into Python: the query returns
    every turn of the facts' days."""
    wanting = [(s, marks) for s in facts if s.said is None and (marks := fact_marks(s.row)) is not None]
    if not wanting or data.num_rows == 0:
        return
    metadata = data.column("metadata")
    holds = None
    for time in sorted({marks[1] for _, marks in wanting}):  # as plan_transcript writes it
        found = pc.match_substring(metadata, json.dumps(time, ensure_ascii=False))
        holds = found if holds is None else pc.or_(holds, found)
    data = data.filter(pc.fill_null(holds, False))
    by_marks: dict[Marks, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for row in data.to_pylist():
        row.setdefault("source_type", TRANSCRIPT)
        meta = json_object(row.get("metadata"))
        marks = turn_marks(row, meta)
        if marks is not None:
            by_marks.setdefault(marks, []).append((row, meta))
    for s, marks in wanting:
        if marks in by_marks:
            found = _best_turn(s.row, by_marks[marks])
            if found is not None:
                s.said = said(*found)
