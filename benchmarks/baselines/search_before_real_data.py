"""THE BASELINE: ``search()`` exactly as it was at commit 8d60a5f, before issue #20 (quality measured
on real conversations).

Kept so that ``bench_locomo.py`` and ``bench_retrieval.py`` can run the ranking before that issue
and the current one side by side, on the same table, in one process. It is ``ranking.py``,
``context.py`` and the search half of ``retrieval.py`` of that commit in one file, unchanged but for
the imports and the names made local (``keyword_search`` and the recall-log flush are left out).
Not part of the package; nothing but the benchmarks import it.

The baseline: both legs scored for every candidate, the BM25 of a row only the vector leg found
looked up with an id-filtered full-text query; score = 1.0 semantic + 0.03 bm25 / best + 0.3
importance + 0.6 date match + 0.3 second hop + 0.2 recency (current-state questions only);
near-duplicates collapsed; ``context=N`` attaches neighbours, and a neighbour that outscores a
returned hit takes its place.
"""

import asyncio
import re
import threading
from collections.abc import Awaitable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from memory_assets.core.durable import stat_signature
from memory_assets.core.index.async_reads import run
from memory_assets.core.index.store import MemoryStore, ReadFacts, StoreError, id_in, quote
from memory_assets.core.knowledge.recall_log import log_recalls
from memory_assets.core.knowledge.tombstones import Tombstones, read_tombstones
from memory_assets.core.models.embedder import TextEmbedder
from memory_assets.core.search.query_dates import (
    DateWindow,
    asks_current_state,
    content_windows,
    query_windows,
)
from memory_assets.core.settings import Settings
from memory_assets.core.sources import LEGACY_SOURCE_TYPE
from memory_assets.core.text import json_object, stem

DUPLICATE_COSINE = 0.95  # returned rows at least this similar are one hit
CANDIDATE_FACTOR = 4  # the vector leg's depth: max(4 x limit, 20)
_OUTPUT_KEYS = {"bm25": "full_text"}  # a serialised hit's key for a field of another name


@dataclass(frozen=True)
class Ranking:
    """The ranking's weights and candidate depths (design §5.7). The defaults were tuned on
    ``benchmarks/bench_retrieval.py``; pass another ``Ranking`` to ``search`` to compare."""

    semantic: float = 1.0
    bm25: float = 0.03
    importance: float = 0.3
    date: float = 0.6  # a row dated in a window the question names (or stating such a date)
    recency: float = 0.2  # only for questions about the current state; a tie-break otherwise
    recency_half_life_days: float = 90.0
    hop: float = 0.3  # a candidate naming someone or something the best hit names and the question does not
    hop_anchors: int = 1  # how many of the best hits the second hop reads names from
    vector_factor: int = CANDIDATE_FACTOR  # vector leg: max(vector_factor x limit, 20) rows
    text_factor: int = 5  # full-text leg: max(text_factor x limit, 50) rows
    window_factor: int = 4  # each date-filtered leg: max(window_factor x limit, 20) rows

    def vector_depth(self, limit: int) -> int:
        return max(self.vector_factor * limit, 20)

    def text_depth(self, limit: int) -> int:
        return max(self.text_factor * limit, 50)

    def window_depth(self, limit: int) -> int:
        return max(self.window_factor * limit, 20)


RANKING = Ranking()


@dataclass
class ContextLine:
    """A neighbouring line of a hit (same log block, page section or MEMORY.md zone), scored as a
    hit would be. ``offset`` is its position relative to the hit (-1: the line before)."""

    id: str
    content: str
    score: float
    offset: int
    semantic: float = 0.0
    bm25: float = 0.0
    truncated: bool = False


