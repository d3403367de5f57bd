"""How search ranks its candidates: the weights, a row's score, the second hop, the collapse.

Every candidate is scored on both legs (design §5.7)::

    score = 1.0 * semantic + 0.04 * bm25 + 0.3 * importance
          + 0.6  [the fact is dated in, or states a date in, a window the question names]
          + 0.3  [it names what the best hit names and the question does not: the second hop]
          + 0.2 * recency           (only when the question asks about the current state)
          + 0.04 + (0.5 - 0.04) * bm25   [a turn (a transcript row): its full-text weight is 0.5]
          + 0.5 * 1.0 * (anchor's semantic - its own)   [a log line next to one of the two
                  best hits, when that hit's cosine is at least 0.4: the neighbour lift]

``semantic`` is the cosine of the query and the row's stored vector, computed for every candidate
whichever leg found it; ``bm25`` is the row's BM25 score for the query, with the query's candidates
as the collection (``lexical.py``), divided by the best candidate's: computed from the rows' text
for every candidate whichever leg found it, so it never depends on the full-text index's state
(whether an optimize has run). ``recency`` is ``0.5 ** (age / 90 days)`` of the FACT (its log date or the page's
``updated``); on any other question it only breaks ties. Dates in the question ("on 12 May", "in
March 2026", "last week") are windows (``query_dates.py``). Without an embedder it is full-text
only, and full text takes the semantic weight too (1.04). The weights and the legs' candidate
depths are ``Ranking``'s defaults, tuned on real conversations (``benchmarks/bench_locomo.py``,
LoCoMo's dev split) and ``benchmarks/bench_retrieval.py``'s generator together (design §5.7).

The order is total: equal scores go to the more recent fact, then to the smaller id. The second
hop only lifts candidates already found, with no extra query (``second_hop``); the neighbour
lift reads the lines next to the best hits with one query (``context.py``). Near-duplicate
hits (cosine >= 0.95 between returned rows) collapse into the best one, which carries how many it
absorbed (``Hit.duplicates``), so a fact repeated on many days cannot fill the top k.

``Scorer`` holds one query's scoring state (its lexical collection, vectors, windows and
tombstones, and the table handle ``context.py`` reads neighbours through); it never writes. ``Hit`` and ``ContextLine`` are
what search hands out; ``Hit.to_dict()`` writes the ``bm25`` fraction under the key
``full_text``, the key its readers know.
"""

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

import numpy as np
import pyarrow as pa

from memory_assets.core.knowledge.tombstones import Tombstones
from memory_assets.core.search.lexical import Lexical
from memory_assets.core.search.query_dates import DateWindow, content_windows
from memory_assets.core.sources import LEGACY_SOURCE_TYPE, TRANSCRIPT
from memory_assets.core.text import json_object, stem

DUPLICATE_COSINE = 0.95  # returned rows at least this similar are one hit
CANDIDATE_FACTOR = 4  # the vector leg's depth: max(4 x limit, 20)
_OUTPUT_KEYS = {"bm25": "full_text"}  # a serialised hit's key for a field of another name


