"""MEMORY.md's writers, zone-safe (invariant 6: only the generated zone is generated).

The reader side is ``chunking.split_memory_md``; every writer here locates the zones by the same
rule, so what a writer replaces is exactly what the indexer calls generated:

* marked file: the generated zone lies between the first ``<!-- /memory:generated -->`` and the
  first ``<!-- memory:generated -->`` before it (only the closing marker: everything before it);
  everything else is manual;
* no closing marker, but the old generator's signature (``# Long-term Memory`` header and
  ``*Last updated: ... UTC*`` footer): the whole file is generated;
* anything else is entirely manual (a file we cannot prove we wrote).

Writers:

* ``write_generated_zone``: replaces the generated zone only; the bytes before the opening marker
  and from the closing marker on are copied through byte for byte (odd bytes, CRLF, trailing
  whitespace included). An old-signature file becomes a marked file; a missing or blank file is
  created marked; an entirely manual file is refused (a result, not an error). Human
  verification stamps and zone markers in the generated body are stripped, so a generator can
  neither forge a stamp nor close the zone early and write into the manual zone.
* ``stamp_human_edit``: a person's edit: the manual zone becomes the given text under a fresh
  ``<!-- verified: human:<id> at <ISO ts> -->`` stamp; the generated zone is untouched.
* ``refresh_from_index``: the legacy per-turn writer, deterministic: the top archival rows of the
  index by importance then recency, one bullet per fact grouped by category. It stands down once
  the vault has any ``3_Personal/`` page (the dream's promoter owns the zone then).

Every write is a read-modify-write under ``file_lock(path)`` through ``write_atomic``.
"""

import re
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.knowledge.chunking import (
    GENERATED_CLOSE,
    GENERATED_OPEN,
    HUMAN_STAMP_RE,
    OLD_GENERATOR_FOOTER,
    OLD_GENERATOR_HEADER,
)
from memory_assets.core.knowledge.personal_pages import PERSONAL_DIR, as_date
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.text import json_object, normalise

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from memory_assets.core.index.store import MemoryStore
    from memory_assets.core.settings import Settings

OPEN_B = GENERATED_OPEN.encode("ascii")
CLOSE_B = GENERATED_CLOSE.encode("ascii")
REFRESH_GENERATOR = "refresh_from_index"
DEFAULT_MAX_LINES = 50
RECENT_WINDOWS = (30, 365)  # days the per-turn refresh reads first, before the whole table
MAX_FACT_CHARS = 500
# Any HTML comment that claims a human verification, however spaced or cased: broader than
# HUMAN_STAMP_RE (what the reader honours), so no variant survives in a generated body.
_CLAIMED_STAMP = re.compile(r"<!--(?:(?!-->).)*?verified\s*:\s*human\s*:(?:(?!-->).)*?-->", re.I | re.S)
_WHO = re.compile(r"[A-Za-z0-9_.@+-]{1,64}")
# Section order and titles of the built-in list (the extractor's categories, then general).
CATEGORY_TITLES = {
    "personal": "Profile",
    "preference": "Preferences",
    "goal": "Goals",
    "technical": "Technical",
    "context": "Context",
    "interaction": "Interaction",
    "general": "General",
}
# Rows the refresh never lists: vault chunks are paragraphs, not facts, and core-file rows
# include MEMORY.md's own (feeding the zone back into itself).
_NOT_FACTS = ("notebook", "core_file")


@dataclass(frozen=True)
class MemoryMdResult:
    """What a writer did. ``written`` is False for a refusal, a stand-down or no change: none is
    an error, and ``reason`` says which for the caller to report."""

    written: bool
    reason: str
    path: Path
    # created | replaced | marked (old signature) | unchanged | refused | stood_down | no_index
    outcome: str
    generator: str = ""
    stripped: int = 0  # stamps or zone markers removed from a generated body
    facts: int = 0  # bullets refresh_from_index listed

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["path"] = str(self.path)
        return out


@dataclass(frozen=True)
class _Parsed:
    """A file's bytes cut by the reader's rule. ``layout``: missing | blank | marked | close_only |
    signature | manual | open_only (an opening marker never closed: manual, by the reader's rule)."""

    layout: str
    data: bytes
    open_at: int = -1  # offset of the opening marker (marked only)
    close_at: int = -1  # offset of the closing marker (marked, close_only)

    @property
    def newline(self) -> str:
        """CRLF when the file (its generated zone, if it has one) already uses it."""
        region = self.data[self.open_at : self.close_at] if self.layout == "marked" else self.data
        return "\r\n" if b"\r\n" in region else "\n"


