"""The best fact rows of the store's user, as the per-turn MEMORY.md writer lists them: a read
model over the index with a version-chained cache (the same shape as ``MemoryStore.read_facts``).

``read_user_facts(store, tombstones, candidates, state_path)`` returns ``Fact``s (the format of
``knowledge/memory_md.py``) for every fact row of the store's user: daily-log and legacy rows,
never vault chunks or core-file rows (MEMORY.md's own rows would feed the zone back into itself).
An assistant-era table is read whole, as it is (``scan``: reads never write). On a current table
only the ``candidates`` best rows are read, in ``rank_facts``'s order: importance (a missing one
as 0.5), then the day (the fact's date, else the source's, else the creation's), then the
normalised text, then the rest of the row, one row per normalised text, tombstoned texts left
out. That order is implemented twice, in polars (``_best_rows``, the reference) and in plain
Python for a turn's merge (``_best_rows_plain``, used only where tests prove it polars' equal).

**The cache** (``.state/memory_md_candidates.json``, ``CANDIDATES_STATE``): JSON
``{"key", "version", "candidates", "rows"}``, where ``key`` names what the rows depend on besides
the table's version (the cache format, the store's uri, table, table id and user, and a digest of
the tombstones) and ``rows`` are the best rows at ``version``, timestamps as microseconds.

Invariants:

* the result is always the rows a read of the whole table at one version gives (a snapshot holds
  the version for the whole read); the cache only decides how they are found. When only this
  store's own commits came since the kept version (``MemoryStore.changes_since``), a commit's
  added rows join the kept ones and the best are picked again, and a commit that deletes no kept
  row changes nothing; anything else (another writer's commit, an optimize, a deleted kept row,
  new tombstones, another table) reads the table again;
* the file is read and written under its writers' lock (``file_lock``), through an atomic
  replace. It is a cache, written without fsync: a missing, stale, empty, partial or garbled file
  is read again from the table, never an error. The parsed rows of the last file this process
  wrote or read are reused only while the file holds exactly those bytes (another process's
  write is always seen).

Failures: the store's own errors (a missing table, LanceDB) propagate to the caller, which
decides what a failed read means (the per-turn writer reports it; design §4.8, §5.6,
and the cache's row in §8.3's table of state files).
"""

import hashlib
import json
import re
import threading
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from memory_assets.core.durable import file_lock, write_atomic
from memory_assets.core.index.store import MemoryStore, quote
from memory_assets.core.knowledge.memory_md import DEFAULT_MAX_LINES, Fact
from memory_assets.core.knowledge.tombstones import Tombstones, as_tombstones
from memory_assets.core.sources import CORE_FILE, NOTEBOOK, TRANSCRIPT
from memory_assets.core.text import as_date, json_object

RECENT_WINDOWS = (30, 365)  # days a candidates read takes first, before the whole table
# Rows that are never listed: vault chunks are paragraphs, not facts, core-file rows include
# MEMORY.md's own (feeding the zone back into itself), and a turn is what was said, not a claim
# (the recall tier: it is found by search, never promoted to the zone).
_NOT_FACTS = (NOTEBOOK, CORE_FILE, TRANSCRIPT)


def read_user_facts(
    store: MemoryStore,
    tombstoned: Tombstones | frozenset[str] = frozenset(),
    candidates: int = DEFAULT_MAX_LINES,
    state_path: Path | None = None,
) -> list[Fact]:
    """Every fact row of the store's user (daily-log and legacy rows; not vault chunks, not core
    files), read through ``scan`` (reads never write; an assistant-era table is read as it is).
    On a current table, the ``candidates`` best rows are kept in ``state_path`` (when given) and
    brought forward from there (``_best_candidates``)."""
    with store.snapshot():  # one version for the whole read
        return _read_user_facts_at(store, as_tombstones(tombstoned), candidates, state_path)


