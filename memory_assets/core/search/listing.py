"""Listing the index's rows with their provenance: a memory as a person (or an agent) reviews it.

``list_memories`` pages through a home's rows; ``get_memory`` reads one by id. Each ``Memory``
carries its row's fields and where it comes from (``Provenance``): the file in the home
(``memory/archive/2026-11-20.md``, ``notebook/3_Personal/Personal.md``, ``memory/MEMORY.md``),
its date, its block (a log's conversation block: ``time`` and ``chat``; a page's ``section``; a
core file's ``zone``), its tags, a page's ``status`` and ``stale_after``, whether a person
verified it, and how many times it has been stated (``confirmations``: a claim's ``(confirmed
Nx)`` marker, or 1 for a log fact, plus the restatements the write path recorded in
``.state/confirmations.jsonl`` that the dream has not folded yet).

Order: the newest fact first (``fact_date`` descending, rows without one last), then by source
file, position in the file (``chunk_index``) and id: a total order. A page ends with an opaque
``next_cursor`` (the last row's place in that order); passing it back resumes right after that
row, so a row is never listed twice and never skipped, whatever is added or removed meanwhile
(a row added before the cursor's place is not listed by the pages after it). Filters: source
types, and ``since`` / ``until`` on the fact's date, as ``search`` takes them. The recall tier's
rows (``transcript``: what was said, ``transcripts/<chat>.jsonl``) are listed only when their
type is asked for: a listing reviews what the memory holds as claims.

Tombstoned content is left out, as search leaves it out: forgetting is immediate. Reads only; an
assistant-era table raises ``LegacyTableError`` naming ``memory-assets migrate``.
"""

import base64
import binascii
import json
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date
from pathlib import Path
from typing import Any

from memory_assets.core.durable import stat_signature
from memory_assets.core.index.store import MemoryStore, id_in, quote
from memory_assets.core.knowledge.confirmations import read_confirmations
from memory_assets.core.knowledge.importance import confirmation_count
from memory_assets.core.knowledge.tombstones import Tombstones
from memory_assets.core.search.ranking import and_clauses
from memory_assets.core.search.retrieval import CLAIM_ROWS, COLUMNS, current_tombstones, where_clause
from memory_assets.core.settings import Settings
from memory_assets.core.sources import ARCHIVE, CORE_FILE, LEGACY_SOURCE_TYPE, NOTEBOOK, TRANSCRIPT
from memory_assets.core.text import json_object, normalise

DEFAULT_PAGE = 50
ROW_COLUMNS = [*COLUMNS, "created_at"]  # what search reads, and when the row was written
KEY_COLUMNS = ["id", "fact_date", "source_file", "chunk_index"]
SortKey = tuple[int, int, str, int, str]


class CursorError(ValueError):
    """A cursor this listing did not hand out (or one from another filter's listing)."""


@dataclass
class Provenance:
    file: str | None  # the file in the home, e.g. memory/archive/2026-11-20.md (None: a legacy row)
    date: str | None  # the fact's date
    block: dict[str, str] = field(default_factory=dict)  # {time, chat} | {section} | {zone}
    tags: list[str] = field(default_factory=list)
    status: str | None = None  # a page's lifecycle (draft, stable, deprecated)
    stale_after: str | None = None
    human_verified: bool = False
    confirmations: int = 1  # times stated: the claim's marker (or 1), plus pending restatements
    indexed_at: str | None = None  # when the row entered the index (UTC)


@dataclass
class Memory:
    id: str
    content: str
    source_type: str
    source_file: str | None
    source_date: str | None
    category: str | None
    importance: float
    provenance: Provenance

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MemoryPage:
    memories: list[Memory]
    next_cursor: str | None  # None: this was the last page

    def to_dict(self) -> dict[str, Any]:
        return {"memories": [m.to_dict() for m in self.memories], "next_cursor": self.next_cursor}


def list_memories(
    store: MemoryStore,
    settings: Settings,
    *,
    cursor: str | None = None,
    limit: int = DEFAULT_PAGE,
    source_types: Sequence[str] | None = None,
    since: date | None = None,
    until: date | None = None,
) -> MemoryPage:
    """Up to ``limit`` memories after ``cursor`` (None: from the first), newest fact first."""
    after = _decode(cursor) if cursor else None
    facts = store.read_facts()
    if facts is None or facts.rows == 0 or limit <= 0:
        return MemoryPage([], None)
    store.require_current("listing memories")
    where = where_clause(store, source_types, since, until, single_user=facts.single_user)
    if facts.turns and not facts.legacy and not source_types:
        where = and_clauses(where, CLAIM_ROWS)  # turns are listed when asked for by their type
    keys = store.scan(KEY_COLUMNS, where=where).to_pylist()
    ordered = sorted((sort_key(row), row["id"]) for row in keys)
    start = bisect_right(ordered, (after, "\uffff")) if after is not None else 0
    tombs = current_tombstones(settings.tombstones_path)
    pending = _pending_confirmations(settings.confirmations_path)
    out: list[Memory] = []
    last: SortKey | None = None
    position = start
    while len(out) < limit and position < len(ordered):
        window = ordered[position : position + max(limit - len(out), 16)]
        rows = {r["id"]: r for r in _rows(store, [row_id for _, row_id in window])}
        for key, row_id in window:
            position += 1
            row = rows.get(row_id)
            if row is not None and not _hidden(tombs, row):
                out.append(_memory(row, pending))
                last = key
                if len(out) == limit:
                    break
    more = position < len(ordered)
    return MemoryPage(out, _encode(last) if last is not None and more else None)


