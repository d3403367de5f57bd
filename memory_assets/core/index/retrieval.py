"""Retrieval as a library call: hybrid (vector + full text) search with the lifecycle prior.

``score = 0.7 * semantic + 0.3 * full_text + 0.2 * importance + 0.1 * recency`` (the assistant's
weights), where semantic is ``1 - cosine distance``, full_text is the BM25 score divided by the
best score of the query, and recency is ``1 / (1 + age in days)`` of the FACT (its log date or
the page's ``updated``), not of the last reindex. Without an embedder it is full-text only.

The read path never writes to the index; the recall signal goes to ``.state/recall_log.jsonl``.
"""

import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from memory_assets.core.durable import append_durable
from memory_assets.core.index.embedder import Embedder
from memory_assets.core.index.store import LEGACY_SOURCE_TYPE, MemoryStore, quote

SEMANTIC_WEIGHT = 0.7
FTS_WEIGHT = 0.3
IMPORTANCE_WEIGHT = 0.2
RECENCY_WEIGHT = 0.1
CANDIDATE_FACTOR = 4
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
]


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _filters(
    store: MemoryStore, source_types: Sequence[str] | None, date_from: date | None, date_to: date | None
) -> str:
    clauses = [f"user_id = {quote(store.user_id)}"]
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
    embedder: Embedder | None = None,
    limit: int = 10,
    source_types: Sequence[str] | None = None,
    date_from: date | None = None,
    date_to: date | None = None,
    recall_log: Path | None = None,
    today: date | None = None,
    query_vector: Any = None,
) -> list[Hit]:
    """The ``limit`` best rows for ``query``. Pass ``query_vector`` to reuse an embedding."""
    table = store.table()
    if table is None or limit <= 0 or not query.strip():
        return []
    today = today or datetime.now(UTC).date()
    where = _filters(store, source_types, date_from, date_to)
    k = max(limit * CANDIDATE_FACTOR, 20)
    if query_vector is None and embedder is not None:
        query_vector = embedder.embed_query(query)
    text = " ".join(_FTS_SAFE.sub(" ", query).split())

    def vector_rows() -> list[dict[str, Any]]:
        q = table.search(query_vector).distance_type("cosine")
        if where:
            q = q.where(where, prefilter=True)
        if store.has_ann_index():
            q = q.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE)
        return q.limit(k).select([*COLUMNS, "_distance"]).to_list()

    def text_rows() -> list[dict[str, Any]]:
        q = table.search(text, query_type="fts")
        if where:
            q = q.where(where, prefilter=True)
        return q.limit(k).select([*COLUMNS, "_score"]).to_list()

    # The two legs are independent LanceDB queries that run in Rust without the GIL: run them side by side.
    vector_future = _POOL.submit(vector_rows) if query_vector is not None else None
    fts = text_rows() if text else []
    vec = vector_future.result() if vector_future is not None else []

    found: dict[str, dict[str, Any]] = {}
    semantic: dict[str, float] = {}
    full_text: dict[str, float] = {}
    for row in vec:
        found[row["id"]] = row
        semantic[row["id"]] = 1.0 - float(row["_distance"])
    best = max((float(r["_score"]) for r in fts), default=0.0)
    for row in fts:
        found.setdefault(row["id"], row)
        full_text[row["id"]] = float(row["_score"]) / best if best > 0 else 0.0

    hits = []
    for row_id, row in found.items():
        importance = float(row["importance"]) if row.get("importance") is not None else 0.5
        sem, fts = semantic.get(row_id, 0.0), full_text.get(row_id, 0.0)
        score = (
            SEMANTIC_WEIGHT * sem
            + FTS_WEIGHT * fts
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
                full_text=round(fts, 6),
            )
        )
    hits.sort(key=lambda h: (-h.score, h.id))
    hits = hits[:limit]
    if recall_log is not None and hits:
        log_recalls(recall_log, hits)
    return hits


def log_recalls(path: Path, hits: Sequence[Hit]) -> None:
    """Best effort: a recall signal must never fail a search."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ts = datetime.now(UTC).isoformat(timespec="seconds")
        lines = "".join(
            json.dumps(
                {"ts": ts, "snippet": h.content[:160], "source_type": h.source_type}, ensure_ascii=False
            )
            + "\n"
            for h in hits
        )
        append_durable(path, lines)
    except OSError:
        pass