def _read_user_facts_at(
    store: MemoryStore, tombstoned: Tombstones, candidates: int, state_path: Path | None
) -> list[Fact]:
    facts: list[Fact] = []
    if store.is_legacy():
        user = f"user_id = {quote(store.user_id)}"
        data = store.scan(["content", "importance", "metadata", "created_at"], where=user).to_pylist()
        for row in data:
            meta = json_object(row.get("metadata"))
            if meta.get("source_type") in _NOT_FACTS:
                continue
            day = as_date(meta.get("source_date")) or as_date(row.get("created_at"))
            facts.append(Fact.of(row.get("content"), meta.get("category"), row.get("importance"), day))
    else:
        for row in _best_candidates(store, tombstoned, candidates, state_path):
            day = (
                as_date(row.get("fact_date"))
                or as_date(row.get("source_date"))
                or as_date(row.get("created_at"))
            )
            facts.append(Fact.of(row.get("content"), row.get("category"), row.get("importance"), day))
    return [f for f in facts if f.content]


# -- the candidates: the best fact rows, kept between refreshes ---------------------------------------
CANDIDATES_STATE = "memory_md_candidates.json"
_CANDIDATES_FORMAT = 2  # 2: transcript rows are never candidates. Bump when the ranking of candidates changes: older state is then re-read
_COLUMNS = ["id", "content", "importance", "category", "fact_date", "source_date", "created_at"]


def kept_candidate_texts(state_dir: Path) -> list[tuple[int, str]]:
    """The texts the kept candidates hold, numbered (what the ``no_tombstoned_content`` check
    reads: the next refresh is written from them). A missing or unreadable file holds none."""
    try:
        rows = json.loads((state_dir / CANDIDATES_STATE).read_bytes().decode("utf-8"))["rows"]
        return [(n, str(r.get("content") or "")) for n, r in enumerate(rows, start=1)]
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError, AttributeError):
        return []


def drop_candidates(state_dir: Path) -> None:
    """Drop the kept candidates (forgetting: they may hold a forgotten text; the next refresh
    reads the table, forgotten rows left out)."""
    path = state_dir / CANDIDATES_STATE
    with file_lock(path):
        path.unlink(missing_ok=True)
    with _KEPT_LOCK:
        _KEPT.pop(str(path), None)


def _fact_where(user_id: str) -> str:
    kinds = ", ".join(quote(k) for k in _NOT_FACTS)
    return f"user_id = {quote(user_id)} AND (source_type IS NULL OR source_type NOT IN ({kinds}))"


def _fact_rows(added: pa.Table, user_id: str) -> pa.Table:
    """The rows of ``added`` that ``_fact_where`` selects (the same test, in Arrow)."""
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
    day = quote(cutoff.isoformat())
    recent = (
        f"(fact_date >= {day} OR (fact_date IS NULL AND (source_date >= {day} OR "
        f"(source_date IS NULL AND created_at >= CAST({day} AS TIMESTAMP)))))"
    )
    return f"(importance > 0.5 OR ((importance = 0.5 OR importance IS NULL) AND {recent}))"


def _scan_candidates(
    store: MemoryStore, tombstoned: Tombstones | frozenset[str], candidates: int
) -> pa.Table:
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


def _candidates_key(store: MemoryStore, tombstoned: Tombstones | frozenset[str]) -> dict[str, Any]:
    """What the kept candidates depend on besides the table's version."""
    tombstoned = as_tombstones(tombstoned)
    hidden = sorted(tombstoned.contents) + sorted(h for h, _ in tombstoned.erased)
    digest = hashlib.sha256("\n".join(hidden).encode("utf-8", "replace")).hexdigest()
    return {
        "format": _CANDIDATES_FORMAT,
        "uri": store.uri,
        "table": store.table_name,
        "table_id": store.table_id,
        "user": store.user_id,
        "tombstones": digest,
    }