def _parse(path: Path) -> _Parsed:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return _Parsed("missing", b"")
    close = data.find(CLOSE_B)
    if close >= 0:
        opening = data.find(OPEN_B, 0, close)
        if opening >= 0:
            return _Parsed("marked", data, opening, close)
        return _Parsed("close_only", data, close_at=close)
    text = data.decode("utf-8", errors="replace")
    if OLD_GENERATOR_HEADER.search(text) and OLD_GENERATOR_FOOTER.search(text):
        return _Parsed("signature", data)
    if not text.strip():
        return _Parsed("blank", data)
    return _Parsed("open_only" if OPEN_B in data else "manual", data)


def sanitize_generated(body: str) -> tuple[str, int]:
    """``body`` without anything that could pass for a human stamp or a zone marker, and how many
    were removed. Repeated until nothing is left, so removing one cannot assemble another."""
    removed = 0
    while True:
        before = body
        for pattern in (_CLAIMED_STAMP, HUMAN_STAMP_RE):
            body, n = pattern.subn("", body)
            removed += n
        for marker in (GENERATED_CLOSE, GENERATED_OPEN):
            removed += body.count(marker)
            body = body.replace(marker, "")
        if body == before:
            return body, removed


def _zone_bytes(body: str, newline: str) -> bytes:
    """The text between the markers: a newline after the opening marker, the body, and a newline
    before the closing one."""
    lines = body.replace("\r\n", "\n").replace("\r", "\n")
    if lines and not lines.endswith("\n"):
        lines += "\n"
    return (newline + lines.replace("\n", newline)).encode("utf-8")


def write_generated_zone(path: Path, body: str, generator: str = "generator") -> MemoryMdResult:
    """Replace the generated zone of ``path`` with ``body``; never touch the manual zone.

    Under the file's writers' lock: a marked file gets only the text between its markers replaced
    (bytes before the opening marker and from the closing marker on are copied unchanged); a file
    with the old generator's signature and no marker is all generated, and becomes a marked file
    whose zone is ``body`` (its old text is not kept); a missing or blank file is created with the
    markers and an empty manual zone after them; any other file is entirely manual and is left
    as it is (``outcome="refused"``). Stamps and markers inside ``body`` are stripped first."""
    path = Path(path)
    clean, stripped = sanitize_generated(body)
    note = (
        f"; removed {stripped} human stamp(s) or zone marker(s) from the generated text" if stripped else ""
    )

    def result(written: bool, outcome: str, reason: str) -> MemoryMdResult:
        return MemoryMdResult(written, reason + note, path, outcome, generator, stripped)

    with file_lock(path):
        parsed = _parse(path)
        data, nl = parsed.data, parsed.newline
        if parsed.layout == "marked":
            start = parsed.open_at + len(OPEN_B)
            new = data[:start] + _zone_bytes(clean, nl) + data[parsed.close_at :]
            outcome, reason = "replaced", "generated zone replaced; the manual zone was copied unchanged"
        elif parsed.layout == "close_only":
            new = OPEN_B + _zone_bytes(clean, nl) + data[parsed.close_at :]
            outcome, reason = "replaced", "generated zone (everything before the closing marker) replaced"
        elif parsed.layout == "signature":
            new = OPEN_B + _zone_bytes(clean, nl) + CLOSE_B + nl.encode()
            outcome = "marked"
            reason = "the old generator's file (header and footer signature) became a marked file"
        elif parsed.layout in ("missing", "blank"):
            new = OPEN_B + _zone_bytes(clean, "\n") + CLOSE_B + b"\n"
            outcome, reason = "created", f"{path.name} was {parsed.layout}: created with the zone markers"
        elif parsed.layout == "open_only":
            return result(
                False,
                "refused",
                f"{path} has an opening {GENERATED_OPEN} but no closing {GENERATED_CLOSE}, so all of "
                f"it counts as manual and was left unchanged. Add {GENERATED_CLOSE} after the "
                "generated text to let generators write it",
            )
        else:
            return result(
                False,
                "refused",
                f"{path} has no {GENERATED_OPEN} zone and not the old generator's signature, so it "
                "is entirely manual and was left unchanged. To let generators write part of it, add "
                f"a line {GENERATED_OPEN} and a line {GENERATED_CLOSE} above your own text",
            )
        if new == data:
            return result(False, "unchanged", "the generated zone already holds this text")
        write_atomic(path, new)
    return result(True, outcome, reason)


def _check_who(who: str) -> str:
    who = who.strip().removeprefix("human:")
    if not _WHO.fullmatch(who) or "--" in who:
        raise ValueError(
            f"who={who!r} is not a plain id: use 1-64 letters, digits or . _ @ + - (no spaces, "
            "no '--', no '-->'), e.g. --who alice"
        )
    return who


