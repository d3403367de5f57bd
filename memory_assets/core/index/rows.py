"""What the index should hold for one source file: a pure function of the markdown.

``plan_archive`` / ``plan_page`` / ``plan_core_file`` / ``plan_transcript`` turn a file (plus the tombstones, the fold
ledger and today's date) into ``IndexRow`` objects with deterministic ids. The indexer diffs
these against the table; the sensors digest them to decide whether anything needs a run. Both
therefore agree, by construction, on what "changed" means.

A file that cannot be read (permissions, an I/O error) gives an ``unreadable`` plan with a
warning naming it and the fix: the indexer leaves that file's rows as they are, so one unreadable
page or log never stops a sweep and never takes its facts out of the index.
"""

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TypeVar

from memory_assets.core.capture.daily_log import ParsedLog, read_daily_log
from memory_assets.core.capture.transcripts import read_turns
from memory_assets.core.knowledge.chunking import (
    chunk_claims,
    chunk_paragraphs,
    chunk_sections,
    parse_page,
    split_memory_md,
)
from memory_assets.core.knowledge.folds import FileFolds
from memory_assets.core.knowledge.importance import BASE_IMPORTANCE, Lifecycle, chunk_importance
from memory_assets.core.knowledge.personal_pages import is_personal
from memory_assets.core.knowledge.tombstones import Tombstones
from memory_assets.core.knowledge.vault import leads_outside, outside_link_warning
from memory_assets.core.sources import ARCHIVE, CORE_FILE, CORE_FILES, NOTEBOOK, TRANSCRIPT, IndexKey
from memory_assets.core.text import normalise, sha256_text, stable_id
from memory_assets.core.textfile import read_text

# An exported legacy fact appended below the watermark's day carries ``legacy`` and
# ``from-YYYY-MM-DD`` (its original day): its fact_date is that day, its source_date the log's.
LEGACY_TAG = "legacy"
FROM_TAG_PREFIX = "from-"
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
# The recall tier's unit (design §5.5): one row per user message, with its date; a message longer
# than TURN_CHUNK_WORDS is cut into windows of that many words overlapping by TURN_CHUNK_OVERLAP
# (the model reads about 200 words of a text and ignores the rest). Importance 0.3, the
# assistant's own for transcript rows: a turn is what was said, a fact is a claim.
TURN_IMPORTANCE = 0.3
TURN_CHUNK_WORDS = 120
TURN_CHUNK_OVERLAP = 30
TURN_CHUNK_CHARS = 2000  # ... and no row holds more characters than this (a "word" can be huge)
TURN_CATEGORY = "transcript"
# Words of the assistant's answer embedded with a message (0: the message alone).
TURN_CONTEXT_WORDS = 0


@dataclass(frozen=True)
class IndexRow:
    """One row of ``archival_memories`` before embedding."""

    id: str
    content: str
    source_type: str
    source_file: str
    chunk_index: int
    category: str
    importance: float
    source_date: str | None
    fact_date: str | None
    metadata: str  # JSON text, compatible with the assistant's ``metadata`` column
    # What the model embeds, when it is not ``content`` (a turn embedded with its context); the id
    # is derived from it, so a change of it is a new row. Not stored: the file gives it again.
    embed_text: str | None = None

    @property
    def embedded(self) -> str:
        return self.content if self.embed_text is None else self.embed_text

    def scalars(self) -> tuple[object, ...]:
        """Everything the row stores except its vector and timestamps (what a diff compares)."""
        return (
            self.content,
            self.source_type,
            self.source_file,
            self.chunk_index,
            self.category,
            round(self.importance, 6),
            self.source_date,
            self.fact_date,
            self.metadata,
        )


