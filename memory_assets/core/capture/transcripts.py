"""``transcripts/``: raw turns, one JSON object a line (existing format: ``ts`` (UTC ISO),
``role`` (``user`` | ``assistant``), ``content``, optional ``actions`` and ``meta``).

Two writers, two places, one format:

* ``transcripts/<session>.jsonl``: written by the assistant itself (suzent's own transcripts).
  The write path reads them (``write_path/ingest.py``) and never writes to them.
* ``transcripts/captured/<chat>.jsonl``: every turn that reaches the memory through the write
  path (the service's turns, MCP ``record_turn``, ``write-turn``), kept verbatim by
  ``keep_turn`` before the turn is acknowledged: the user's line, then the assistant's answer
  when there is one, in one append, fsync'd. Ingestion never reads this folder, so no turn goes
  through the write path twice. A chat id that is not a safe file name (``transcript_name``) is
  kept in each line's ``meta.chat``.

Both are the recall tier's source: the indexer plans a transcript's rows (``index/rows.py``),
every user turn of every file, whoever wrote it.

``read_turns`` reads from a byte offset and pairs each user line with the assistant lines that
follow it (already written) into a ``TranscriptTurn``; each turn has a stable id, the session and
the byte offset of its user line, so a reader can process every turn exactly once. Only complete
lines (ending in a newline) are read: a line still being written is left for the next read.
Nothing in the file is ever changed; every problem is a warning naming the file, the line and
the fix. What is kept of a bad line:

* not JSON (nested too deep included), not an object, or no ``role`` ``user`` |
  ``assistant``: the line is skipped (counted in ``skipped``).
* bytes that are not valid UTF-8: replaced by U+FFFD, the rest of the line is read, and the line
  is reported.
* a user line whose ``ts`` is missing, not a string (a number, a bool), not an ISO date-time
  (``yesterday``, ``2026-02-30``, hour 25) or outside the years 1-9999 once in UTC
  (``9999-12-31T23:00:00-05:00``), or more than a day in the future (``2099-01-01``, a clock set
  wrong: it would create that day's log, which no dream consolidates until then): the turn is
  kept and dated when it is ingested (``at`` None), and the line is reported. One bad line never
  stops a read.
* a user line whose ``content`` is not a string: the turn is kept with the text that can be
  read (a list item by item, an object by its ``text`` or ``content`` field, a number or a bool
  as written in the JSON, null as no text) and the line is reported. An assistant line's content is read the
  same way without a report: an assistant line with no text (one that only called a tool) is
  normal.
"""

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_assets.core.durable import append_durable, fsync_dir
from memory_assets.core.text import clean_text, excerpt

MAX_CONTENT_CHARS = 10_000  # the assistant caps a transcript line's content here too
# Content parts nested deeper than this are not read: real content lists are one or two deep.
MAX_CONTENT_DEPTH = 8
TS_FIX = "write ts as an ISO 8601 date-time in UTC, e.g. 2026-07-01T09:12:00Z"
UNCHANGED = "(the file was not modified)"
FUTURE_SLACK = timedelta(days=1)  # clocks of two machines, time zones: a later ts is a mistake
CAPTURED = "captured"  # transcripts/captured/: the turns the write path kept (see above)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,119}$")


@dataclass(frozen=True)
class TranscriptTurn:
    session: str
    offset: int  # byte offset of the user line: the turn's identity within its session
    end: int  # byte offset just after the last line this turn consumed
    line: int  # 1-based line number of the user line
    next_line: int  # the line number at ``end``
    user: str
    assistant: str
    at: datetime | None
    chat: str | None = None  # the chat id the line records (``meta.chat``), when it records one

    @property
    def id(self) -> str:
        return f"{self.session}:{self.offset}"

    @property
    def chat_id(self) -> str:
        """The turn's chat: what its line records, else its file's name (a suzent session)."""
        return self.chat or self.session


@dataclass
class TranscriptRead:
    turns: list[TranscriptTurn] = field(default_factory=list)
    end: int = 0  # where the next read starts
    end_line: int = 1  # the line number at ``end``
    warnings: list[str] = field(default_factory=list)  # every problem, skipped line or not
    skipped: int = 0  # lines not read at all


