"""``transcripts/<session>.jsonl``: the assistant's raw turns, one JSON object a line (existing
format: ``ts`` (UTC ISO), ``role`` (``user`` | ``assistant``), ``content``, optional ``actions``
and ``meta``).

``read_turns`` reads from a byte offset and pairs each user line with the assistant lines that
follow it (already written) into a ``TranscriptTurn``; each turn has a stable id, the session and
the byte offset of its user line, so a reader can process every turn exactly once. Only complete
lines (ending in a newline) are read: a line still being written is left for the next read. A
line that is not JSON, not an object, or has no ``role`` is skipped and reported with its file
and line number; nothing in the file is changed.
"""

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memory_assets.core.text import clean_text

MAX_CONTENT_CHARS = 10_000  # the assistant caps a transcript line's content here too


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

    @property
    def id(self) -> str:
        return f"{self.session}:{self.offset}"


@dataclass
class TranscriptRead:
    turns: list[TranscriptTurn] = field(default_factory=list)
    end: int = 0  # where the next read starts
    end_line: int = 1  # the line number at ``end``
    warnings: list[str] = field(default_factory=list)


def list_sessions(transcripts_dir: Path) -> list[tuple[str, Path]]:
    if not transcripts_dir.is_dir():
        return []
    return sorted((p.stem, p) for p in transcripts_dir.glob("*.jsonl") if p.is_file())


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def read_turns(path: Path, offset: int = 0, line_number: int | None = None) -> TranscriptRead:
    """The complete turns from byte ``offset`` on. ``line_number``: the line at ``offset`` (for
    messages); counted from the start of the file when not given."""
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
            record = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            out.warnings.append(f"{path} line {number}: not JSON; skipped (the file was not modified)")
            continue
        if not isinstance(record, dict) or record.get("role") not in ("user", "assistant"):
            out.warnings.append(
                f"{path} line {number}: no role 'user' or 'assistant'; skipped (the file was not modified)"
            )
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
            replies.append(clean_text(rows[i][3].get("content"))[:MAX_CONTENT_CHARS])
            end, last = rows[i][1], rows[i][2]
            i += 1
        out.turns.append(
            TranscriptTurn(
                session=session,
                offset=start,
                end=end,
                line=number,
                next_line=last + 1,
                user=clean_text(record.get("content"))[:MAX_CONTENT_CHARS],
                assistant="\n".join(replies),
                at=_timestamp(record.get("ts")),
            )
        )
    out.end, out.end_line = position, line_number + len(complete)
    return out