def _iso(at: datetime | None) -> str:
    """``at`` in UTC as ``YYYY-MM-DDTHH:MM:SSZ`` (a naive time is taken as UTC); now by default."""
    at = at or datetime.now(UTC)
    at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def human_stamp(who: str, at: datetime | None = None) -> str:
    """``<!-- verified: human:<who> at <ISO ts> -->``, the stamp ``chunking.HUMAN_STAMP_RE`` reads."""
    return f"<!-- verified: human:{_check_who(who)} at {_iso(at)} -->"


def stamp_human_edit(path: Path, manual_text: str, who: str, at: datetime | None = None) -> MemoryMdResult:
    """A person's edit: the manual zone becomes ``manual_text`` under a fresh human stamp.

    The whole manual zone is replaced (text before the opening marker, if any, and everything
    after the closing marker), because the reader applies the stamp to all of it and it must not
    vouch for text the person did not give. The generated zone keeps its bytes: a file with
    markers keeps them; an old-signature file's text becomes the generated zone of a marked file;
    a missing, blank or unmarked (manual) file gets an empty marked zone at the top. Stamps
    already in ``manual_text`` (pasted from ``show``) are dropped for the fresh one."""
    path = Path(path)
    who_id = _check_who(who)
    stamp = human_stamp(who_id, at)
    for marker in (GENERATED_OPEN, GENERATED_CLOSE):
        if marker in manual_text:
            raise ValueError(
                f"the manual text contains the zone marker {marker}; the manual zone is the text "
                "after the generated zone: remove the marker from it"
            )
    text = HUMAN_STAMP_RE.sub("", manual_text).lstrip("\r\n")
    if text and not text.endswith("\n"):
        text += "\n"
    with file_lock(path):
        parsed = _parse(path)
        data, nl = parsed.data, parsed.newline
        manual = (nl + nl + stamp + nl).encode() + text.encode("utf-8")
        if parsed.layout == "marked":
            new = data[parsed.open_at : parsed.close_at + len(CLOSE_B)] + manual
        elif parsed.layout == "close_only":
            new = data[: parsed.close_at + len(CLOSE_B)] + manual
        elif parsed.layout == "signature":
            old = data if data.endswith(b"\n") else data + nl.encode()
            new = OPEN_B + nl.encode() + old + CLOSE_B + manual
        else:  # missing, blank, manual, open_only: no generated zone to keep
            new = OPEN_B + nl.encode() + CLOSE_B + manual
        write_atomic(path, new)
    return MemoryMdResult(
        True, f"manual zone replaced and stamped human:{who_id}", path, "stamped", f"human:{who_id}"
    )


LAYOUTS = {
    "missing": "no file yet",
    "blank": "blank: no zones yet",
    "marked": "marked: generated zone between the markers, manual zone around it",
    "close_only": "closing marker only: everything before it is generated",
    "signature": "the old generator's file (header and footer): all generated, no markers yet",
    "manual": "no markers: all manual (generators leave it alone)",
    "open_only": "an opening marker never closed: all manual (generators leave it alone)",
}


@dataclass(frozen=True)
class MemoryMdView:
    """MEMORY.md's zones as a person reads them (``memory-assets memory-md show``)."""

    path: Path
    layout: str
    generated: str | None  # None: the file has no generated zone
    manual: str  # human stamps removed (listed in ``stamps``)
    stamps: list[dict[str, str]] = field(default_factory=list)

    @property
    def human_verified(self) -> bool:
        return bool(self.stamps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "layout": self.layout,
            "layout_note": LAYOUTS[self.layout],
            "generated": self.generated,
            "manual": self.manual,
            "human_verified": self.human_verified,
            "stamps": self.stamps,
        }


def read_zones(path: Path) -> MemoryMdView:
    """Read MEMORY.md's zones by the reader's rule (bad bytes shown as U+FFFD; nothing written)."""
    parsed = _parse(Path(path))
    data = parsed.data

    def text(b: bytes) -> str:
        return b.decode("utf-8", errors="replace")

    generated: str | None
    if parsed.layout == "marked":
        generated = text(data[parsed.open_at + len(OPEN_B) : parsed.close_at])
        manual = text(data[: parsed.open_at] + data[parsed.close_at + len(CLOSE_B) :])
    elif parsed.layout == "close_only":
        generated, manual = text(data[: parsed.close_at]), text(data[parsed.close_at + len(CLOSE_B) :])
    elif parsed.layout == "signature":
        generated, manual = text(data), ""
    else:
        generated, manual = None, text(data)
    stamps = [{"who": m.group("who"), "at": m.group("at")} for m in HUMAN_STAMP_RE.finditer(manual)]
    return MemoryMdView(Path(path), parsed.layout, generated, HUMAN_STAMP_RE.sub("", manual), stamps)


