"""The capture tier's format: ``archive/YYYY-MM-DD.md`` daily logs (append-only).

Compatible with existing users' files (design §4.1)::

    # Daily Log - 2026-07-01

    ## 09:12 — 5c1e0a9f

    - [preference] Prefers metric units in all answers `units metric`

A fact line is ``- [category] content`` plus, only when there are tags, a space and the
space-joined tags inside one pair of backticks. The writer sanitises what the line format
cannot carry (newlines, a ``]`` in a category, whitespace inside a tag, content that itself ends
in a backtick span, a chat id that is not one word) so that everything it writes parses back to
exactly what it wrote.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from memory_assets.core.durable import append_durable
from memory_assets.core.text import clean_text
from memory_assets.core.textfile import read_text

FACT_RE = re.compile(r"^-\s*\[([^\]]+)\]\s*(.*)$")
TAGS_RE = re.compile(r"`([^`]*)`\s*$")
BLOCK_RE = re.compile(r"^##\s+(\d{2}:\d{2})\s+[—-]\s+(\S+)\s*$")
LOG_NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
DEFAULT_CATEGORY = "general"
REVISION_TAG = "revision"


@dataclass(frozen=True)
class LogFact:
    """One fact line of a daily log."""

    content: str
    category: str = DEFAULT_CATEGORY
    tags: tuple[str, ...] = ()
    line: int = 0
    time: str | None = None
    chat: str | None = None


@dataclass
class ParsedLog:
    facts: list[LogFact] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped_lines: int = 0


def log_date(path: Path) -> date | None:
    """The day a log file holds, from its ``YYYY-MM-DD.md`` name; None for any other file."""
    m = LOG_NAME_RE.match(path.name)
    if not m:
        return None
    try:
        return date.fromisoformat(m.group(1))
    except ValueError:
        return None


def parse_fact_line(stripped: str) -> LogFact | None:
    m = FACT_RE.match(stripped)
    if not m:
        return None
    category = m.group(1).strip() or DEFAULT_CATEGORY
    rest = m.group(2)
    tags: tuple[str, ...] = ()
    tm = TAGS_RE.search(rest)
    if tm:
        tags = tuple(tm.group(1).split())
        rest = rest[: tm.start()]
    content = rest.strip()
    if not content:
        return None
    return LogFact(content=content, category=category, tags=tags)


def parse_daily_log(text: str, name: str = "<log>") -> ParsedLog:
    """Parse a daily log. Never raises: a line that cannot be read is skipped with a warning."""
    out = ParsedLog()
    time: str | None = None
    chat: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            bm = BLOCK_RE.match(stripped)
            if bm:
                time, chat = bm.group(1), bm.group(2)
            continue
        fact = parse_fact_line(stripped)
        if fact is None:
            out.skipped_lines += 1
            out.warnings.append(
                f"{name} line {number}: not a fact line, skipped ({stripped[:60]!r}); a fact line reads "
                "'- [category] content' with optional `tags`. The file was not modified."
            )
            continue
        out.facts.append(LogFact(fact.content, fact.category, fact.tags, line=number, time=time, chat=chat))
    return out


def read_daily_log(path: Path, name: str | None = None) -> ParsedLog:
    ft = read_text(path, name)
    parsed = parse_daily_log(ft.text, name or str(path))
    parsed.warnings[:0] = ft.warnings
    return parsed


def _clean(text: str) -> str:
    """One line of valid UTF-8 text: lone surrogates replaced, control characters and runs of
    whitespace (newlines included) folded to single spaces."""
    return " ".join(clean_text(text).split())


def sanitise_fact(content: str, category: str | None = None, tags: Iterable[str] = ()) -> LogFact:
    """What the line format can carry of a fact: one line, a bracket-free category, word tags."""
    clean_content = _clean(content)
    clean_category = _clean((category or "").replace("]", " ").replace("[", " ")) or DEFAULT_CATEGORY
    clean_tags = tuple(t for t in ("-".join(tag.replace("`", " ").split()) for tag in tags) if t)
    return LogFact(content=clean_content, category=clean_category, tags=clean_tags)


def format_fact_line(fact: LogFact) -> str:
    """The line for one fact. Raises ValueError for a fact with no content."""
    clean = sanitise_fact(fact.content, fact.category, fact.tags)
    if not clean.content:
        raise ValueError("a fact needs non-empty content")
    line = f"- [{clean.category}] {clean.content}"
    if clean.tags:
        line += " `" + " ".join(clean.tags) + "`"
    elif TAGS_RE.search(clean.content):
        # Content that ends in a backtick span would be read back as tags; an empty tag group
        # keeps it content (the existing parser reads the same: no tags).
        line += " ``"
    return line


@dataclass(frozen=True)
class LogBlock:
    """One conversation block, exactly as it is appended to its day's log."""

    day: date
    text: str  # the block: a blank line, ``## HH:MM — chat``, a blank line, the fact lines

    @property
    def filename(self) -> str:
        return f"{self.day.isoformat()}.md"

    @property
    def header(self) -> str:
        """The log's H1, written first when the log is new or empty."""
        return f"# Daily Log - {self.day.isoformat()}\n"


def format_block(chat_id: str, facts: Iterable[LogFact], now: datetime | None = None) -> LogBlock | None:
    """The block for one conversation turn on ``now``'s UTC day; None when no fact has content."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    lines = [format_fact_line(f) for f in facts if _clean(f.content)]
    if not lines:
        return None
    day = now.date()
    text = f"\n## {now:%H:%M} — {block_chat(chat_id)}\n\n" + "\n".join(lines) + "\n"
    return LogBlock(day, text)


def block_chat(chat_id: str) -> str:
    """The chat id as a block header carries it: one word of at most 8 characters. Control
    characters, line breaks and whitespace become ``-``, so no chat id can end the header's line
    (and start a fact line of its own) or fail ``BLOCK_RE``; an id with nothing left is
    ``default``."""
    return "-".join(_clean(chat_id).split())[:8] or "default"


def append_block(archive_dir: Path, block: LogBlock) -> Path:
    """Append ``block`` to its day's log (creating the log with its H1 if new): append-only and
    durable, under the log's writers' lock, fsync'd before this returns; never rewritten."""
    archive_dir.mkdir(parents=True, exist_ok=True)
    path = archive_dir / block.filename
    append_durable(path, block.text, header=block.header)
    return path


def append_facts(
    archive_dir: Path, chat_id: str, facts: Iterable[LogFact], now: datetime | None = None
) -> Path | None:
    """Append one conversation block to today's (UTC) log, or ``now``'s day; create the log with
    its H1 if new. Returns the log's path, or None when there was nothing to write."""
    block = format_block(chat_id, facts, now)
    return append_block(archive_dir, block) if block is not None else None


def list_logs(archive_dir: Path) -> list[tuple[date, Path]]:
    """The daily logs in ``archive_dir``, oldest first (files not named ``YYYY-MM-DD.md`` are ignored)."""
    if not archive_dir.is_dir():
        return []
    found = []
    for path in archive_dir.glob("????-??-??.md"):
        day = log_date(path)
        if day is not None and path.is_file():
            found.append((day, path))
    return sorted(found)