@dataclass(frozen=True)
class Ranking:
    """The ranking's weights and candidate depths (design §5.7). The defaults were tuned on
    ``benchmarks/bench_locomo.py`` and ``benchmarks/bench_retrieval.py`` together; pass another
    ``Ranking`` to ``search`` to compare."""

    semantic: float = 1.0
    bm25: float = 0.04
    importance: float = 0.3
    date: float = 0.6  # a row dated in a window the question names (or stating such a date)
    recency: float = 0.2  # only for questions about the current state; a tie-break otherwise
    recency_half_life_days: float = 90.0
    hop: float = 0.3  # a candidate naming someone or something the best hit names and the question does not
    hop_anchors: int = 1  # how many of the best hits the second hop reads names from
    neighbour: float = 0.5  # a line next to one of the best hits takes this share of the hit's lead over it
    neighbour_anchors: int = 2  # how many of the best hits lift their neighbours
    neighbour_floor: float = 0.4  # ... if they match the question on meaning (cosine at least this)
    vector_factor: int = CANDIDATE_FACTOR  # vector leg: max(vector_factor x limit, 20) rows
    text_factor: int = 5  # full-text leg: max(text_factor x limit, 50) rows
    window_factor: int = 4  # each date-filtered leg: max(window_factor x limit, 20) rows
    # The recall tier (transcript rows: what was said): added to a turn's score, so a fact or a page
    # that matches answers first and a turn fills where none does; the turn legs' depths.
    # A turn's importance is 0.3 against a fact's 0.5 (0.06 of score): +0.04 leaves a fact that
    # matches as well ahead by 0.02, so facts answer first and a turn fills where none matches.
    turn: float = 0.04
    # The full-text weight of a turn: said words carry the names and specifics a question asks by
    # (a raw message is long and loose, so its meaning vector is a blur of them), while a fact is
    # short and already says one thing (the facts keep ``bm25``: on bench_retrieval's generator a
    # higher weight on facts cost 5 points of macro recall@10). Tuned end to end on the dev data
    # (bench_e2e.py: LoCoMo's dev split, the LongMemEval-S dev sample; design §5.7).
    turn_bm25: float = 0.5
    turn_vector_factor: int = CANDIDATE_FACTOR
    turn_text_factor: int = 5

    def vector_depth(self, limit: int) -> int:
        return max(self.vector_factor * limit, 20)

    def text_depth(self, limit: int) -> int:
        return max(self.text_factor * limit, 50)

    def window_depth(self, limit: int) -> int:
        return max(self.window_factor * limit, 20)

    def turn_vector_depth(self, limit: int) -> int:
        return max(self.turn_vector_factor * limit, 20)

    def turn_text_depth(self, limit: int) -> int:
        return max(self.turn_text_factor * limit, 50)


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
    the row's BM25 score over the best candidate's; ``recency``; ``date_match``)."""

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
    chat: str | None = None  # the conversation: a log block's chat (8 characters), a turn's chat id
    time: str | None = None  # the block's or the turn's time of day, HH:MM (UTC)
    ts: str | None = None  # a turn's time (ISO, UTC)
    said: dict[str, Any] | None = None  # a fact's turn: what was said, where it was written from
    context: list[ContextLine] = field(default_factory=list)  # only with search(context=N)

    def to_dict(self) -> dict[str, Any]:
        out = _output_keys(asdict(self))
        out["context"] = [_output_keys(line) for line in out["context"]]
        return out


def _output_keys(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` in order, each under its serialised key (``bm25`` as ``full_text``)."""
    return {_OUTPUT_KEYS.get(k, k): v for k, v in fields.items()}


@dataclass
class Scored:
    """A candidate row with both legs' scores and its ranking score."""

    row: dict[str, Any]
    semantic: float
    bm25: float
    importance: float
    recency: float
    date_match: bool
    score: float
    said: dict[str, Any] | None = None  # the turn this fact was written from (``turns.py``)

    @property
    def id(self) -> str:
        return self.row["id"]

    def hit(self) -> Hit:
        row = self.row
        meta = json_object(row.get("metadata"))
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
            zone=meta.get("zone") if row.get("source_type") == "core_file" else None,
            recency=round(self.recency, 6),
            date_match=self.date_match,
            chat=meta.get("chat") if isinstance(meta.get("chat"), str) else None,
            time=meta.get("time") if isinstance(meta.get("time"), str) else None,
            ts=meta.get("ts") if isinstance(meta.get("ts"), str) else None,
            said=self.said,
        )


def sort_key(s: Scored) -> tuple[float, float, str]:
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


def legacy_row(row: dict[str, Any]) -> dict[str, Any]:
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


def and_clauses(*clauses: str | None) -> str | None:
    present = [c for c in clauses if c]
    return " AND ".join(f"({c})" for c in present) or None


def vector_matrix(column: pa.ChunkedArray) -> np.ndarray:
    flat = column.combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(len(column), -1)