# -- the legacy per-turn writer -------------------------------------------------------------------
@dataclass(frozen=True)
class Fact:
    """One fact row of the index, as the built-in list needs it."""

    content: str
    category: str
    importance: float
    day: date | None


def _read_facts(
    store: "MemoryStore",
    tombstoned: frozenset[str] = frozenset(),
    candidates: int = DEFAULT_MAX_LINES,
    state_path: Path | None = None,
) -> list[Fact]:
    """Every fact row of the store's user (daily-log and legacy rows; not vault chunks, not core
    files), read through ``scan`` (reads never write; an assistant-era table is read as it is).
    On a current table, the ``candidates`` best rows are kept in ``state_path`` (when given) and
    brought forward from there (``_best_candidates``)."""
    with store.snapshot():  # one version for the whole read
        return _read_facts_at(store, tombstoned, candidates, state_path)


def _read_facts_at(
    store: "MemoryStore", tombstoned: frozenset[str], candidates: int, state_path: Path | None
) -> list[Fact]:
    from memory_assets.core.index.store import quote

    facts: list[Fact] = []
    if store.is_legacy():
        user = f"user_id = {quote(store.user_id)}"
        data = store.scan(["content", "importance", "metadata", "created_at"], where=user).to_pylist()
        for row in data:
            meta = json_object(row.get("metadata"))
            if meta.get("source_type") in _NOT_FACTS:
                continue
            day = as_date(meta.get("source_date")) or as_date(row.get("created_at"))
            facts.append(_fact(row.get("content"), meta.get("category"), row.get("importance"), day))
    else:
        for row in _best_candidates(store, tombstoned, candidates, state_path):
            day = (
                as_date(row.get("fact_date"))
                or as_date(row.get("source_date"))
                or as_date(row.get("created_at"))
            )
            facts.append(_fact(row.get("content"), row.get("category"), row.get("importance"), day))
    return [f for f in facts if f.content]


# -- the candidates: the best fact rows, kept between refreshes ---------------------------------------
CANDIDATES_STATE = "memory_md_candidates.json"
_CANDIDATES_FORMAT = 1  # bump when the ranking of candidates changes: older state is then re-read
_COLUMNS = ["id", "content", "importance", "category", "fact_date", "source_date", "created_at"]


def _fact_where(user_id: str) -> str:
    from memory_assets.core.index.store import quote

    kinds = ", ".join(quote(k) for k in _NOT_FACTS)
    return f"user_id = {quote(user_id)} AND (source_type IS NULL OR source_type NOT IN ({kinds}))"


def _fact_rows(added: "pa.Table", user_id: str) -> "pa.Table":
    """The rows of ``added`` that ``_fact_where`` selects (the same test, in Arrow)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kinds = pa.array(list(_NOT_FACTS), pa.string())
    source = added.column("source_type")
    keep = pc.and_(
        pc.equal(added.column("user_id"), user_id),
        pc.or_(pc.is_null(source), pc.invert(pc.is_in(source, kinds))),
    )
    return added.filter(keep).select(_COLUMNS)


def _recent_where(cutoff: date) -> str:
    """Rows that rank above every row outside them whatever the table holds: importance above
    0.5, or importance 0.5 (a missing one counts as 0.5) and a day (the fact's date, else the
    source's, else the row's creation) on or after ``cutoff``. Every other row has importance
    below 0.5, or 0.5 and an earlier day (or none), so it ranks below all of these."""
    from memory_assets.core.index.store import quote

    day = quote(cutoff.isoformat())
    recent = (
        f"(fact_date >= {day} OR (fact_date IS NULL AND (source_date >= {day} OR "
        f"(source_date IS NULL AND created_at >= CAST({day} AS TIMESTAMP)))))"
    )
    return f"(importance > 0.5 OR ((importance = 0.5 OR importance IS NULL) AND {recent}))"


def _scan_candidates(store: "MemoryStore", tombstoned: frozenset[str], candidates: int) -> "pa.Table":
    """The ``candidates`` best fact rows, read from the table. Daily-log rows all rank 0.5, so the
    best are the rarer rows ranked higher and then the recent 0.5 ones: read that set first (the
    fact_date index makes it cheap) and the whole table only when it holds too few; the result is
    the same either way (``_recent_where``)."""
    where = _fact_where(store.user_id)
    today = datetime.now(UTC).date()
    for days in RECENT_WINDOWS:
        recent = f"{where} AND {_recent_where(today - timedelta(days=days))}"
        best = _best_rows(store.scan(_COLUMNS, where=recent), tombstoned, candidates)
        if best.num_rows >= candidates:
            return best
    return _best_rows(store.scan(_COLUMNS, where=where), tombstoned, candidates)


def _candidates_key(store: "MemoryStore", tombstoned: frozenset[str]) -> dict[str, Any]:
    """What the kept candidates depend on besides the table's version."""
    import hashlib

    digest = hashlib.sha256("\n".join(sorted(tombstoned)).encode("utf-8", "replace")).hexdigest()
    return {
        "format": _CANDIDATES_FORMAT,
        "uri": store.uri,
        "table": store.table_name,
        "table_id": store.table_id,
        "user": store.user_id,
        "tombstones": digest,
    }