def list_sessions(transcripts_dir: Path) -> list[tuple[str, Path]]:
    """The assistant's own transcripts (``transcripts/*.jsonl``): what ingestion reads."""
    if not transcripts_dir.is_dir():
        return []
    return sorted((p.stem, p) for p in transcripts_dir.glob("*.jsonl") if p.is_file())


def list_transcripts(transcripts_dir: Path) -> list[tuple[str, Path]]:
    """Every transcript the recall tier indexes, as (its POSIX path under ``transcripts/``, path):
    the assistant's (``*.jsonl``) and the write path's (``captured/*.jsonl``), sorted."""
    if not transcripts_dir.is_dir():
        return []
    found = [(p.name, p) for p in transcripts_dir.glob("*.jsonl") if p.is_file()]
    captured = transcripts_dir / CAPTURED
    if captured.is_dir():
        found += [(f"{CAPTURED}/{p.name}", p) for p in captured.glob("*.jsonl") if p.is_file()]
    return sorted(found)


def transcript_name(chat_id: str) -> str:
    """The file stem a chat's captured turns go to: the chat id itself when it is a safe file name
    (letters, digits and ``._:@+-``, at most 120 characters, not starting with a dot), else
    ``chat-`` and a hash of it (the id is then kept in each line's ``meta.chat``)."""
    if _SAFE_NAME.match(chat_id):
        return chat_id
    return "chat-" + hashlib.sha256(chat_id.encode("utf-8")).hexdigest()[:24]


def captured_path(transcripts_dir: Path, chat_id: str) -> Path:
    return transcripts_dir / CAPTURED / f"{transcript_name(chat_id)}.jsonl"


def turn_lines(chat_id: str, user: str, assistant: str, at: datetime) -> str:
    """A turn's lines in the transcript format: the user's, then the assistant's when it said
    anything; ``meta.chat`` only when the file name cannot carry the chat id."""
    ts = at.astimezone(UTC).isoformat(timespec="seconds")
    meta = {"meta": {"chat": chat_id}} if transcript_name(chat_id) != chat_id else {}
    lines = [{"ts": ts, "role": "user", "content": user, **meta}]
    if assistant.strip():
        lines.append({"ts": ts, "role": "assistant", "content": assistant, **meta})
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def keep_turn(transcripts_dir: Path, chat_id: str, user: str, assistant: str, at: datetime) -> Path:
    """Append one turn, verbatim, to its chat's captured transcript, durably (one append under the
    file's writers' lock, fsync'd before this returns). Returns the file."""
    path = captured_path(transcripts_dir, chat_id)
    if not path.parent.is_dir():  # the folder's own entry is made durable too, once
        path.parent.mkdir(parents=True, exist_ok=True)
        fsync_dir(path.parent.parent)
    append_durable(path, turn_lines(chat_id, user, assistant, at))
    return path


def _timestamp(value: object) -> tuple[datetime | None, str | None]:
    """The UTC time of a ``ts`` value, or None and what is wrong with it."""
    if value is None:
        return None, "no ts"
    if not isinstance(value, str):
        return None, f"ts {excerpt(json.dumps(value), 60)} is a {_json_kind(value)}, not a string"
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None, f"ts {excerpt(value, 60)!r} is not an ISO date-time"
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    try:
        ts = ts.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:00:00-05:00 is in the year 10000 in UTC
        return None, f"ts {value!r} is outside the years 1-9999 in UTC"
    if ts > datetime.now(UTC) + FUTURE_SLACK:
        return None, f"ts {value!r} is in the future"
    return ts, None


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return {list: "list", dict: "object"}.get(type(value), type(value).__name__)