def get_memory(store: MemoryStore, settings: Settings, row_id: str) -> Memory | None:
    """The memory with this id, or None when no row has it (or its content is tombstoned)."""
    if store.read_facts() is None:
        return None
    store.require_current("reading a memory")
    rows = _rows(store, [row_id])
    if not rows or _hidden(current_tombstones(settings.tombstones_path), rows[0]):
        return None
    return _memory(rows[0], _pending_confirmations(settings.confirmations_path))


def _hidden(tombs: Tombstones, row: dict[str, Any]) -> bool:
    """Whether forgetting hides the row (a turn: whatever forgotten text it holds)."""
    if row.get("source_type") == TRANSCRIPT:
        return tombs.hides_turn(row["content"])
    return tombs.hides(row["content"])


def _rows(store: MemoryStore, ids: list[str]) -> list[dict[str, Any]]:
    if not ids:
        return []
    where = f"user_id = {quote(store.user_id)} AND {id_in(ids)}"
    return store.scan(ROW_COLUMNS, where=where).to_pylist()


def sort_key(row: dict[str, Any]) -> SortKey:
    """Newest fact first (rows without a fact date last), then file, position and id."""
    day = _day(row.get("fact_date"))
    chunk = row.get("chunk_index")
    return (
        0 if day is not None else 1,
        -day.toordinal() if day is not None else 0,
        row.get("source_file") or "",
        chunk if chunk is not None else -1,
        row["id"],
    )


def _day(value: object) -> date | None:
    try:
        return date.fromisoformat(str(value)[:10]) if value else None
    except ValueError:
        return None


def _encode(key: SortKey) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


def _decode(cursor: str) -> SortKey:
    """The sort key a cursor holds; ``CursorError`` for anything this listing did not hand out."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)
    except (binascii.Error, ValueError):
        value = None
    if (
        isinstance(value, list)
        and len(value) == 5
        and all(isinstance(v, int) and not isinstance(v, bool) for v in (value[0], value[1], value[3]))
        and all(isinstance(v, str) for v in (value[2], value[4]))
    ):
        return (value[0], value[1], value[2], value[3], value[4])
    raise CursorError(
        f"cursor {cursor[:40]!r} is not one this listing handed out; pass the next_cursor of the "
        "previous page unchanged, or leave it out to start from the first page"
    )


_PENDING: dict[str, tuple[object, Counter[tuple[str, str, str]]]] = {}


def _pending_confirmations(path: Path) -> Counter[tuple[str, str, str]]:
    """(source type, source file, normalised claim) -> restatements recorded and not yet folded;
    re-read only when the file changed."""
    sig = stat_signature(path)
    hit = _PENDING.get(str(path))
    if hit is None or hit[0] != sig:
        found, _ = read_confirmations(path) if sig is not None else ([], [])
        counts = Counter((c.source_type, c.source_file or "", normalise(c.matched)) for c in found)
        hit = (sig, counts)
        _PENDING[str(path)] = hit
    return hit[1]


def _home_file(source_type: str | None, source_file: str | None) -> str | None:
    if not source_file:
        return None
    if source_type == ARCHIVE:
        return f"memory/archive/{source_file}"
    if source_type == NOTEBOOK:
        return f"notebook/{source_file}"
    if source_type == CORE_FILE:
        return f"memory/{source_file}"
    if source_type == TRANSCRIPT:
        return f"transcripts/{source_file}"
    return None


def _memory(row: dict[str, Any], pending: Counter[tuple[str, str, str]]) -> Memory:
    meta = json_object(row.get("metadata"))
    kind = row.get("source_type") or LEGACY_SOURCE_TYPE
    source_file = row.get("source_file")
    if kind in (ARCHIVE, TRANSCRIPT):
        block = {k: str(meta[k]) for k in ("time", "chat") if meta.get(k)}
        stated = 1
    else:
        block = {k: str(meta[k]) for k in ("section", "zone") if meta.get(k)}
        stated = confirmation_count(row["content"])
    stated += pending.get((kind, source_file or "", normalise(row["content"])), 0)
    tags = meta.get("tags")
    created = row.get("created_at")
    return Memory(
        id=row["id"],
        content=row["content"],
        source_type=kind,
        source_file=source_file,
        source_date=row.get("source_date"),
        category=row.get("category"),
        importance=round(float(row["importance"]), 6) if row.get("importance") is not None else 0.5,
        provenance=Provenance(
            file=_home_file(kind, source_file),
            date=row.get("fact_date"),
            block=block,
            tags=[str(t) for t in tags] if isinstance(tags, list) else [],
            status=str(meta["status"]) if kind != ARCHIVE and meta.get("status") else None,
            stale_after=str(meta["stale_after"]) if meta.get("stale_after") else None,
            human_verified=bool(meta.get("human_verified")),
            confirmations=stated,
            indexed_at=created.replace(tzinfo=UTC).isoformat() if created is not None else None,
        ),
    )