def _load_candidates(path: Path, key: dict[str, Any]) -> tuple[int, int, pa.Table] | None:
    """(version, how many, rows) kept in ``path`` for ``key``; None if absent, unreadable or
    another key's. The file's bytes are read every time; when they are exactly the bytes this
    process last wrote or parsed there, the parsed rows are reused instead of parsed again."""
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


def _save_candidates(path: Path, key: dict[str, Any], version: int, count: int, rows: pa.Table) -> None:
    """Keep the candidates in ``path``: a cache, so written without fsync (a crash may leave an old,
    empty or partial file, which ``_load_candidates`` rejects or finds at another version, and the
    next refresh reads the table instead)."""
    rows = rows.cast(_candidates_schema())
    state = {"key": key, "version": version, "candidates": count, "rows": _rows_json(rows)}
    raw = json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    write_atomic(path, raw, sync=False)
    _remember(path, raw, key, version, count, rows)


# The candidates this process last wrote or parsed, by file: (the file's bytes, key, version, how
# many, rows). Used only while the file holds exactly those bytes; an entry is read and written
# under its file's lock, the dict itself under _KEPT_LOCK (refreshes of other homes, other threads).
_KEPT: dict[str, tuple[bytes, Any, int, int, pa.Table]] = {}
_KEPT_FILES = 8
_KEPT_LOCK = threading.Lock()


def _remember(path: Path, raw: bytes, key: Any, version: int, count: int, rows: pa.Table) -> None:
    with _KEPT_LOCK:
        _KEPT.pop(str(path), None)
        while len(_KEPT) >= _KEPT_FILES:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[str(path)] = (raw, key, version, count, rows)


def _candidates_schema() -> pa.Schema:
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


def _rows_json(rows: pa.Table) -> list[dict[str, Any]]:
    """Rows as JSON values that load back to the same Arrow values (timestamps as microseconds)."""
    rows = rows.cast(_candidates_schema())
    micros = rows.column("created_at").cast(pa.int64()).to_pylist()
    out = rows.drop_columns(["created_at"]).to_pylist()
    for row, value in zip(out, micros, strict=True):
        row["created_at"] = value
    return out


def _best_candidates(
    store: MemoryStore, tombstoned: Tombstones | frozenset[str], candidates: int, state_path: Path | None
) -> list[dict[str, Any]]:
    """The ``candidates`` best fact rows (``_best_rows``'s order), as the whole table would give them.

    The best rows of a version, with its number, are kept in ``state_path``. When only this
    store's own commits came since (``MemoryStore.changes_since``), the kept rows are brought
    forward instead of read: a commit's added rows join them and the best are picked again (the
    best of the best plus the new are the best of all), and a commit that deletes no kept row
    changes nothing (a deleted row outside the best cannot enter them). Anything else (another
    writer's commit, an optimize, a deleted kept row, new tombstones, another table) reads the
    table again. The result is the same rows the read would give."""
    tombstoned = as_tombstones(tombstoned)
    if state_path is None or not state_path.parent.is_dir():
        with store.snapshot():
            return _scan_candidates(store, tombstoned, candidates).to_pylist()

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


def _rank_columns() -> list[pl.Expr]:
    """The ranking's derived columns, as both pickers compute them: ``_norm`` (the folded text),
    ``_day`` (the fact's date, else the source's, else the creation's) and ``_importance`` (a
    missing one as 0.5)."""
    day = pl.coalesce(
        pl.col("fact_date").str.slice(0, 10),
        pl.col("source_date").str.slice(0, 10),
        pl.col("created_at").cast(pl.Date).cast(pl.Utf8),
    )
    norm = pl.col("content").fill_null("").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()
    return [norm.alias("_norm"), day.alias("_day"), pl.col("importance").fill_null(0.5).alias("_importance")]


