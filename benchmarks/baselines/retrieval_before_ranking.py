"""THE BASELINE: ``search()`` exactly as it was at commit 6db5c15, before issue #11 (retrieval quality).

Kept verbatim so that ``bench_retrieval.py`` can run today's ranking and the new one side by side,
on the same table, in one process. Not part of the package; nothing but the benchmark imports it.

The baseline: a vector leg and a full-text leg of the same depth (max(4 x limit, 20)); a row found by
one leg scores 0 on the other; score = 0.7 semantic + 0.3 full text + 0.2 importance + 0.1 recency
(1 / (1 + age in days)) on every query; dates in the question are not read; no context.
"""

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from memory_assets.core.durable import stat_signature
from memory_assets.core.index.store import MemoryStore, StoreError, quote
from memory_assets.core.knowledge.recall_log import log_recalls
from memory_assets.core.knowledge.tombstones import Tombstones, read_tombstones
from memory_assets.core.models.embedder import TextEmbedder
from memory_assets.core.settings import Settings
from memory_assets.core.sources import LEGACY_SOURCE_TYPE
from memory_assets.core.text import json_object

SEMANTIC_WEIGHT = 0.7
FTS_WEIGHT = 0.3
IMPORTANCE_WEIGHT = 0.2
RECENCY_WEIGHT = 0.1
CANDIDATE_FACTOR = 4
DUPLICATE_COSINE = 0.95  # returned rows at least this similar are one hit
DEFAULT_MAX_CHARS = 2000
ANN_NPROBES = 20
ANN_REFINE = 5
_FTS_SAFE = re.compile(r"[^\w\s]", re.UNICODE)
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memory-search")
COLUMNS = [
    "id",
    "content",
    "source_type",
    "source_file",
    "source_date",
    "fact_date",
    "importance",
    "category",
    "metadata",
]
LEGACY_COLUMNS = ["id", "content", "importance", "metadata", "created_at"]


class EmptyIndexError(StoreError):
    """Nothing to search: the index was never built, or holds no rows."""


@dataclass
class Hit:
    id: str
    content: str
    score: float
    source_type: str
    source_file: str | None
    source_date: str | None
    importance: float
    category: str | None = None
    semantic: float = 0.0
    full_text: float = 0.0
    duplicates: int = 0  # near-duplicate rows collapsed into this hit
    truncated: bool = False  # content was cut to the setting's length
    zone: str | None = None  # MEMORY.md's "generated" or "manual" zone (core-file rows)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_TOMBSTONES: dict[str, tuple[object, Tombstones]] = {}


def _tombstoned(path: Path) -> Tombstones:
    """The tombstones, re-read only when the file changed (one stat per search)."""
    sig = stat_signature(path)
    hit = _TOMBSTONES.get(str(path))
    if hit is None or hit[0] != sig:
        hit = (sig, read_tombstones(path) if sig is not None else Tombstones())
        _TOMBSTONES[str(path)] = hit
    return hit[1]


def _filters(
    store: MemoryStore,
    source_types: Sequence[str] | None,
    date_from: date | None,
    date_to: date | None,
    single_user: bool = False,
) -> str | None:
    """The where clause. ``single_user``: every row is this user's, so the user clause is left out
    (a prefilter costs each leg a pass over the user_id index; other users' rows cannot appear)."""
    clauses = [] if single_user else [f"user_id = {quote(store.user_id)}"]
    if source_types:
        types = [t for t in source_types if t != LEGACY_SOURCE_TYPE]
        parts = []
        if types:
            parts.append("source_type IN (" + ", ".join(quote(t) for t in types) + ")")
        if LEGACY_SOURCE_TYPE in source_types:
            parts.append("source_type IS NULL")
        clauses.append("(" + " OR ".join(parts) + ")")
    if date_from:
        clauses.append(f"fact_date >= {quote(date_from.isoformat())}")
    if date_to:
        clauses.append(f"fact_date <= {quote(date_to.isoformat())}")
    return " AND ".join(clauses) or None


def _recency(fact_date: str | None, today: date) -> float:
    if not fact_date:
        return 0.0
    try:
        age = (today - date.fromisoformat(fact_date[:10])).days
    except ValueError:
        return 0.0
    return 1.0 / (1.0 + max(age, 0))