def _load_candidates(path: Path, key: dict[str, Any]) -> "tuple[int, int, pa.Table] | None":
    """(version, how many, rows) kept in ``path`` for ``key``; None if absent, unreadable or
    another key's. The file's bytes are read every time; when they are exactly the bytes this
    process last wrote or parsed there, the parsed rows are reused instead of parsed again."""
    import json

    import pyarrow as pa

    try:
        raw = path.read_bytes()
    except OSError:
        return None
    with _KEPT_LOCK:
        memo = _KEPT.get(str(path))
    if memo is not None and memo[0] == raw:
        _, kept_key, version, count, rows = memo
        return (version, count, rows) if kept_key == key else None
    try:
        state = json.loads(raw.decode("utf-8"))
        version, count, rows = int(state["version"]), int(state["candidates"]), state["rows"]
        columns = {c: [r[c] for r in rows] for c in _COLUMNS}
        table = pa.table(columns, schema=_candidates_schema())
        kept_key = state.get("key")
    except (UnicodeDecodeError, ValueError, TypeError, KeyError, AttributeError, pa.ArrowException):
        return None
    _remember(path, raw, kept_key, version, count, table)
    return (version, count, table) if kept_key == key else None


def _save_candidates(path: Path, key: dict[str, Any], version: int, count: int, rows: "pa.Table") -> None:
    """Keep the candidates in ``path``: a cache, so written without fsync (a crash may leave an old,
    empty or partial file, which ``_load_candidates`` rejects or finds at another version, and the
    next refresh reads the table instead)."""
    import json

    rows = rows.cast(_candidates_schema())
    state = {"key": key, "version": version, "candidates": count, "rows": _rows_json(rows)}
    raw = json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    write_atomic(path, raw, sync=False)
    _remember(path, raw, key, version, count, rows)


# The candidates this process last wrote or parsed, by file: (the file's bytes, key, version, how
# many, rows). Used only while the file holds exactly those bytes; an entry is read and written
# under its file's lock, the dict itself under _KEPT_LOCK (refreshes of other homes, other threads).
_KEPT: dict[str, tuple[bytes, Any, int, int, "pa.Table"]] = {}
_KEPT_FILES = 8
_KEPT_LOCK = threading.Lock()


def _remember(path: Path, raw: bytes, key: Any, version: int, count: int, rows: "pa.Table") -> None:
    with _KEPT_LOCK:
        _KEPT.pop(str(path), None)
        while len(_KEPT) >= _KEPT_FILES:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[str(path)] = (raw, key, version, count, rows)


def _candidates_schema() -> "pa.Schema":
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("content", pa.string()),
            ("importance", pa.float64()),
            ("category", pa.string()),
            ("fact_date", pa.string()),
            ("source_date", pa.string()),
            ("created_at", pa.timestamp("us")),
        ]
    )


def _rows_json(rows: "pa.Table") -> list[dict[str, Any]]:
    """Rows as JSON values that load back to the same Arrow values (timestamps as microseconds)."""
    import pyarrow as pa

    rows = rows.cast(_candidates_schema())
    micros = rows.column("created_at").cast(pa.int64()).to_pylist()
    out = rows.drop_columns(["created_at"]).to_pylist()
    for row, value in zip(out, micros, strict=True):
        row["created_at"] = value
    return out


