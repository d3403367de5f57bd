"""Retrieval as a library call: hybrid (vector + full text) search, and the write path's keyword search.

``search`` runs its legs, LanceDB queries awaited side by side in one coroutine
(``async_reads``): a full-text leg max(5 x limit, 50) rows deep and a vector leg max(4 x limit,
20) deep; a question that names dates (``query_dates.py``) adds a leg of each kind filtered to
those windows (max(4 x limit, 20) each), so a fact of that day is a candidate whatever its words.
The candidates are then scored, lifted by the second hop and collapsed (``ranking.py``, which
states the score), and given their neighbouring lines when asked (``context.py``).

What an assistant can rely on (design §5.7), besides what the ranking and the context state:

* each content is cut to ``Settings.search_max_chars`` (``truncated: true`` when it was);
* tombstoned content is filtered at query time, so forgetting is immediate, not up to the next
  reindex;
* an index that was never built, or is empty, raises ``EmptyIndexError`` naming ``reindex``;
* a query vector of another width than the table's raises ``VectorWidthMismatch`` naming the fix;
* a damaged table raises ``DamagedTableError`` (naming what is wrong and ``reindex --rebuild``)
  before any of its doubtful files is read (``table_damage.py``), never a raw LanceDB error.

``keyword_search`` is the write path's recall of known facts: one BM25 query and nothing else,
over the claims only (never a transcript row: what was said is no claim to confirm against).

The read path never writes to the index and never migrates a table: an assistant-era table is
searched as it is. The recall signal goes to ``.state/recall_log.jsonl`` (rotated by size),
written by one background thread off the caller's path (best effort); ``flush_recalls`` waits for
the writes logged so far.
"""

import asyncio
import re
import threading
from collections.abc import Awaitable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from memory_assets.core.durable import stat_signature
from memory_assets.core.index.async_reads import run
from memory_assets.core.index.store import MemoryStore, ReadFacts, StoreError, quote
from memory_assets.core.knowledge.recall_log import log_recalls
from memory_assets.core.knowledge.tombstones import Tombstones, read_tombstones
from memory_assets.core.models.embedder import TextEmbedder
from memory_assets.core.search.context import with_neighbours
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.query_dates import DateWindow, asks_current_state, query_windows
from memory_assets.core.search.ranking import (
    RANKING,
    Hit,
    Ranking,
    Scored,
    Scorer,
    and_clauses,
    collapse,
    legacy_row,
    second_hop,
    sort_key,
    vector_matrix,
)
from memory_assets.core.search.turns import SAID_COLUMNS, attach_said, merge, said_clause
from memory_assets.core.settings import Settings
from memory_assets.core.sources import LEGACY_SOURCE_TYPE, TRANSCRIPT

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
# The recall tier's split: the claim legs read every row but the turns, the turn legs only turns.
CLAIM_ROWS = f"source_type IS NULL OR source_type != {quote(TRANSCRIPT)}"
TURN_ROWS = f"source_type = {quote(TRANSCRIPT)}"
SAID_LIMIT = 2000  # the turns of the final facts' days read for their ``said`` (one query)


class EmptyIndexError(StoreError):
    """Nothing to search: the index was never built, or holds no rows."""


_TOMBSTONES: dict[str, tuple[object, Tombstones]] = {}


def current_tombstones(path: Path) -> Tombstones:
    """The tombstones, re-read only when the file changed (one stat per search)."""
    sig = stat_signature(path)
    hit = _TOMBSTONES.get(str(path))
    if hit is None or hit[0] != sig:
        hit = (sig, read_tombstones(path) if sig is not None else Tombstones())
        _TOMBSTONES[str(path)] = hit
    return hit[1]