def search(
    store: MemoryStore,
    query: str,
    *,
    embedder: TextEmbedder | None = None,
    settings: Settings | None = None,
    limit: int = 10,
    source_types: Sequence[str] | None = None,
    date_from: date | None = None,
    date_to: date | None = None,
    today: date | None = None,
    query_vector: Any = None,
    log_recall: bool = True,
) -> list[Hit]:
    """The ``limit`` best rows for ``query``. Pass ``query_vector`` to reuse an embedding.

    ``settings`` (the memory home's) supplies the tombstones filtered at query time, the recall
    log and the content cap; without it nothing is filtered or logged and contents are cut at
    2,000 characters. ``log_recall=False`` keeps a lookup out of the recall signal (the write
    path's recall of known facts is not something the assistant handed out)."""
    facts = store.read_facts()
    if facts is None:
        raise EmptyIndexError(
            f"the index at {store.uri} has never been built (no table {store.table_name}); "
            "run `memory-assets reindex`"
        )
    if limit <= 0 or not query.strip():
        return []
    if facts.rows == 0:
        raise EmptyIndexError(f"the index at {store.uri} is empty; run `memory-assets reindex`")
    table, legacy = facts.table, facts.legacy
    if legacy and (source_types or date_from or date_to):
        store.require_current("filtering by source type or fact date")
    today = today or datetime.now(UTC).date()
    where = _filters(store, source_types, date_from, date_to, single_user=facts.single_user)
    k = max(limit * CANDIDATE_FACTOR, 20)
    if query_vector is None and embedder is not None:
        query_vector = embedder.embed_query(query)
    if query_vector is not None:
        facts.check_query_width(len(query_vector), f"{store.uri} ({store.table_name})")
    text = " ".join(_FTS_SAFE.sub(" ", query).split())
    columns = [*(LEGACY_COLUMNS if legacy else COLUMNS), "vector"]
    ann = facts.ann

    def vector_rows() -> pa.Table:
        q = table.search(query_vector).distance_type("cosine")
        if where:
            q = q.where(where, prefilter=True)
        if ann:
            q = q.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE)
        return q.limit(k).select([*columns, "_distance"]).to_arrow()

    def text_rows() -> pa.Table:
        q = table.search(text, query_type="fts")
        if where:
            q = q.where(where, prefilter=True)
        return q.limit(k).select([*columns, "_score"]).to_arrow()

    # The two legs are independent LanceDB queries that run in Rust without the GIL: run them side by side.
    vector_future = _POOL.submit(vector_rows) if query_vector is not None else None
    fts = text_rows() if text and facts.fts else None
    vec = vector_future.result() if vector_future is not None else None

    found: dict[str, dict[str, Any]] = {}
    vectors: dict[str, np.ndarray] = {}
    semantic: dict[str, float] = {}
    full_text: dict[str, float] = {}
    for data, leg in ((vec, "vector"), (fts, "fts")):
        if data is None or data.num_rows == 0:
            continue
        rows = data.drop_columns(["vector"]).to_pylist()
        matrix = _matrix(data.column("vector"))
        best = max(float(r["_score"]) for r in rows) if leg == "fts" else 0.0
        for i, row in enumerate(rows):
            row_id = row["id"]
            found.setdefault(row_id, row)
            vectors.setdefault(row_id, matrix[i])
            if leg == "vector":
                semantic[row_id] = 1.0 - float(row["_distance"])
            else:
                full_text[row_id] = float(row["_score"]) / best if best > 0 else 0.0

    tombs = _tombstoned(settings.tombstones_path) if settings is not None else Tombstones()
    hits = []
    for row_id, row in found.items():
        if (tombs.contents or tombs.claims) and tombs.hides(row["content"]):
            continue  # forgotten since the last reindex: never handed out
        if legacy:
            row = _legacy_row(row)
        importance = float(row["importance"]) if row.get("importance") is not None else 0.5
        sem, fts_score = semantic.get(row_id, 0.0), full_text.get(row_id, 0.0)
        score = (
            SEMANTIC_WEIGHT * sem
            + FTS_WEIGHT * fts_score
            + IMPORTANCE_WEIGHT * importance
            + RECENCY_WEIGHT * _recency(row.get("fact_date"), today)
        )
        hits.append(
            Hit(
                id=row_id,
                content=row["content"],
                score=round(score, 6),
                source_type=row.get("source_type") or LEGACY_SOURCE_TYPE,
                source_file=row.get("source_file"),
                source_date=row.get("source_date"),
                importance=importance,
                category=row.get("category"),
                semantic=round(sem, 6),
                full_text=round(fts_score, 6),
                zone=json_object(row.get("metadata")).get("zone")
                if row.get("source_type") == "core_file"
                else None,
            )
        )
    hits.sort(key=lambda h: (-h.score, h.id))
    hits = collapse_duplicates(hits, vectors, limit)
    max_chars = settings.search_max_chars if settings is not None else DEFAULT_MAX_CHARS
    for hit in hits:
        if len(hit.content) > max_chars:
            hit.content, hit.truncated = hit.content[:max_chars], True
    if settings is not None and log_recall and hits:  # off the caller's path: the signal is best effort
        _POOL.submit(
            log_recalls,
            settings.recall_log_path,
            [(h.content, h.source_type) for h in hits],
            settings.recall_log_max_bytes,
        )
    return hits


def flush_recalls() -> None:
    """Wait until every recall logged so far is written (tests; a process about to exit)."""
    _POOL.submit(lambda: None).result()


def collapse_duplicates(hits: list[Hit], vectors: dict[str, np.ndarray], limit: int) -> list[Hit]:
    """Keep the best of each group of near-duplicates (cosine >= 0.95 to a kept hit), counting the
    rest on it, until ``limit`` hits are kept. ``hits`` are best first; vectors are unit length."""
    kept: list[Hit] = []
    kept_vectors: list[np.ndarray] = []
    for hit in hits:
        vector = vectors[hit.id]
        if kept_vectors:
            similar = np.stack(kept_vectors) @ vector
            j = int(np.argmax(similar))
            if similar[j] >= DUPLICATE_COSINE:
                kept[j].duplicates += 1
                continue
        if len(kept) < limit:
            kept.append(hit)
            kept_vectors.append(vector)
    return kept


def _matrix(column: pa.ChunkedArray) -> np.ndarray:
    flat = column.combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(len(column), -1)


def _legacy_row(row: dict[str, Any]) -> dict[str, Any]:
    """An assistant-era row, read as it is: its source and date come from its metadata JSON."""
    meta = json_object(row.get("metadata"))
    created = row.get("created_at")
    source_file = meta.get("source_file")
    day = meta.get("source_date") or (source_file[:10] if isinstance(source_file, str) else None)
    return {
        **row,
        "source_type": meta.get("source_type"),
        "source_file": source_file,
        "source_date": day,
        "fact_date": day or (created.date().isoformat() if created else None),
        "category": meta.get("category"),
    }