def _best_candidates(
    store: "MemoryStore", tombstoned: frozenset[str], candidates: int, state_path: Path | None
) -> list[dict[str, Any]]:
    """The ``candidates`` best fact rows (``_best_rows``'s order), as the whole table would give them.

    The best rows of a version, with its number, are kept in ``state_path``. When only this
    store's own commits came since (``MemoryStore.changes_since``), the kept rows are brought
    forward instead of read: a commit's added rows join them and the best are picked again (the
    best of the best plus the new are the best of all), and a commit that deletes no kept row
    changes nothing (a deleted row outside the best cannot enter them). Anything else (another
    writer's commit, an optimize, a deleted kept row, new tombstones, another table) reads the
    table again. The result is the same rows the read would give."""
    if state_path is None or not state_path.parent.is_dir():
        with store.snapshot():
            return _scan_candidates(store, tombstoned, candidates).to_pylist()
    import pyarrow as pa

    with file_lock(state_path), store.snapshot():
        key = _candidates_key(store, tombstoned)
        version = store.current_version()
        kept = _load_candidates(state_path, key)
        best = None
        if kept is not None and version is not None and kept[1] >= candidates:
            at, count, rows = kept
            chain = store.changes_since(at)
            if chain is not None:
                ids = set(rows.column("id").to_pylist())
                if not any(commit.deleted_ids & ids for commit in chain):
                    added = [_fact_rows(c.added, store.user_id) for c in chain if c.added.num_rows]
                    added = [a.cast(_candidates_schema()) for a in added if a.num_rows]
                    best = _merge_best(pa.concat_tables([rows, *added]), tombstoned, count) if added else rows
                    if at != version:
                        _save_candidates(state_path, key, version, count, best)
        if best is None:
            count = max(candidates, kept[1] if kept is not None else 0)
            best = _scan_candidates(store, tombstoned, count)
            if version is not None and store.still_at(version):  # the scan read that version
                _save_candidates(state_path, key, version, count, best)
    return best.slice(0, candidates).to_pylist()


def _rank_columns() -> "list[pl.Expr]":
    """The ranking's derived columns, as both pickers compute them: ``_norm`` (the folded text),
    ``_day`` (the fact's date, else the source's, else the creation's) and ``_importance`` (a
    missing one as 0.5)."""
    import polars as pl

    day = pl.coalesce(
        pl.col("fact_date").str.slice(0, 10),
        pl.col("source_date").str.slice(0, 10),
        pl.col("created_at").cast(pl.Date).cast(pl.Utf8),
    )
    norm = pl.col("content").fill_null("").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()
    return [norm.alias("_norm"), day.alias("_day"), pl.col("importance").fill_null(0.5).alias("_importance")]


def _best_rows(data: "pa.Table", tombstoned: frozenset[str], candidates: int) -> "pa.Table":
    """The ``candidates`` best distinct, untombstoned rows in ``rank_facts``'s order (importance,
    a missing one as 0.5; then the day; then the normalised text; the rest of the row breaks the
    remaining ties, so the pick is deterministic), picked in polars so a refresh over 50k rows
    does not build 50k Python objects. The rows come back as they were read."""
    import polars as pl

    frame = pl.from_arrow(data)
    if not isinstance(frame, pl.DataFrame) or frame.height == 0:
        return data.slice(0, 0)
    order = ["_importance", "_day", "_norm", "content", "category", "fact_date", "source_date", "created_at"]
    if "id" in frame.columns:
        order.append("id")
    best = (
        frame.with_columns(*_rank_columns())
        .filter((pl.col("_norm") != "") & ~pl.col("_norm").is_in(list(tombstoned)))
        .sort(
            order, descending=[True, True] + [False] * (len(order) - 2), nulls_last=True, maintain_order=True
        )
        .unique(subset="_norm", keep="first", maintain_order=True)
        .head(candidates)
    )
    return best.drop("_norm", "_day", "_importance").to_arrow().cast(data.schema)


_MERGE_MAX_ROWS = 2000


def _merge_best(data: "pa.Table", tombstoned: frozenset[str], candidates: int) -> "pa.Table":
    """``_best_rows`` for the kept candidates plus a turn's rows: the same rows, with the sort and
    the pick done in plain Python when that is provably the same (``_best_rows_plain``)."""
    plain = _best_rows_plain(data, tombstoned, candidates)
    return plain if plain is not None else _best_rows(data, tombstoned, candidates)


# Texts whose lower case and whitespace Python computes exactly as polars does: characters up to
# U+017F (ASCII, Latin-1 and Latin Extended-A, whose case mappings are one-to-one and have not
# changed across Unicode versions), except U+0130 (İ, whose lower case is two characters). A test
# compares every one of them with polars. The whitespace among them is Unicode's White_Space,
# what polars' ``\s`` and ``strip_chars()`` take: not \x1c-\x1f, which Python's ``str.split()``
# and ``re``'s ``\s`` would also take.
_PLAIN_UNSAFE = re.compile("[^\x00-\u017f]|\u0130")
_PLAIN_SPACE_CHARS = "\t\n\x0b\x0c\r \x85\xa0"
_PLAIN_SPACE = re.compile(f"[{_PLAIN_SPACE_CHARS}]+")