class Scorer:
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
        self.lexical: Lexical | None = None  # the candidates' BM25 (lexical.py), set by the first scored()
        self.vectors: dict[str, np.ndarray] = {}

    def visible(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """``rows`` without the tombstoned ones (a turn: without the ones a person's forgetting
        reaches, ``Tombstones.hides_turn``)."""
        if not (self.tombs.contents or self.tombs.claims):
            return list(rows)
        return [
            r
            for r in rows
            if not (
                self.tombs.hides_turn(r["content"])
                if r.get("source_type") == TRANSCRIPT
                else self.tombs.hides(r["content"])
            )
        ]

    def scored(self, rows: Iterable[dict[str, Any]]) -> list[Scored]:
        """The visible ``rows`` with both legs' scores and the priors. The first call's rows are
        the query's candidates: the collection the lexical score is computed over (``lexical.py``);
        later calls (a hit's neighbours) are scored against that same collection."""
        kept = self.visible(rows)
        if self.lexical is None:
            self.lexical = Lexical(self.text, (r["content"] for r in kept), dated=bool(self.windows))
            return self.score(kept, self.lexical.pool_scores)
        return self.score(kept, [self.lexical.score(r["content"]) for r in kept])

    def score(self, kept: Sequence[dict[str, Any]], lexical: Sequence[float]) -> list[Scored]:
        """Both legs and the priors for visible rows ``kept``, given their BM25 scores ``lexical``;
        their vectors are in ``self.vectors``."""
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
        turn_text_weight = r.turn_bm25 if self.query is not None else r.turn_bm25 + r.semantic
        out = []
        assert self.lexical is not None
        recencies: dict[str | None, float] = {}  # by fact date: many candidates share a day
        for row, cosine, words in zip(kept, cosines, lexical, strict=True):
            if self.legacy:
                row = legacy_row(row)
            importance = float(row["importance"]) if row.get("importance") is not None else 0.5
            semantic = float(cosine)
            bm25 = self.lexical.fraction(words)
            fact_date = row.get("fact_date")
            recency = recencies.get(fact_date)
            if recency is None:
                recency = recencies[fact_date] = _recency(fact_date, self.today, r.recency_half_life_days)
            in_window = bool(self.windows) and _in_windows(row["content"], row.get("fact_date"), self.windows)
            turn = row.get("source_type") == TRANSCRIPT
            score = (
                r.semantic * semantic
                + (turn_text_weight if turn else text_weight) * bm25
                + r.importance * importance
                + (r.date if in_window else 0.0)
                + (r.recency * recency if self.current else 0.0)
                + (r.turn if turn else 0.0)
            )
            out.append(Scored(row, semantic, bm25, importance, recency, in_window, score))
        return out


_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s?$")


def _words(text: str) -> set[str]:
    return {_POSSESSIVE.sub("", w).lower() for w in _WORD.findall(text)}


def second_hop(scored: list[Scored], query: str, ranking: Ranking, limit: int) -> list[Scored]:
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
    return sorted(scored, key=sort_key) if lifted else scored


def collapse(
    scored: Sequence[Scored], vectors: dict[str, np.ndarray], limit: int
) -> list[tuple[Scored, int]]:
    """Keep the best of each group of near-duplicates (cosine >= 0.95 to a kept row), counting the
    rest on it, until ``limit`` rows are kept. ``scored`` is best first."""
    if not scored:
        return []
    matrix = _normalised_rows(np.stack([vectors[s.id] for s in scored]))
    kept_rows = np.empty((limit, matrix.shape[1]), dtype=matrix.dtype)
    kept: list[int] = []
    counts: list[int] = []
    i = 0
    while i < len(scored) and len(kept) < limit:
        if kept:
            similar = kept_rows[: len(kept)] @ matrix[i]
            j = int(np.argmax(similar))
            if similar[j] >= DUPLICATE_COSINE:
                counts[j] += 1
                i += 1
                continue
        kept_rows[len(kept)] = matrix[i]
        kept.append(i)
        counts.append(0)
        i += 1
    if i < len(scored) and kept:  # every place is taken: each remaining row is only counted, or not
        _count_duplicates(matrix[i:], kept_rows, counts)
    return [(scored[i], n) for i, n in zip(kept, counts, strict=True)]


_CLEAR = 1e-4  # far beyond float32 rounding of a 384-wide dot product (about 1e-7)


def _count_duplicates(rest: np.ndarray, kept_rows: np.ndarray, counts: list[int]) -> None:
    """``collapse`` once its rows are all kept: count each row of ``rest`` on the kept row it is a
    near-duplicate of (the most similar, if at least ``DUPLICATE_COSINE``). The similarities come
    from a few products for all rows at once; a row whose answer is within ``_CLEAR`` of changing (its best
    similarity near the threshold, or two kept rows near a tie) is decided by the row's own product,
    exactly as one row at a time would."""
    # One matrix-vector product per kept row: a matrix-matrix product would go to BLAS's threads,
    # which on a busy machine cost more than the loop they replace.
    sims = np.stack([rest @ row for row in kept_rows], axis=1)
    best = np.argmax(sims, axis=1)
    top = sims[np.arange(len(rest)), best]
    if kept_rows.shape[0] > 1:
        second = np.partition(sims, -2, axis=1)[:, -2]
    else:
        second = np.full(len(rest), -np.inf, dtype=sims.dtype)
    clear = (np.abs(top - DUPLICATE_COSINE) > _CLEAR) & (top - second > _CLEAR)
    for r in np.flatnonzero(clear & (top >= DUPLICATE_COSINE)):
        counts[int(best[r])] += 1
    for r in np.flatnonzero(~clear):
        similar = kept_rows @ rest[r]
        j = int(np.argmax(similar))
        if similar[j] >= DUPLICATE_COSINE:
            counts[j] += 1


def _normalised_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def normalised(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