def _hidden_norms(norms: pl.Series, tombstoned: Tombstones) -> set[str]:
    """The normalised texts among ``norms`` that a tombstone hides (``_hides``): the tombstoned
    texts, and the texts that hold a person's forgotten text, found by a literal search first.
    Erased texts need no search here: an erase deletes every row that holds one, and the indexer
    plans no row that holds one again."""
    hidden = set(tombstoned.contents)
    held = list(tombstoned.held_texts)
    if held and norms.len():
        suspects = norms.filter(norms.str.contains_any(held)).unique().to_list()
        hidden.update(n for n in suspects if n is not None and _hides(n, tombstoned, held))
    return hidden


def _hides(norm: str, tombstoned: Tombstones, held: list[str]) -> bool:
    """Whether a tombstone hides a candidate by its normalised text: one decision, made the same way
    by both pickers (a literal search for a held text first, as polars' ``contains_any`` makes it)."""
    if norm in tombstoned.contents:
        return True
    return any(h in norm for h in held) and tombstoned.holds_forgotten(norm, erased=False)


def _best_rows(data: pa.Table, tombstoned: Tombstones | frozenset[str], candidates: int) -> pa.Table:
    """The ``candidates`` best distinct, untombstoned rows in ``rank_facts``'s order (importance,
    a missing one as 0.5; then the day; then the normalised text; the rest of the row breaks the
    remaining ties, so the pick is deterministic), picked in polars so a refresh over 50k rows
    does not build 50k Python objects. The rows come back as they were read."""
    frame = pl.from_arrow(data)
    if not isinstance(frame, pl.DataFrame) or frame.height == 0:
        return data.slice(0, 0)
    order = ["_importance", "_day", "_norm", "content", "category", "fact_date", "source_date", "created_at"]
    if "id" in frame.columns:
        order.append("id")
    frame = frame.with_columns(*_rank_columns())
    hidden = _hidden_norms(frame["_norm"], as_tombstones(tombstoned))
    best = (
        frame.filter((pl.col("_norm") != "") & ~pl.col("_norm").is_in(list(hidden)))
        .sort(
            order, descending=[True, True] + [False] * (len(order) - 2), nulls_last=True, maintain_order=True
        )
        .unique(subset="_norm", keep="first", maintain_order=True)
        .head(candidates)
    )
    return best.drop("_norm", "_day", "_importance").to_arrow().cast(data.schema)


_MERGE_MAX_ROWS = 2000


def _merge_best(data: pa.Table, tombstoned: Tombstones | frozenset[str], candidates: int) -> pa.Table:
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


def _derived_plain(data: pa.Table) -> tuple[list[str], list[str | None], list[float]] | None:
    """``_rank_columns`` computed in Python, where that is provably the same values: every text
    within ``_PLAIN_UNSAFE``'s range, creation times naive or UTC (their day is the UTC
    calendar day) in years 1000-9999 (the ISO format polars writes); dates are cut at 10
    characters either way. None otherwise. A refresh's merge runs on every turn with an
    important fact, and a polars query, even on a few hundred rows, costs milliseconds of thread
    wake-ups on these 2 cores."""
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


def _best_rows_plain(
    data: pa.Table, tombstoned: Tombstones | frozenset[str], candidates: int
) -> pa.Table | None:
    """``_best_rows``'s pick for a few rows, without its polars sort and unique (milliseconds per
    call whatever the size): the derived columns come from ``_derived_plain`` where it can prove
    them the same, else from polars with the same expressions (``_rank_columns``); Python sorts
    (stable, nulls last, strings in code-point order, which is polars' UTF-8 byte order) and
    keeps each text's first row. None, so polars decides, for more than ``_MERGE_MAX_ROWS``
    rows, a NaN or zero importance (float orders that could differ), or columns of other types
    than the candidates'."""
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
    tombs = as_tombstones(tombstoned)
    held = list(tombs.held_texts)
    order = [i for i, norm in enumerate(norms) if norm != "" and not _hides(norm, tombs, held)]
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