def _derived_plain(data: "pa.Table") -> "tuple[list[str], list[str | None], list[float]] | None":
    """``_rank_columns`` computed in Python, where that is provably the same values: every text
    within ``_PLAIN_UNSAFE``'s range, creation times naive or UTC (their day is the UTC
    calendar day) in years 1000-9999 (the ISO format polars writes); dates are cut at 10
    characters either way. None otherwise. A refresh's merge runs on every turn with an
    important fact, and a polars query, even on a few hundred rows, costs milliseconds of thread
    wake-ups on these 2 cores."""
    import pyarrow as pa

    created_type = data.schema.field("created_at").type
    if not (pa.types.is_timestamp(created_type) and created_type.tz in (None, "UTC", "+00:00")):
        return None
    contents = data.column("content").to_pylist()
    created = data.column("created_at").to_pylist()
    if any(t is not None and _PLAIN_UNSAFE.search(t) for t in contents):
        return None
    if not all(c is None or 1000 <= c.year <= 9999 for c in created):
        return None
    norms = [_PLAIN_SPACE.sub(" ", (t or "").lower()).strip(_PLAIN_SPACE_CHARS) for t in contents]
    days = [
        f[:10]
        if f is not None
        else s[:10]
        if s is not None
        else c.date().isoformat()
        if c is not None
        else None
        for f, s, c in zip(
            data.column("fact_date").to_pylist(), data.column("source_date").to_pylist(), created, strict=True
        )
    ]
    weights = [0.5 if w is None else float(w) for w in data.column("importance").to_pylist()]
    return norms, days, weights


def _best_rows_plain(data: "pa.Table", tombstoned: frozenset[str], candidates: int) -> "pa.Table | None":
    """``_best_rows``'s pick for a few rows, without its polars sort and unique (milliseconds per
    call whatever the size): the derived columns come from ``_derived_plain`` where it can prove
    them the same, else from polars with the same expressions (``_rank_columns``); Python sorts
    (stable, nulls last, strings in code-point order, which is polars' UTF-8 byte order) and
    keeps each text's first row. None, so polars decides, for more than ``_MERGE_MAX_ROWS``
    rows, a NaN or zero importance (float orders that could differ), or columns of other types
    than the candidates'."""
    import polars as pl
    import pyarrow as pa

    if data.num_rows > _MERGE_MAX_ROWS:
        return None
    schema_ = data.schema
    names = ["content", "category", "fact_date", "source_date"] + (["id"] if "id" in schema_.names else [])
    if not all(pa.types.is_string(schema_.field(n).type) for n in names):
        return None
    if not (
        pa.types.is_timestamp(schema_.field("created_at").type)
        and pa.types.is_floating(schema_.field("importance").type)
    ):
        return None
    plain = _derived_plain(data)
    if plain is not None:
        norms, days, weights = plain
    else:
        frame = pl.from_arrow(
            data.select(["content", "fact_date", "source_date", "created_at", "importance"])
        )
        if not isinstance(frame, pl.DataFrame):
            return None
        frame = frame.select(_rank_columns())
        norms, days, weights = (frame[c].to_list() for c in ("_norm", "_day", "_importance"))
    if any(w != w or w == 0 for w in weights):
        return None
    cols = {n: data.column(n).to_pylist() for n in [*names, "created_at"]}
    order = [i for i, norm in enumerate(norms) if norm != "" and norm not in tombstoned]
    keys: list[tuple[list[Any], bool]] = [(weights, True), (days, True), (norms, False)]
    keys += [(cols[n], False) for n in ("content", "category", "fact_date", "source_date", "created_at")]
    if "id" in cols:
        keys.append((cols["id"], False))
    for values, descending in reversed(keys):  # stable sorts, last key first; nulls last either way
        if descending:
            order.sort(key=lambda i, v=values: (v[i] is not None, 0 if v[i] is None else v[i]), reverse=True)
        else:
            order.sort(key=lambda i, v=values: (v[i] is None, 0 if v[i] is None else v[i]))
    seen: set[str] = set()
    picked = []
    for i in order:
        if norms[i] in seen:
            continue
        seen.add(norms[i])
        picked.append(i)
        if len(picked) == candidates:
            break
    return data.take(pa.array(picked, pa.int64()))