def where_clause(
    store: MemoryStore,
    source_types: Sequence[str] | None,
    since: date | None,
    until: date | None,
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
    if since:
        clauses.append(f"fact_date >= {quote(since.isoformat())}")
    if until:
        clauses.append(f"fact_date <= {quote(until.isoformat())}")
    return " AND ".join(clauses) or None


def _window_clause(windows: Sequence[DateWindow]) -> str:
    return " OR ".join(
        f"(fact_date >= {quote(w.start.isoformat())} AND fact_date <= {quote(w.end.isoformat())})"
        for w in windows
    )


def search(
    store: MemoryStore,
    query: str,
    filters: SearchFilters | None = None,
    *,
    embedder: TextEmbedder | None = None,
    settings: Settings | None = None,
    query_vector: Any = None,
    log_recall: bool = True,
    ranking: Ranking | None = None,
) -> list[Hit]:
    """The ``filters.limit`` best rows for ``query`` among those ``filters`` keeps (``filters.py``:
    source types, the facts' days, the neighbouring lines, the day asked as of; None: the
    defaults). Pass ``query_vector`` to reuse an embedding.

    ``settings`` (the memory home's) supplies the tombstones filtered at query time, the recall
    log and the content cap; without it nothing is filtered or logged and contents are cut at
    2,000 characters. ``log_recall=False`` keeps a lookup out of the recall signal (a check's
    probe, the dream's look-ups: not something the assistant handed out). ``filters.today``
    anchors relative dates in the question ("last week") and the recency of facts (default:
    today, UTC). ``filters.context=N`` attaches up to N neighbouring lines on each side of every
    hit (``Hit.context``). ``ranking`` replaces the tuned weights and depths (benchmarks compare
    rankings with it)."""
    filters = filters or SearchFilters()
    limit, source_types = filters.limit, filters.source_types
    if not query.strip() or (query_vector is None and embedder is not None and not store.opened()):
        store.read(lambda: _latest(store))  # an index never built, or empty, is said before a model loads
        if not query.strip():
            return []
    # The question is embedded before the version is read: a search holds the version it reads for
    # its queries only, never for a model's load (design §8.6).
    if query_vector is None and embedder is not None:
        query_vector = embedder.embed_query(query)
    today = filters.today or datetime.now(UTC).date()
    tombs = current_tombstones(settings.tombstones_path) if settings is not None else Tombstones()

    def read() -> list[Hit]:
        facts, table = _latest(store)
        if facts.legacy and (source_types or filters.since or filters.until):
            store.require_current("filtering by source type or fact date")
        where = where_clause(store, source_types, filters.since, filters.until, single_user=facts.single_user)
        if query_vector is not None:
            facts.check_query_width(len(query_vector), f"{store.uri} ({store.table_name})")
        scorer = Scorer(
            table=table,
            text=_fts_words(query),
            where=where,
            query_vector=query_vector,
            ranking=ranking or RANKING,
            windows=query_windows(query, today),
            current=asks_current_state(query),
            today=today,
            legacy=facts.legacy,
            tombs=tombs,
            fts=facts.fts,
        )
        turns = facts.turns and not facts.legacy
        split = turns and (not source_types or (TRANSCRIPT in source_types and len(set(source_types)) > 1))
        said_where = where_clause(store, None, None, None, single_user=facts.single_user) if turns else None
        return run(
            _search(
                scorer,
                query,
                ann=facts.ann,
                limit=limit,
                context=filters.context,
                split=split,
                turns=turns,
                said_where=said_where,
            )
        )

    # One read: a damaged file is named, with the fix, not a raw LanceDB error; a version pruned
    # under it by a writer elsewhere is read again at the latest (``MemoryStore.read``).
    hits = store.read(read)
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


def keyword_search(
    store: MemoryStore, query: str, *, settings: Settings | None = None, limit: int = 10
) -> list[Hit]:
    """The ``limit`` rows whose words best match ``query`` by BM25 alone, tombstones filtered and
    contents capped as ``search`` does: the write path's recall of known facts (``process.py``).

    One full-text query and nothing else: no embedding, no vectors read, no priors, no date
    windows, no collapse, no recall log. Its caller compares the texts itself (a lexical
    classifier), so the words are the whole question; and near-duplicates stay separate hits, so
    a daily-log copy of a fact is never folded into a MEMORY.md copy the classifier may not defer
    to. ``score`` and ``bm25`` are the row's BM25 score and that score over the best one's.
    Empty without a full-text index; raises ``EmptyIndexError`` like ``search``."""
    return store.read(lambda: _keyword_search(store, query, settings=settings, limit=limit))


def _keyword_search(store: MemoryStore, query: str, *, settings: Settings | None, limit: int) -> list[Hit]:
    """``keyword_search``'s read (``MemoryStore.read`` reads it again when its version was pruned)."""
    facts, table = _latest(store)
    text = _fts_words(query)
    if limit <= 0 or not text or not facts.fts:
        return []
    tombs = current_tombstones(settings.tombstones_path) if settings is not None else Tombstones()
    where = where_clause(store, None, None, None, single_user=facts.single_user)
    if facts.turns and not facts.legacy:
        # The seeds' guard: a match found only in a chat transcript can never divert a write (what
        # was said is no claim; the classifier must never confirm against it). Never read them.
        where = and_clauses(where, CLAIM_ROWS)
    columns = [*(LEGACY_COLUMNS if facts.legacy else HIT_COLUMNS), "_score"]

    async def leg(k: int) -> pa.Table:
        q = table.query().nearest_to_text(text)
        if where:
            q = q.where(where)
        return await q.limit(k).select(columns).to_arrow()

    depth = limit + len(tombs.contents) + len(tombs.claims)  # room for the hidden rows, usually none
    while True:
        rows = run(leg(depth)).to_pylist()
        visible = [r for r in rows if not tombs.hides(r["content"])]
        if len(visible) >= limit or len(rows) < depth:
            break
        depth *= 4  # more hidden rows matched than the room left for them
    best = max((float(r["_score"]) for r in visible), default=0.0)
    hits = []
    for row in visible[:limit]:
        score = float(row["_score"])
        importance = float(row["importance"]) if row.get("importance") is not None else 0.5
        scored = Scored(
            row=legacy_row(row) if facts.legacy else row,
            semantic=0.0,
            bm25=score / best if best > 0 else 0.0,
            importance=importance,
            recency=0.0,
            date_match=False,
            score=score,
        )
        hits.append(scored.hit())
    _truncate(hits, settings)
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
    scorer: Scorer,
    query: str,
    *,
    ann: bool,
    limit: int,
    context: int,
    split: bool = False,
    turns: bool = False,
    said_where: str | None = None,
) -> list[Hit]:
    """The queries and the ranking of one search, awaited in one coroutine on the caller's thread
    (``async_reads``): the legs run side by side, then the context, then the final facts' turns.
    ``scorer.table`` is the async handle ``MemoryStore.read_latest`` opened.

    ``turns``: the table holds transcript rows (the recall tier). ``split``: facts and turns are
    both searched, so each leg of the claims (every row but the turns) has a turn leg beside it
    (``Ranking.turn_*_depth``): 300k turns never crowd 100k facts out of a leg, and a turn that
    matches is a candidate whatever the facts. The date-window legs read both. Among the
    candidates a fact and its turn are one (``turns.merge``)."""
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
    window_where = and_clauses(where, _window_clause(windows)) if windows and not scorer.legacy else None
    claims = and_clauses(where, CLAIM_ROWS) if split else where
    turn_where = and_clauses(where, TURN_ROWS) if split else None
    legs: list[Awaitable[pa.Table]] = []
    if use_text:
        legs.append(text_rows(claims, text_depth))
        if turn_where:
            legs.append(text_rows(turn_where, ranking.turn_text_depth(limit)))
        if window_where:
            legs.append(text_rows(window_where, ranking.window_depth(limit)))
    if scorer.query is not None:
        legs.append(vector_rows(claims, ranking.vector_depth(limit)))
        if turn_where:
            legs.append(vector_rows(turn_where, ranking.turn_vector_depth(limit)))
        if window_where:
            legs.append(vector_rows(window_where, ranking.window_depth(limit)))
    results = await asyncio.gather(*legs)
    found: dict[str, dict[str, Any]] = {}
    for data in results:
        _collect(data, found, scorer)
    scored = sorted(scorer.scored(found.values()), key=sort_key)
    if turns:
        scored = merge(scored)
    if ranking.hop:
        scored = second_hop(scored, query, ranking, limit)
    kept = collapse(scored, scorer.vectors, limit)
    if kept and not scorer.legacy and (context > 0 or ranking.neighbour > 0):
        kept, contexts = await with_neighbours(kept, scorer, columns, context, limit)
    else:
        contexts = {}
    said_of = said_clause(s for s, _ in kept) if turns else None
    if said_of:
        data = (
            await scorer.table.query()
            .where(and_clauses(said_where, said_of))
            .select(SAID_COLUMNS)
            .limit(SAID_LIMIT)
            .to_arrow()
        )
        attach_said([s for s, _ in kept], data)
    hits = []
    for s, duplicates in kept:
        hit = s.hit()
        hit.duplicates = duplicates
        hit.context = contexts.get(s.id, [])
        hits.append(hit)
    return hits


def _collect(data: pa.Table, found: dict[str, dict[str, Any]], scorer: Scorer) -> None:
    """Rows of one leg into ``found`` (first seen wins), their vectors into ``scorer``."""
    if data.num_rows == 0:
        return
    rows = data.drop_columns(["vector"]).to_pylist()
    matrix = vector_matrix(data.column("vector"))
    for i, row in enumerate(rows):
        row_id = row["id"]
        found.setdefault(row_id, row)
        scorer.vectors.setdefault(row_id, matrix[i])


def flush_recalls() -> None:
    """Wait until every recall logged so far is written (tests; a process about to exit)."""
    with _RECALLS_LOCK:
        pending = list(_RECALLS)
    for future in pending:
        future.exception()  # waits; a failed write is the best-effort signal's, not the caller's