def _text_parts(value: object, depth: int = 0) -> list[str]:
    """The readable text of a ``content`` value, in order; see the module docstring."""
    if isinstance(value, str):
        return [value]
    if value is None or depth > MAX_CONTENT_DEPTH:
        return []
    if isinstance(value, bool | int | float):
        return [json.dumps(value)]
    if isinstance(value, list):
        return [part for item in value for part in _text_parts(item, depth + 1)]
    if isinstance(value, dict):
        inner = value.get("text", value.get("content"))
        return [] if isinstance(inner, dict) else _text_parts(inner, depth + 1)
    return []


def _content(value: object, cap: int | None = MAX_CONTENT_CHARS) -> tuple[str, str | None]:
    """A line's content as text (cleaned, capped at ``cap`` characters unless None), and what was
    wrong with it when not a string."""
    if isinstance(value, str):
        return clean_text(value)[:cap], None
    text = clean_text("\n".join(p for p in _text_parts(value) if p.strip()))[:cap]
    kept = (
        f"its text was read ({len(text)} characters)"
        if text.strip()
        else "it holds no text, so the turn has none"
    )
    return text, f"content is a {_json_kind(value)}, not a string: {kept}; write content as a JSON string"


def read_turns(
    path: Path, offset: int = 0, line_number: int | None = None, *, cap: int | None = MAX_CONTENT_CHARS
) -> TranscriptRead:
    """The complete turns from byte ``offset`` on. ``line_number``: the line at ``offset`` (for
    messages); counted from the start of the file when not given. ``cap``: the most characters of
    a line's content kept (the assistant's own cap; None keeps every character, as the recall tier
    indexes a turn whole)."""
    session = path.stem
    out = TranscriptRead(end=offset, end_line=line_number or 1)
    with open(path, "rb") as fh:
        if line_number is None:
            line_number = fh.read(offset).count(b"\n") + 1 if offset else 1
        fh.seek(offset)
        data = fh.read()
    rows: list[tuple[int, int, int, dict]] = []  # (start, end, line, record)
    position = offset
    complete = data.split(b"\n")[:-1]  # complete lines only
    for number, raw in enumerate(complete, start=line_number):
        start, end = position, position + len(raw) + 1
        position = end
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", "replace")
            out.warnings.append(
                f"{path} line {number}: not valid UTF-8 (byte {exc.start + 1} of the line); the invalid "
                f"bytes were read as U+FFFD. Re-save the file as UTF-8 to keep the exact text {UNCHANGED}"
            )
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested too deep to parse
            out.skipped += 1
            out.warnings.append(f"{path} line {number}: not JSON; skipped {UNCHANGED}")
            continue
        if not isinstance(record, dict) or record.get("role") not in ("user", "assistant"):
            out.skipped += 1
            out.warnings.append(f"{path} line {number}: no role 'user' or 'assistant'; skipped {UNCHANGED}")
            continue
        rows.append((start, end, number, record))
    i = 0
    while i < len(rows):
        start, end, number, record = rows[i]
        i += 1
        if record["role"] != "user":
            continue  # an assistant line with no user line before it in this read
        replies = []
        last = number
        while i < len(rows) and rows[i][3]["role"] == "assistant":
            replies.append(_content(rows[i][3].get("content"), cap)[0])
            end, last = rows[i][1], rows[i][2]
            i += 1
        user, content_problem = _content(record.get("content"), cap)
        at, ts_problem = _timestamp(record.get("ts"))
        if ts_problem:
            out.warnings.append(
                f"{path} line {number}: {ts_problem}; the turn is dated when it is ingested. "
                f"To date it, {TS_FIX} {UNCHANGED}"
            )
        if content_problem:
            out.warnings.append(f"{path} line {number}: {content_problem} {UNCHANGED}")
        out.turns.append(
            TranscriptTurn(
                session=session,
                offset=start,
                end=end,
                line=number,
                next_line=last + 1,
                user=user,
                assistant="\n".join(replies),
                at=at,
                chat=_meta_chat(record),
            )
        )
    out.end, out.end_line = position, line_number + len(complete)
    return out


def _meta_chat(record: dict[str, object]) -> str | None:
    meta = record.get("meta")
    chat = meta.get("chat") if isinstance(meta, dict) else None
    return clean_text(chat) if isinstance(chat, str) and chat.strip() else None