def _fact(content: object, category: object, importance: object, day: date | None) -> Fact:
    text = " ".join(str(content or "").split())
    if len(text) > MAX_FACT_CHARS:
        text = text[: MAX_FACT_CHARS - 1].rstrip() + "…"
    cat = str(category).strip().lower() if category else "general"
    if cat == "identity":
        cat = "personal"
    value = float(importance) if isinstance(importance, int | float) else 0.5
    return Fact(text, cat or "general", value, day)


def rank_facts(facts: Sequence[Fact], tombstoned: frozenset[str] = frozenset()) -> list[Fact]:
    """Importance first, then recency (the fact's date), then the text: a deterministic order.
    Tombstoned facts are left out; a fact repeated on several days is listed once (its best row)."""
    ordered = sorted(
        facts,
        key=lambda f: (-f.importance, -(f.day.toordinal() if f.day else 0), normalise(f.content), f.category),
    )
    seen: set[str] = set()
    out = []
    for fact in ordered:
        norm = normalise(fact.content)
        if norm in seen or norm in tombstoned:
            continue
        seen.add(norm)
        out.append(fact)
    return out


def _section_order(category: str) -> tuple[int, str]:
    order = list(CATEGORY_TITLES)
    return (order.index(category), "") if category in order else (len(order), category)


def render_facts(ranked: Sequence[Fact], max_lines: int = DEFAULT_MAX_LINES) -> tuple[str, int]:
    """The zone's body: a ``## <Category>`` section per category (fixed order), one bullet per
    fact in rank order, at most ``max_lines`` lines in all (headings and the blank lines between
    sections count). Facts are taken best first; one that does not fit is skipped. Returns the
    body and the number of facts listed."""
    groups: dict[str, list[str]] = {}
    used = 0
    for fact in ranked:
        cost = 1 if fact.category in groups else (2 if not groups else 3)
        if used + cost > max_lines:
            continue
        groups.setdefault(fact.category, []).append(f"- {fact.content}")
        used += cost
    sections = []
    for category in sorted(groups, key=_section_order):
        title = CATEGORY_TITLES.get(category, category.replace("_", " ").title())
        sections.append("\n".join([f"## {title}", *groups[category]]))
    return "\n\n".join(sections), sum(len(v) for v in groups.values())


def personal_pages(settings: "Settings") -> list[str]:
    """The vault's ``3_Personal/`` pages (what the dream's promoter writes MEMORY.md from)."""
    return list_pages(settings.notebook_dir, under=PERSONAL_DIR)


def refresh_from_index(
    settings: "Settings",
    store: "MemoryStore",
    *,
    max_lines: int = DEFAULT_MAX_LINES,
    path: Path | None = None,
) -> MemoryMdResult:
    """The legacy per-turn writer (``refresh_core_memory_facts``), deterministic.

    Stands down (writes nothing) once the vault has any ``3_Personal/`` page: the dream's
    promoter owns the generated zone from then on. Otherwise rebuilds the generated zone from the
    index's fact rows (daily-log and legacy rows of the store's user, tombstoned ones left out),
    best first by importance then recency, grouped by category, at most ``max_lines`` lines. No
    importance threshold: the indexer stamps daily-log rows 0.5, and a threshold of 0.7 is what
    rebuilt the old file from legacy rows alone. Writes nothing when the index does not exist yet."""
    from memory_assets.core.knowledge.tombstones import read_tombstones

    target = Path(path) if path is not None else settings.memory_md_path
    pages = personal_pages(settings)
    if pages:
        return MemoryMdResult(
            False,
            f"stood down: the vault has {len(pages)} page(s) under {PERSONAL_DIR}/ (e.g. {pages[0]}); "
            "the dream's promoter writes MEMORY.md's generated zone now",
            target,
            "stood_down",
            REFRESH_GENERATOR,
        )
    if not store.opened() and not store.exists():
        return MemoryMdResult(
            False,
            f"no index yet at {store.uri}: nothing to list (run `memory-assets reindex`); "
            f"{target.name} was not written",
            target,
            "no_index",
            REFRESH_GENERATOR,
        )
    tombstoned = read_tombstones(settings.tombstones_path).contents
    facts = _read_facts(  # the zone lists fewer than max_lines facts
        store, tombstoned, candidates=max_lines, state_path=settings.state_dir / CANDIDATES_STATE
    )
    body, count = render_facts(rank_facts(facts, tombstoned), max_lines)
    written = write_generated_zone(target, body, generator=REFRESH_GENERATOR)
    return MemoryMdResult(
        written.written,
        f"{written.reason} ({count} fact(s) listed)",
        target,
        written.outcome,
        REFRESH_GENERATOR,
        written.stripped,
        count,
    )