@dataclass
class Hit:
    """One search result: the row's fields, its score and the terms of it (``semantic``; ``bm25``,
    the row's BM25 score over the query's best; ``recency``; ``date_match``)."""

    id: str
    content: str
    score: float
    source_type: str
    source_file: str | None
    source_date: str | None
    importance: float
    category: str | None = None
    semantic: float = 0.0
    bm25: float = 0.0
    duplicates: int = 0  # near-duplicate rows collapsed into this hit
    truncated: bool = False  # content was cut to the setting's length
    zone: str | None = None  # MEMORY.md's "generated" or "manual" zone (core-file rows)
    recency: float = 0.0  # 0.5 ** (age of the fact / half-life); 0 without a fact date
    date_match: bool = False  # dated in (or stating a date in) a window the question names
    context: list[ContextLine] = field(default_factory=list)  # only with search(context=N)

    def to_dict(self) -> dict[str, Any]:
        out = _output_keys(asdict(self))
        out["context"] = [_output_keys(line) for line in out["context"]]
        return out


def _output_keys(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` in order, each under its serialised key (``bm25`` as ``full_text``)."""
    return {_OUTPUT_KEYS.get(k, k): v for k, v in fields.items()}


@dataclass
class _Scored:
    """A candidate row with both legs' scores and its ranking score."""

    row: dict[str, Any]
    semantic: float
    bm25: float
    importance: float
    recency: float
    date_match: bool
    score: float

    @property
    def id(self) -> str:
        return self.row["id"]

    def hit(self) -> Hit:
        row = self.row
        return Hit(
            id=row["id"],
            content=row["content"],
            score=round(self.score, 6),
            source_type=row.get("source_type") or LEGACY_SOURCE_TYPE,
            source_file=row.get("source_file"),
            source_date=row.get("source_date"),
            importance=self.importance,
            category=row.get("category"),
            semantic=round(self.semantic, 6),
            bm25=round(self.bm25, 6),
            zone=json_object(row.get("metadata")).get("zone")
            if row.get("source_type") == "core_file"
            else None,
            recency=round(self.recency, 6),
            date_match=self.date_match,
        )


def _sort_key(s: _Scored) -> tuple[float, float, str]:
    # Recency breaks ties only (it is in the score itself just for current-state questions).
    return (-round(s.score, 6), -s.recency, s.id)


def _fact_day(fact_date: str | None) -> date | None:
    if not fact_date:
        return None
    try:
        return date.fromisoformat(fact_date[:10])
    except ValueError:
        return None


def _recency(fact_date: str | None, today: date, half_life_days: float) -> float:
    day = _fact_day(fact_date)
    if day is None:
        return 0.0
    return float(0.5 ** (max((today - day).days, 0) / half_life_days))


def _in_windows(content: str, fact_date: str | None, windows: Sequence[DateWindow]) -> bool:
    """Whether the row is dated in a window, or states a date that falls in one."""
    day = _fact_day(fact_date)
    if day is not None and any(w.contains(day) for w in windows):
        return True
    stated = content_windows(content, day or windows[0].start)
    return any(s.start <= w.end and w.start <= s.end for s in stated for w in windows)


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


def _and(*clauses: str | None) -> str | None:
    present = [c for c in clauses if c]
    return " AND ".join(f"({c})" for c in present) or None


def _matrix(column: pa.ChunkedArray) -> np.ndarray:
    flat = column.combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(len(column), -1)


class _Scorer:
    """Scores rows of one query: both legs for every row, the date windows and the priors."""

    def __init__(
        self,
        *,
        table: Any,
        text: str,
        where: str | None,
        query_vector: Any,
        ranking: Ranking,
        windows: list[DateWindow],
        current: bool,
        today: date,
        legacy: bool,
        tombs: Tombstones,
        fts: bool,
    ) -> None:
        self.table, self.text, self.where, self.ranking = table, text, where, ranking
        self.query = None if query_vector is None else np.asarray(query_vector, dtype=np.float32)
        self.windows, self.current, self.today, self.legacy, self.tombs = (
            windows,
            current,
            today,
            legacy,
            tombs,
        )
        self.fts = fts and bool(text)
        self.bm25: dict[str, float] = {}
        self.best = 0.0
        self.text_complete = True  # the full-text leg returned every matching row (not cut at its depth)
        self.leg_best: tuple[str, float] | None = None  # the full-text leg's best row and score
        self.leg_last = 0.0  # ... and its last (lowest) score
        self.vectors: dict[str, np.ndarray] = {}

    async def bm25_of(self, clause: str, at_most: int) -> dict[str, float]:
        """BM25 scores of the (at most ``at_most``) rows under ``clause`` that share a term with the
        query. LanceDB's scores use the whole table's statistics under a filter, so they compare
        with the leg's."""
        if not self.fts:
            return {}
        data = await (
            self.table.query()
            .nearest_to_text(self.text)
            .where(_and(self.where, clause))
            .limit(at_most)
            .select(["id", "_score"])
            .to_arrow()
        )
        return dict(
            zip(data.column("id").to_pylist(), map(float, data.column("_score").to_pylist()), strict=True)
        )

    async def look_up_bm25(self, ids: Sequence[str]) -> None:
        """The BM25 score of rows the full-text leg did not return. When the leg was not cut at its
        depth, every row it missed shares no term with the query (0). Otherwise LanceDB scores them
        under an id filter: exact for rows in the full-text index (its statistics are the whole
        table's). Rows added since the last ``optimize`` are scored flat, over the filtered rows
        only; the leg's best row, scored alongside, shows it and rescales them. Either way a row the
        leg did not return scores at most the leg's last score, which bounds it."""
        missing = [i for i in ids if i not in self.bm25]
        if not self.fts or not missing:
            return
        if not self.text_complete and self.leg_best is not None:
            best_id, best_score = self.leg_best
            found = await self.bm25_of(id_in([*missing, best_id]), len(missing) + 1)
            seen = found.pop(best_id, 0.0)
            scale = best_score / seen if seen > 0 and abs(seen - best_score) > 1e-6 * best_score else 1.0
            for row_id, value in found.items():
                self.bm25[row_id] = min(value * scale, self.leg_last)
        for row_id in missing:
            self.bm25.setdefault(row_id, 0.0)

    def visible(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """``rows`` without the tombstoned ones."""
        if not (self.tombs.contents or self.tombs.claims):
            return list(rows)
        return [r for r in rows if not self.tombs.hides(r["content"])]

    async def scored(self, rows: Iterable[dict[str, Any]]) -> list[_Scored]:
        """The visible ``rows`` with both legs' scores and the priors (their BM25 looked up first)."""
        kept = self.visible(rows)
        await self.look_up_bm25([r["id"] for r in kept])
        return self.score(kept)

    def score(self, kept: Sequence[dict[str, Any]]) -> list[_Scored]:
        """Both legs and the priors for visible ``rows`` whose BM25 is known; vectors in ``self.vectors``."""
        if not kept:
            return []
        if self.query is not None:
            matrix = np.stack([self.vectors[r["id"]] for r in kept])
            norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(self.query)) or 1.0)
            cosines = (matrix @ self.query) / np.where(norms > 0, norms, 1.0)
        else:
            cosines = np.zeros(len(kept), dtype=np.float32)
        r = self.ranking
        # Without a query vector, full text is the only relevance there is: it takes the semantic
        # weight too, so the lifecycle prior never outranks the words of the query.
        text_weight = r.bm25 if self.query is not None else r.bm25 + r.semantic
        out = []
        for row, cosine in zip(kept, cosines, strict=True):
            if self.legacy:
                row = _legacy_row(row)
            importance = float(row["importance"]) if row.get("importance") is not None else 0.5
            semantic = float(cosine)
            bm25 = self.bm25.get(row["id"], 0.0) / self.best if self.best > 0 else 0.0
            recency = _recency(row.get("fact_date"), self.today, r.recency_half_life_days)
            in_window = bool(self.windows) and _in_windows(row["content"], row.get("fact_date"), self.windows)
            score = (
                r.semantic * semantic
                + text_weight * bm25
                + r.importance * importance
                + (r.date if in_window else 0.0)
                + (r.recency * recency if self.current else 0.0)
            )
            out.append(_Scored(row, semantic, bm25, importance, recency, in_window, score))
        return out


_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s?$")


def _words(text: str) -> set[str]:
    return {_POSSESSIVE.sub("", w).lower() for w in _WORD.findall(text)}


def _second_hop(scored: list[_Scored], query: str, ranking: Ranking, limit: int) -> list[_Scored]:
    """Multi-hop questions ("what does Iris's sister do?"): the best hit names a bridge ("Iris's
    sister is called Thandiwe") that the answer names in turn ("Thandiwe is a beekeeper"). The
    names in the best ``hop_anchors`` hits that the question does not hold lift the other
    candidates naming them by ``hop``. A name is a capitalised word that few candidates share; a
    capitalised first word also never appears in lower case among the candidates (a log line
    starts with its verb: "Drinks", "Went"). Only candidates already found are lifted, and only
    when there are more of them than places: no extra query."""
    if len(scored) <= limit:
        return scored
    in_query = {stem(w) for w in _words(query)}
    names: dict[str, bool] = {}  # name -> seen as the first word
    for s in scored[: ranking.hop_anchors]:
        for i, m in enumerate(_WORD.finditer(s.row["content"])):
            word = _POSSESSIVE.sub("", m.group(0))
            if word[0].isupper() and len(word) > 2 and stem(word.lower()) not in in_query:
                names[word] = names.get(word, False) or i == 0
    if not names:
        return scored
    rest = scored[ranking.hop_anchors :]
    rare = max(3, len(scored) // 10)
    bridges = []
    for word, first in names.items():
        pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
        holders = [s for s in scored if pattern.search(s.row["content"])]
        if len(holders) > rare:
            continue  # a common word, not a name
        if first and any(re.search(rf"\b{re.escape(word.lower())}\b", s.row["content"]) for s in scored):
            continue  # a sentence's verb ("Drinks ..."): it appears in lower case too
        bridges.append(pattern)
    lifted = False
    for s in rest:
        if any(p.search(s.row["content"]) for p in bridges):
            s.score += ranking.hop
            lifted = True
    return sorted(scored, key=_sort_key) if lifted else scored


def _collapse(
    scored: Sequence[_Scored], vectors: dict[str, np.ndarray], limit: int
) -> list[tuple[_Scored, int]]:
    """Keep the best of each group of near-duplicates (cosine >= 0.95 to a kept row), counting the
    rest on it, until ``limit`` rows are kept. ``scored`` is best first."""
    if not scored:
        return []
    matrix = _normalised_rows(np.stack([vectors[s.id] for s in scored]))
    kept_rows = np.empty((limit, matrix.shape[1]), dtype=matrix.dtype)
    kept: list[int] = []
    counts: list[int] = []
    for i in range(len(scored)):
        if kept:
            similar = kept_rows[: len(kept)] @ matrix[i]
            j = int(np.argmax(similar))
            if similar[j] >= DUPLICATE_COSINE:
                counts[j] += 1
                continue
        if len(kept) < limit:
            kept_rows[len(kept)] = matrix[i]
            kept.append(i)
            counts.append(0)
    return [(scored[i], n) for i, n in zip(kept, counts, strict=True)]


def _normalised_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def _normalised(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def _block_key(row: dict[str, Any]) -> tuple[object, ...]:
    """The block a row belongs to: a log's conversation block (its ``## HH:MM — chat`` header), a
    page's section (its heading), a core file's zone. Rows of one block are ordered by chunk_index."""
    meta = json_object(row.get("metadata"))
    kind = row.get("source_type")
    if kind == "archive_log":
        part: tuple[object, ...] = (meta.get("time"), meta.get("chat"))
    elif kind == "notebook":
        part = (meta.get("section"),)
    else:
        part = (meta.get("zone"),)
    return (kind, row.get("source_file"), *part)


async def _with_context(
    kept: list[tuple[_Scored, int]], scorer: _Scorer, columns: list[str], context: int, limit: int
) -> tuple[list[tuple[_Scored, int]], dict[str, list[ContextLine]]]:
    """Fetch the hits' neighbours (one query), score them as hits, let a neighbour that outscores a
    returned hit take its place, then attach each final hit's remaining neighbours as context."""
    span = 2 * context + 2  # lines either side: a promoted neighbour's own neighbours are in reach
    ranges: dict[tuple[str, str], tuple[int, int]] = {}
    for s, _ in kept:
        row = s.row
        index = row.get("chunk_index")
        if index is None or row.get("source_file") is None or row.get("source_type") is None:
            continue
        key = (row["source_type"], row["source_file"])
        low, high = ranges.get(key, (index, index))
        ranges[key] = (min(low, index), max(high, index))
    if not ranges:
        return kept, {}
    near = " OR ".join(
        f"(source_type = {quote(t)} AND source_file = {quote(f)} AND chunk_index >= {low - span} "
        f"AND chunk_index <= {high + span})"
        for (t, f), (low, high) in ranges.items()
    )
    data = await scorer.table.query().where(_and(scorer.where, near) or near).select(columns).to_arrow()
    known = {s.id: s for s, _ in kept}
    fresh: list[dict[str, Any]] = []
    if data.num_rows:
        rows = data.drop_columns(["vector"]).to_pylist()
        matrix = _matrix(data.column("vector"))
        for i, row in enumerate(rows):
            if row["id"] not in known:
                scorer.vectors.setdefault(row["id"], matrix[i])
                fresh.append(row)
    neighbours = {s.id: s for s in await scorer.scored(fresh)}
    by_block: dict[tuple[object, ...], list[_Scored]] = {}
    for s in [*known.values(), *neighbours.values()]:
        by_block.setdefault(_block_key(s.row), []).append(s)
    for members in by_block.values():
        members.sort(key=lambda s: (s.row.get("chunk_index") or 0, s.id))
    position = {s.id: (key, i) for key, members in by_block.items() for i, s in enumerate(members)}

    def around(s: _Scored) -> list[tuple[int, _Scored]]:
        key, i = position[s.id]
        members = by_block[key]
        return [
            (j - i, members[j])
            for j in range(max(0, i - context), min(len(members), i + context + 1))
            if j != i
        ]

    # A neighbour stands on its own when it outscores a returned hit (never as a near-duplicate).
    pool: dict[str, _Scored] = dict(known)
    for s, _ in kept:
        for _, n in around(s):
            if n.id not in pool:
                pool[n.id] = n
    counts = {s.id: duplicates for s, duplicates in kept}
    final: list[tuple[_Scored, int]] = []
    final_vectors: list[np.ndarray] = []
    for s in sorted(pool.values(), key=_sort_key):
        if len(final) == limit:
            break
        vector = _normalised(scorer.vectors[s.id])
        if (
            s.id not in counts
            and final_vectors
            and float(np.max(np.stack(final_vectors) @ vector)) >= DUPLICATE_COSINE
        ):
            continue
        final.append((s, counts.get(s.id, 0)))
        final_vectors.append(vector)
    # Context: each final hit's neighbours, never a hit, never a line already shown with a better hit.
    shown = {s.id for s, _ in final}
    contexts: dict[str, list[ContextLine]] = {}
    for s, _ in final:
        lines = []
        for offset, n in around(s):
            if n.id in shown:
                continue
            shown.add(n.id)
            lines.append(
                ContextLine(
                    id=n.id,
                    content=n.row["content"],
                    score=round(n.score, 6),
                    offset=offset,
                    semantic=round(n.semantic, 6),
                    bm25=round(n.bm25, 6),
                )
            )
        contexts[s.id] = lines
    return final, contexts


DEFAULT_MAX_CHARS = 2000
ANN_NPROBES = 20
# Candidates re-ranked on full vectors. Every candidate's cosine is computed exactly in the ranking
# anyway, but without the refine the 8-bit ANN brings other rows into the pool: on bench_retrieval's
# padded table, recall@10 fell on multi-hop and temporal questions (design §5.7).
ANN_REFINE = 5
_FTS_SAFE = re.compile(r"[^\w\s]", re.UNICODE)
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-recall-log")
_RECALLS: list[Future[None]] = []  # recall-log writes not yet known to be done (flush_recalls waits)
_RECALLS_LOCK = threading.Lock()
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
    "chunk_index",
]
HIT_COLUMNS = [c for c in COLUMNS if c not in ("fact_date", "chunk_index")]  # what a Hit shows
LEGACY_COLUMNS = ["id", "content", "importance", "metadata", "created_at"]


class EmptyIndexError(StoreError):
    """Nothing to search: the index was never built, or holds no rows."""


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


def _window_clause(windows: Sequence[DateWindow]) -> str:
    return " OR ".join(
        f"(fact_date >= {quote(w.start.isoformat())} AND fact_date <= {quote(w.end.isoformat())})"
        for w in windows
    )


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
    context: int = 0,
    ranking: Ranking | None = None,
) -> list[Hit]:
    """The ``limit`` best rows for ``query``. Pass ``query_vector`` to reuse an embedding.

    ``settings`` (the memory home's) supplies the tombstones filtered at query time, the recall
    log and the content cap; without it nothing is filtered or logged and contents are cut at
    2,000 characters. ``log_recall=False`` keeps a lookup out of the recall signal (a check's
    probe, the dream's look-ups: not something the assistant handed out). ``today`` anchors
    relative dates in the question ("last week") and the recency of facts (default: today, UTC).
    ``context=N`` attaches up to N neighbouring lines on each side of every hit (``Hit.context``).
    ``ranking`` replaces the tuned weights and depths (benchmarks compare rankings with it)."""
    facts, table = _latest(store)
    if limit <= 0 or not query.strip():
        return []
    if facts.legacy and (source_types or date_from or date_to):
        store.require_current("filtering by source type or fact date")
    today = today or datetime.now(UTC).date()
    where = _filters(store, source_types, date_from, date_to, single_user=facts.single_user)
    if query_vector is None and embedder is not None:
        query_vector = embedder.embed_query(query)
    if query_vector is not None:
        facts.check_query_width(len(query_vector), f"{store.uri} ({store.table_name})")
    text = _fts_words(query)
    scorer = _Scorer(
        table=table,
        text=text,
        where=where,
        query_vector=query_vector,
        ranking=ranking or RANKING,
        windows=query_windows(query, today),
        current=asks_current_state(query),
        today=today,
        legacy=facts.legacy,
        tombs=_tombstoned(settings.tombstones_path) if settings is not None else Tombstones(),
        fts=facts.fts,
    )
    hits = run(_search(scorer, query, ann=facts.ann, rows=facts.rows, limit=limit, context=context))
    _truncate(hits, settings)
    if settings is not None and log_recall and hits:  # off the caller's path: the signal is best effort
        future = _POOL.submit(
            log_recalls,
            settings.recall_log_path,
            [(h.content, h.source_type) for h in hits],
            settings.recall_log_max_bytes,
        )
        with _RECALLS_LOCK:
            _RECALLS[:] = [f for f in _RECALLS if not f.done()] + [future]
    return hits


def _fts_words(query: str) -> str:
    """The query's words for the full-text index (punctuation would be read as query syntax)."""
    return " ".join(_FTS_SAFE.sub(" ", query).split())


def _latest(store: MemoryStore) -> "tuple[ReadFacts, Any]":
    """The latest version's read facts and the async table handle; ``EmptyIndexError`` when the
    index was never built or holds no rows."""
    latest = run(store.read_latest())
    if latest is None:
        raise EmptyIndexError(
            f"the index at {store.uri} has never been built (no table {store.table_name}); "
            "run `memory-assets reindex`"
        )
    if latest[0].rows == 0:
        raise EmptyIndexError(f"the index at {store.uri} is empty; run `memory-assets reindex`")
    return latest


def _truncate(hits: Sequence[Hit], settings: Settings | None) -> None:
    """Cut each hit's content (and its context lines') to the setting's length, marking the cut."""
    max_chars = settings.search_max_chars if settings is not None else DEFAULT_MAX_CHARS
    for hit in hits:
        if len(hit.content) > max_chars:
            hit.content, hit.truncated = hit.content[:max_chars], True
        for line in hit.context:
            if len(line.content) > max_chars:
                line.content, line.truncated = line.content[:max_chars], True


async def _search(
    scorer: _Scorer, query: str, *, ann: bool, rows: int, limit: int, context: int
) -> list[Hit]:
    """The queries and the ranking of one search, awaited in one coroutine on the caller's thread
    (``async_reads``): the legs run side by side, then the BM25 look-up, then the context.
    ``scorer.table`` is the async handle ``MemoryStore.read_latest`` opened; ``rows`` the table's."""
    table, ranking, where, windows = scorer.table, scorer.ranking, scorer.where, scorer.windows
    columns = [*(LEGACY_COLUMNS if scorer.legacy else COLUMNS), "vector"]
    text_depth = ranking.text_depth(limit)

    def vector_rows(clause: str | None, k: int) -> Awaitable[pa.Table]:
        q = table.query().nearest_to(scorer.query).distance_type("cosine")
        if clause:
            q = q.where(clause)
        if ann:
            q = q.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE)
        return q.limit(k).select([*columns, "_distance"]).to_arrow()

    def text_rows(clause: str | None, k: int) -> Awaitable[pa.Table]:
        q = table.query().nearest_to_text(scorer.text)
        if clause:
            q = q.where(clause)
        return q.limit(k).select([*columns, "_score"]).to_arrow()

    # The legs are independent LanceDB queries, awaited together. A question that names dates adds
    # a leg of each kind filtered to its windows, so a fact of that day is a candidate whatever its
    # words.
    use_text = scorer.fts  # a full-text index and words to search for
    window_where = _and(where, _window_clause(windows)) if windows and not scorer.legacy else None
    legs: list[Awaitable[pa.Table]] = []
    if use_text:
        legs.append(text_rows(where, text_depth))
        if window_where:
            legs.append(text_rows(window_where, ranking.window_depth(limit)))
    if scorer.query is not None:
        legs.append(vector_rows(where, ranking.vector_depth(limit)))
        if window_where:
            legs.append(vector_rows(window_where, ranking.window_depth(limit)))
    results = await asyncio.gather(*legs)
    if use_text:
        leg = results[0]
        scorer.text_complete = leg.num_rows < text_depth or rows <= text_depth
        if leg.num_rows:
            scores = leg.column("_score").to_pylist()
            scorer.leg_best = (leg.column("id")[0].as_py(), float(scores[0]))
            scorer.leg_last = float(min(scores))
    found: dict[str, dict[str, Any]] = {}
    for data in results:
        _collect(data, found, scorer)
    scorer.best = max(scorer.bm25.values(), default=0.0)
    scored = sorted(await scorer.scored(found.values()), key=_sort_key)
    if ranking.hop:
        scored = _second_hop(scored, query, ranking, limit)
    kept = _collapse(scored, scorer.vectors, limit)
    if context > 0 and kept and not scorer.legacy:
        kept, contexts = await _with_context(kept, scorer, columns, context, limit)
    else:
        contexts = {}
    hits = []
    for s, duplicates in kept:
        hit = s.hit()
        hit.duplicates = duplicates
        hit.context = contexts.get(s.id, [])
        hits.append(hit)
    return hits


def _collect(data: pa.Table, found: dict[str, dict[str, Any]], scorer: _Scorer) -> None:
    """Rows of one leg into ``found`` (first seen wins), their vectors and BM25 scores into ``scorer``."""
    if data.num_rows == 0:
        return
    rows = data.drop_columns(["vector"]).to_pylist()
    matrix = _matrix(data.column("vector"))
    for i, row in enumerate(rows):
        row_id = row["id"]
        found.setdefault(row_id, row)
        scorer.vectors.setdefault(row_id, matrix[i])
        if "_score" in row:
            scorer.bm25[row_id] = float(row["_score"])