@dataclass
class FilePlan:
    """The rows one source file should produce, and what reading it reported."""

    label: str
    filename: str
    source_type: str
    rows: list[IndexRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped_lines: int = 0
    tombstoned: int = 0
    lines_hidden: int = 0  # lines of kept chunks left out: they hold a forgotten text
    exists: bool = True
    folded: int = 0  # fact lines a vault page holds (the fold ledger says so): no rows for them
    expired: int = 0  # turns older than the recall tier's retention: no rows for them
    unreadable: bool = False  # the file is there but could not be read: its rows stay as they are

    def digest(self) -> str:
        """A content hash of the planned rows: equal digests mean equal index contents.
        Computed once, when planning is complete (the sweep and the state both ask for it)."""
        return self._digest

    @property
    def key(self) -> str:
        return str(IndexKey(self.label, self.filename))

    @cached_property
    def _digest(self) -> str:
        return sha256_text(json.dumps([[r.id, *r.scalars()] for r in self.rows], ensure_ascii=False))


_Read = TypeVar("_Read")


def _read(plan: FilePlan, path: Path, label: str, read: Callable[[Path, str], _Read]) -> _Read | None:
    """``read(path, label)``; None, with ``plan`` saying why, when the file is missing (``exists``
    False) or cannot be read (``unreadable``, a warning naming ``label`` and the fix): the plan is
    then complete as it is."""
    if not path.is_file():
        plan.exists = False
        return None
    try:
        return read(path, label)
    except OSError as exc:
        plan.unreadable = True
        plan.warnings = [
            f"{label}: cannot be read ({exc.strerror or exc}); its index rows are left as they were "
            "until it can be. Fix: make the file readable by the user running memory-assets (e.g. "
            "chmod u+r), then run `memory-assets reindex`."
        ]
        return None


def _occurrence_ids(source_type: str, source_file: str, texts: list[str]) -> list[str]:
    """Ids from (source, normalised content, occurrence): repeats of a line get distinct ids."""
    seen: Counter[str] = Counter()
    ids = []
    for text in texts:
        norm = normalise(text)
        ids.append(stable_id(source_type, source_file, norm, seen[norm]))
        seen[norm] += 1
    return ids


def legacy_fact_date(tags: tuple[str, ...] | list[str]) -> date | None:
    """The original day of an exported legacy fact: its ``from-YYYY-MM-DD`` tag, honoured only
    beside the ``legacy`` tag (so an ordinary tag that happens to read ``from-...`` changes nothing)."""
    if LEGACY_TAG not in tags:
        return None
    for tag in tags:
        value = tag.removeprefix(FROM_TAG_PREFIX)
        if tag.startswith(FROM_TAG_PREFIX) and _ISO_DAY.fullmatch(value):
            try:
                return date.fromisoformat(value)
            except ValueError:
                continue
    return None


def plan_archive(
    path: Path, day: date, tombstones: Tombstones, folds: FileFolds | None, parsed: ParsedLog | None = None
) -> FilePlan:
    """Rows for one daily log: one per fact, minus tombstoned ones and the lines the fold ledger
    says a vault page holds (design §5.5: consolidated means folded, line by line). ``parsed``:
    the log as the caller already read it (it is read here otherwise)."""
    filename = f"{day.isoformat()}.md"
    plan = FilePlan("archive", filename, ARCHIVE)
    if parsed is None:
        parsed = _read(plan, path, f"archive/{filename}", read_daily_log)
        if parsed is None:
            return plan
    plan.warnings, plan.skipped_lines = parsed.warnings, parsed.skipped_lines
    facts = [f for f in parsed.facts if not tombstones.hides(f.content)]
    plan.tombstoned = len(parsed.facts) - len(facts)
    if folds is not None:
        kept = [f for f in facts if not folds.folded(f.line)]
        plan.folded, facts = len(facts) - len(kept), kept
    ids = _occurrence_ids(ARCHIVE, filename, [f.content for f in facts])
    for fact, row_id in zip(facts, ids, strict=True):
        original = legacy_fact_date(fact.tags)
        meta = {
            "source_type": ARCHIVE,
            "source_file": filename,
            "category": fact.category,
            "tags": list(fact.tags),
        }
        if fact.time:
            meta["time"] = fact.time
        if fact.chat:
            meta["chat"] = fact.chat
        plan.rows.append(
            IndexRow(
                id=row_id,
                content=fact.content,
                source_type=ARCHIVE,
                source_file=filename,
                chunk_index=fact.line,
                category=fact.category,
                importance=BASE_IMPORTANCE,
                source_date=day.isoformat(),
                fact_date=(original or day).isoformat(),
                metadata=json.dumps(meta, ensure_ascii=False),
            )
        )
    return plan


def _mtime_date(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).date().isoformat()


def _chunk_rows(
    plan: FilePlan,
    chunks: list[tuple[str, Lifecycle, dict[str, object]]],
    category: str,
    fact_date: str,
    tombstones: Tombstones,
    today: date,
) -> None:
    # A chunk a tombstone names goes whole; one that holds a forgotten text among other lines is
    # served without those lines (``Tombstones.strip``), so the rest stays findable.
    kept: list[tuple[str, Lifecycle, dict[str, object]]] = []
    for text, lc, extra in chunks:
        if tombstones.hides_whole(text):
            plan.tombstoned += 1
            continue
        text, gone = tombstones.strip(text)
        if not text.strip():
            plan.tombstoned += 1
            continue
        plan.lines_hidden += gone
        kept.append((text, lc, extra))
    ids = _occurrence_ids(plan.source_type, plan.filename, [text for text, _, _ in kept])
    for index, ((text, lifecycle, extra), row_id) in enumerate(zip(kept, ids, strict=True)):
        meta: dict[str, object] = {
            "source_type": plan.source_type,
            "source_file": plan.filename,
            "chunk_index": index,
        }
        meta.update(extra)
        meta["status"] = lifecycle.status
        if lifecycle.stale_after:
            meta["stale_after"] = lifecycle.stale_after.isoformat()
        if lifecycle.human_verified:
            meta["human_verified"] = True
        plan.rows.append(
            IndexRow(
                id=row_id,
                content=text,
                source_type=plan.source_type,
                source_file=plan.filename,
                chunk_index=index,
                category=category,
                importance=chunk_importance(text, lifecycle, today),
                source_date=None,
                fact_date=fact_date,
                metadata=json.dumps(meta, ensure_ascii=False, default=str),
            )
        )


def plan_page(vault: Path, rel: str, tombstones: Tombstones, today: date) -> FilePlan:
    """Rows for one vault page: paragraph chunks of its body (one claim a row on ``3_Personal/``
    pages); importance from its lifecycle and each chunk's confirmation count."""
    plan = FilePlan("notebook", rel, NOTEBOOK)
    path = vault / rel
    if leads_outside(vault, path):  # no row, and rows it had are deleted: the file is not the vault's
        plan.exists = False
        plan.warnings = [outside_link_warning(f"notebook/{rel}", path)]
        return plan
    ft = _read(plan, path, f"notebook/{rel}", read_text)
    if ft is None:
        return plan
    page = parse_page(ft.text, f"notebook/{rel}")
    plan.warnings = ft.warnings + page.warnings
    category = page.category or "notebook"
    extra: dict[str, object] = {"label": "notebook", "category": category, "tags": ["notebook", rel]}
    # A personal page holds one claim a bullet (the dream's format): one row a claim.
    split = chunk_claims if is_personal(rel) else chunk_paragraphs
    texts = split(page.body)
    # Each chunk's section (its heading), so a search's context stays within the section.
    chunks = [
        (c, page.lifecycle, {**extra, "section": section})
        for c, section in zip(texts, chunk_sections(page.body, texts), strict=True)
    ]
    fact_date = page.updated.isoformat() if page.updated else _mtime_date(path)
    _chunk_rows(plan, chunks, category, fact_date, tombstones, today)
    return plan


def plan_core_file(path: Path, tombstones: Tombstones, today: date) -> FilePlan:
    """Rows for persona.md, user.md or MEMORY.md (MEMORY.md chunked per zone)."""
    filename = path.name
    label = CORE_FILES[filename]
    plan = FilePlan(label, filename, CORE_FILE)
    ft = _read(plan, path, f"memory/{filename}", read_text)
    if ft is None:
        return plan
    plan.warnings = list(ft.warnings)
    base = {"label": label, "category": CORE_FILE, "tags": ["core_memory", label, filename]}
    chunks: list[tuple[str, Lifecycle, dict[str, object]]] = []
    if filename == "MEMORY.md":
        for zone in split_memory_md(ft.text):
            lifecycle = Lifecycle(human_verified=zone.human_verified)
            chunks += [(c, lifecycle, {**base, "zone": zone.name}) for c in chunk_paragraphs(zone.text)]
    else:
        chunks = [(c, Lifecycle(), base) for c in chunk_paragraphs(ft.text)]
    _chunk_rows(plan, chunks, CORE_FILE, _mtime_date(path), tombstones, today)
    return plan


def turn_chunks(text: str, words: int = TURN_CHUNK_WORDS, overlap: int = TURN_CHUNK_OVERLAP) -> list[str]:
    """A message as the recall tier's rows hold it: whole (stripped) up to ``words`` words, else
    windows of ``words`` words, each starting ``words - overlap`` after the last, the last window
    ending with the message; a window over ``TURN_CHUNK_CHARS`` characters is cut into pieces of
    that many."""
    parts = text.split()
    if len(parts) <= words:
        windows = [text.strip()] if parts else []
    else:
        step = max(words - overlap, 1)
        starts = list(range(0, len(parts) - words, step)) + [len(parts) - words]
        windows = [" ".join(parts[i : i + words]) for i in dict.fromkeys(starts)]
    limit = TURN_CHUNK_CHARS
    return [w[i : i + limit] for w in windows for i in range(0, len(w), limit)]


def plan_transcript(
    path: Path,
    rel: str,
    tombstones: Tombstones,
    today: date,
    retention_days: int = 0,
    context_words: int | None = None,
) -> FilePlan:
    """Rows for one transcript (``rel``: its path under ``transcripts/``): the recall tier. One row
    per user message (chunked when long, ``turn_chunks``), dated by the turn's ``ts``; the
    assistant's lines are not rows. A turn a person's tombstone hides (``Tombstones.hides_turn``)
    gives none, nor does a turn older than ``retention_days`` (0: kept as long as the file holds
    it). Ids come from (the file, the embedded text, its occurrence), as a log's do, so an appended
    turn is the only row a reindex embeds. ``context_words`` (default ``TURN_CONTEXT_WORDS``): that
    many words of the assistant's answer are embedded after the message (the row's content stays
    the message)."""
    context_words = TURN_CONTEXT_WORDS if context_words is None else context_words
    plan = FilePlan("transcript", rel, TRANSCRIPT)
    read = _read(plan, path, f"transcripts/{rel}", lambda file, _label: read_turns(file, cap=None))
    if read is None:
        return plan
    plan.warnings, plan.skipped_lines = read.warnings, read.skipped
    oldest = today - timedelta(days=retention_days) if retention_days > 0 else None
    kept: list[tuple[str, str | None, dict[str, object], str | None]] = []
    for turn in read.turns:
        chunks = turn_chunks(turn.user)
        if not chunks:
            continue
        day = turn.at.date() if turn.at else None
        if oldest is not None and day is not None and day < oldest:
            plan.expired += 1
            continue
        if tombstones.hides_turn(turn.user):
            plan.tombstoned += 1
            continue
        meta: dict[str, object] = {
            "source_type": TRANSCRIPT,
            "source_file": rel,
            "chat": turn.chat_id,
            "line": turn.line,
        }
        if turn.at:
            meta["ts"] = turn.at.isoformat(timespec="seconds")
            meta["time"] = f"{turn.at:%H:%M}"
        answer = " ".join(turn.assistant.split()[:context_words]) if context_words > 0 else ""
        for number, chunk in enumerate(chunks):
            extra = {**meta, "chunk": number, "chunks": len(chunks)} if len(chunks) > 1 else meta
            embed = f"{chunk}\n{answer}" if answer else None
            kept.append((chunk, embed, extra, day.isoformat() if day else None))
    ids = _occurrence_ids(TRANSCRIPT, rel, [embed or text for text, embed, _, _ in kept])
    for ordinal, ((text, embed, meta, day_text), row_id) in enumerate(zip(kept, ids, strict=True)):
        plan.rows.append(
            IndexRow(
                id=row_id,
                content=text,
                source_type=TRANSCRIPT,
                source_file=rel,
                chunk_index=ordinal,
                category=TURN_CATEGORY,
                importance=TURN_IMPORTANCE,
                source_date=day_text,
                fact_date=day_text,
                metadata=json.dumps(meta, ensure_ascii=False),
                embed_text=embed,
            )
        )
    return plan
