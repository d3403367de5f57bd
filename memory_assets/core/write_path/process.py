"""``process_turn``: the write path the assistant calls after each reply (design §5.6).

(0) keep the turn, verbatim, in its chat's transcript (``transcripts/captured/<chat>.jsonl``),
    durably, before anything else: what was said stays findable (the recall tier) whether or not
    a fact comes of it. A turn read from a transcript (ingestion) is kept there already;
(a) recall up to ``known_facts_limit`` known facts near the turn: best effort, under a time limit;
    any failure means extraction runs without them, and the result says so (invariant 5: a
    search outage never blocks a write). Recall is one full-text query (``retrieval.keyword_search``:
    BM25 over the index, tombstones filtered, no ranking priors and no collapse): the classifier's
    question is lexical ("practically the same sentence?"), which full text answers; it needs no
    embedding model, so a model outage cannot degrade it, and it keeps near-duplicates apart, so a
    daily-log copy of a fact is not folded into a MEMORY.md copy the classifier cannot defer to;
(b) extract facts (the configured extractor; the rule-based default without a language model),
    and make the relative dates in them absolute against the turn's time ("yesterday" said on
    2023-05-08 is written "on 2023-05-07"; ``relative_dates.py``), whichever extractor gave them;
    a fact given directly (``GivenFacts``: ``remember``) is written as its writer put it;
(c) classify each against the recalled facts: confirmation, revision or new;
(d) append new facts and revisions to the turn's UTC day's log, one block in the existing format,
    durably; confirmations go to ``.state/confirmations.jsonl`` instead;
(e) reindex that day and the turn's transcript through the indexer, as one write (a diff: only
    the new lines and the new turn are embedded, in one model call); the memory service indexes
    the transcript right after its acknowledgement instead (``process_turns(index_transcripts=
    False)``, design §8.6): the turn is durable before either;
(f) when a fact is important, refresh MEMORY.md's generated zone with the per-turn MEMORY.md
    writer (``memory_md_refresh.py``), which stands down once the vault has a ``3_Personal/`` page.

``keep`` does (0); ``plan_turn`` does (a)-(c) and writes nothing; ``apply_plan`` does (d);
``process_turns`` does all of it for several turns of one home as one write, ``process_turn`` for
one. The transcript ingestion journals between plan and apply (``ingest.py``) so a crash
never writes a turn twice.
"""

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory_assets.core.capture.daily_log import REVISION_TAG, LogBlock, LogFact, append_block, format_block
from memory_assets.core.capture.transcripts import keep_turn
from memory_assets.core.durable import is_disk_full, recorded_appends, withdraw
from memory_assets.core.home import Home
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.confirmations import Confirmation, append_confirmations
from memory_assets.core.knowledge.folds import ensure_ledger_before_append
from memory_assets.core.models.embedder import TextEmbedder
from memory_assets.core.search.retrieval import keyword_search
from memory_assets.core.settings import Settings
from memory_assets.core.sources import IndexKey
from memory_assets.core.text import clean_text
from memory_assets.core.write_path.classifier import CONFIRMATION, REVISION, Known, classify
from memory_assets.core.write_path.extraction import Extraction, Extractor, GivenFacts, Turn
from memory_assets.core.write_path.extractor_choice import make_extractor
from memory_assets.core.write_path.memory_md_refresh import refresh_memory_md
from memory_assets.core.write_path.relative_dates import resolve

IMPORTANT_AT = 0.7  # a fact this important refreshes MEMORY.md (the assistant's threshold)
RECALL_QUERY_CHARS = 2000  # a huge turn is recalled by its beginning
REINDEX_LOCK_WAIT_S = 5.0  # a day's reindex waits this long for its locks, then is left to the sensor
_RECALL_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memory-recall")
DISK_FULL_REINDEX = (
    "the disk holding the home is full: the index was not updated; the facts are in the log and "
    "are indexed once space is freed (the next write of that day, a sweep, or `memory-assets reindex`)"
)
SUMMARY_FACT_KEYS = ("content", "category", "outcome", "similarity", "matched", "matched_source")


@dataclass
class FactOutcome:
    content: str
    category: str
    tags: tuple[str, ...]
    importance: float
    outcome: str  # new | revision | confirmation
    similarity: float
    matched: str | None  # the known fact it was compared with
    matched_source: str | None  # that fact's source type (archive_log, notebook, transcript, ...)
    matched_file: str | None


@dataclass
class Recall:
    ok: bool
    known: int
    seconds: float
    error: str | None = None


@dataclass
class TurnPlan:
    """What a turn will write, decided without writing anything."""

    turn: Turn
    at: datetime
    facts: list[FactOutcome]
    block: LogBlock | None  # new facts and revisions, as one log block
    confirmations: list[Confirmation]
    recall: Recall
    extraction: Extraction
    timings: dict[str, float] = field(default_factory=dict)
    transcript: str | None = None  # the transcript holding the turn (its path under transcripts/)

    def index_keys(self, transcript: bool = True) -> list[str]:
        """The index keys this turn's write changes: its day's log (when it wrote facts) and its
        transcript (when it is kept in one, and ``transcript``)."""
        out = [str(IndexKey.for_day(self.block.day))] if self.block is not None else []
        if transcript and self.transcript is not None:
            out.append(str(IndexKey.for_transcript(self.transcript)))
        return out


@dataclass
class TurnResult:
    facts: list[FactOutcome]
    lines_written: list[str]
    log: str | None  # the log file the block went to
    transcript: str | None  # the transcript the turn is kept in (its path under transcripts/)
    confirmations: int
    rows_embedded: int  # the day's log rows this write embedded
    recall: Recall
    extractor: str
    fallback: str | None
    reindex_error: str | None = None
    turn_rows_embedded: int = 0  # the transcript's rows this write embedded (the recall tier)
    memory_md: str | None = None  # what the MEMORY.md refresh did (or why it did not)
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def counts(self) -> dict[str, int]:
        out = {"new": 0, "revision": 0, "confirmation": 0}
        for fact in self.facts:
            out[fact.outcome] += 1
        return out

    def summary(self) -> dict[str, Any]:
        """The result as the faces hand it out (the CLI's ``--json``, the server's answer): every
        field, each fact as what it says, its outcome and what it was compared with, and the counts."""
        out = self.to_dict()
        out["facts"] = [{k: fact[k] for k in SUMMARY_FACT_KEYS} for fact in out["facts"]]
        out["counts"] = self.counts()
        return out


def recall_known(settings: Settings, store: MemoryStore, text: str) -> tuple[list[Known], Recall]:
    """The known facts nearest ``text`` by full text (tombstones filtered; not a recall the
    assistant handed out, so the recall log is untouched), within ``settings.recall_timeout_s``;
    never raises."""
    # The time limit is for the query, not the process's one-time import of LanceDB (about 2 s
    # cold on these machines), which the reindex of this same turn needs anyway.
    import lancedb  # noqa: F401

    start = time.perf_counter()
    query = text[:RECALL_QUERY_CHARS]
    future = _RECALL_POOL.submit(
        keyword_search, store, query, settings=settings, limit=settings.known_facts_limit
    )
    try:
        hits = future.result(timeout=settings.recall_timeout_s)
    except FutureTimeout:
        return [], Recall(
            False, 0, time.perf_counter() - start, f"recall took over {settings.recall_timeout_s} s"
        )
    except Exception as exc:  # an outage degrades extraction, never the write
        return [], Recall(False, 0, time.perf_counter() - start, f"{type(exc).__name__}: {exc}"[:300])
    known = [Known(h.content, h.source_type, h.source_file, h.zone) for h in hits]
    return known, Recall(True, len(known), time.perf_counter() - start)


def prepared(turn: Turn) -> Turn:
    """The turn as it is written: its texts cleaned (``clean_text``), a chat id, its time in UTC
    (now when it has none)."""
    at = (turn.at or datetime.now(UTC)).astimezone(UTC)
    return Turn(
        clean_text(turn.user),
        clean_text(turn.assistant),
        clean_text(turn.chat_id) or "default",
        at,
        keep=turn.keep,
    )


def dated(extraction: Extraction, at: datetime) -> Extraction:
    """(b): the extracted facts with their relative dates made absolute against ``at``, the
    turn's time (``relative_dates.resolve``); everything else as the extractor gave it."""
    facts = [replace(f, content=resolve(f.content, at)) for f in extraction.facts]
    return replace(extraction, facts=facts)


def keep(turn: Turn, settings: Settings) -> str | None:
    """(0): append a prepared turn to its chat's transcript, durably; returns the transcript's
    path under ``transcripts/`` (None for a turn that is not kept: ``Turn.keep``)."""
    if not turn.keep or not turn.user.strip():
        return None
    assert turn.at is not None
    path = keep_turn(settings.transcripts_dir, turn.chat_id, turn.user, turn.assistant, turn.at)
    return path.relative_to(settings.transcripts_dir).as_posix()


def plan_turn(
    turn: Turn,
    settings: Settings,
    extractor: Extractor,
    *,
    store: MemoryStore | None = None,
    transcript: str | None = None,
) -> TurnPlan:
    """(a)-(c): recall, extract, classify. Writes nothing. ``transcript``: where the turn is kept
    (``keep``'s answer, or the transcript ingestion read it from)."""
    turn = prepared(turn)
    at = turn.at
    assert at is not None
    store = store or Home(settings).store
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    known, recall = (
        recall_known(settings, store, turn.user) if turn.user.strip() else ([], Recall(True, 0, 0.0))
    )
    timings["recall"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    extraction = extractor.extract(turn, [k.content for k in known])
    if not isinstance(extractor, GivenFacts):
        extraction = dated(extraction, at)
    timings["extract"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    facts: list[FactOutcome] = []
    log_facts: list[LogFact] = []
    confirmations: list[Confirmation] = []
    for fact in extraction.facts:
        verdict = classify(fact.content, known)
        matched = verdict.matched
        facts.append(
            FactOutcome(
                content=fact.content,
                category=fact.category,
                tags=fact.tags,
                importance=fact.importance,
                outcome=verdict.outcome,
                similarity=verdict.similarity,
                matched=matched.content if matched else None,
                matched_source=matched.source_type if matched else None,
                matched_file=matched.source_file if matched else None,
            )
        )
        if verdict.outcome == CONFIRMATION and matched is not None:
            confirmations.append(
                Confirmation(
                    ts=at.isoformat(timespec="seconds"),
                    content=fact.content,
                    matched=matched.content,
                    source_type=matched.source_type,
                    source_file=matched.source_file,
                    similarity=verdict.similarity,
                    chat_id=turn.chat_id,
                )
            )
        else:
            tags = (*fact.tags, REVISION_TAG) if verdict.outcome == REVISION else fact.tags
            log_facts.append(LogFact(fact.content, fact.category, tuple(dict.fromkeys(tags))))
    timings["classify"] = time.perf_counter() - t0
    return TurnPlan(
        turn=turn,
        at=at,
        facts=facts,
        block=format_block(turn.chat_id, log_facts, at),
        confirmations=confirmations,
        recall=recall,
        extraction=extraction,
        timings=timings,
        transcript=transcript,
    )


def apply_plan(plan: TurnPlan, settings: Settings) -> Path | None:
    """(d): append the block to its day's log and the confirmations to their file, durably."""
    ensure_ledger_before_append(settings)
    path = append_block(settings.archive_dir, plan.block) if plan.block is not None else None
    append_confirmations(settings.confirmations_path, plan.confirmations)
    return path


def finish_turn(
    plan: TurnPlan,
    settings: Settings,
    path: Path | None,
    *,
    store: MemoryStore | None = None,
    embedder: TextEmbedder | None = None,
    reindex: bool = True,
    memory_md: bool = True,
) -> TurnResult:
    """(e)-(f) after the write: reindex the day, refresh MEMORY.md; failures are reported, not
    raised. ``reindex`` / ``memory_md`` False leave that step to the caller (``process_turns``)."""
    result = TurnResult(
        facts=plan.facts,
        lines_written=plan.block.text.strip().splitlines()[2:] if plan.block else [],
        log=str(path) if path else None,
        transcript=plan.transcript,
        confirmations=len(plan.confirmations),
        rows_embedded=0,
        recall=plan.recall,
        extractor=plan.extraction.extractor,
        fallback=plan.extraction.fallback,
        timings=dict(plan.timings),
        warnings=list(plan.extraction.warnings),
    )
    if reindex and plan.index_keys():
        t0 = time.perf_counter()
        embedded, result.reindex_error = reindex_keys(settings, store, embedder, plan.index_keys())
        _embedded(plan, result, embedded)
        result.timings["reindex"] = time.perf_counter() - t0
    if memory_md and important(plan):
        t0 = time.perf_counter()
        result.memory_md = refresh_memory_md(settings, store)
        result.timings["memory_md"] = time.perf_counter() - t0
    return result


def reindex_keys(
    settings: Settings, store: MemoryStore | None, embedder: TextEmbedder | None, keys: Sequence[str]
) -> tuple[dict[str, int], str | None]:
    """(e): reindex ``keys`` as one write, waiting a little for their locks; returns the rows each
    key embedded, and the error if there was one (the files hold the turn; the sensor reindexes
    them later)."""
    try:
        indexer = Home(settings, store=store).indexer_with(embedder, lock_timeout=REINDEX_LOCK_WAIT_S)
        return {r.key: r.embedded for r in indexer.reindex_keys(keys)}, None
    except Exception as exc:
        if is_disk_full(exc):
            return {}, DISK_FULL_REINDEX
        return {}, f"{type(exc).__name__}: {exc}"[:300]


def _embedded(plan: TurnPlan, result: TurnResult, embedded: dict[str, int]) -> None:
    """The rows this turn's day and transcript embedded, each in its own count."""
    day, transcript = _day_key(plan), _transcript_key(plan)
    result.rows_embedded = embedded.get(day, 0) if day else 0
    result.turn_rows_embedded = embedded.get(transcript, 0) if transcript else 0


def _day_key(plan: TurnPlan) -> str | None:
    return str(IndexKey.for_day(plan.block.day)) if plan.block is not None else None


def _transcript_key(plan: TurnPlan) -> str | None:
    return str(IndexKey.for_transcript(plan.transcript)) if plan.transcript is not None else None


def important(plan: TurnPlan) -> bool:
    """Whether the turn wrote a fact important enough to refresh MEMORY.md."""
    return any(f.importance >= IMPORTANT_AT and f.outcome != CONFIRMATION for f in plan.facts)


def process_turn(
    turn: Turn,
    settings: Settings,
    *,
    extractor: Extractor | None = None,
    store: MemoryStore | None = None,
    embedder: TextEmbedder | None = None,
    reindex: bool = True,
) -> TurnResult:
    """The whole write path for one turn (``process_turns`` of one; see the module docstring),
    with the configured extractor when none is given. Never loses a fact: the log append happens
    before anything that can fail for reasons outside the turn (the index, the model, MEMORY.md),
    and those failures are reported in the result; a failure before the append (the extractor, a
    full disk) is raised."""
    if extractor is None:
        extractor = make_extractor(settings)
    [result] = process_turns([(turn, extractor)], settings, store=store, embedder=embedder, reindex=reindex)
    if isinstance(result, Exception):
        raise result
    return result


def process_turns(
    turns: Sequence[tuple[Turn, Extractor]],
    settings: Settings,
    *,
    store: MemoryStore | None = None,
    embedder: TextEmbedder | None = None,
    index_transcripts: bool = True,
    reindex: bool = True,
    on_written: Sequence[Callable[[TurnResult], None] | None] | None = None,
) -> list[TurnResult | Exception]:
    """Several turns of one home as one write, in order: what a server does with the turns that
    arrive for one user while it is writing the previous ones (one group, one reindex).

    ``index_transcripts=False`` leaves the transcripts' rows out of this write (each result keeps
    its ``transcript``; ``turn_rows_embedded`` is 0): a caller that acknowledges each turn (the
    memory service) indexes them after the acknowledgement, since embedding every message is most
    of a turn's cost. The turn is durable in its transcript either way, before its plan.
    ``reindex=False`` leaves (e) to the caller altogether (the sensor reindexes the files later).

    Each turn is kept (0), planned (a-c) and appended (d), durably, before the next is planned,
    then ``on_written[i]`` (when given) is called with the turn's result as written (its facts,
    lines and log; the reindex not done yet): the caller's own record of the turn (the memory
    service's Idempotency-Key record), made before anything else is written; then every day and
    transcript the turns wrote to is reindexed, all
    as one write (e), and MEMORY.md is refreshed once when any turn wrote an important fact (f). Each turn's result carries its own
    facts, log and timings, and the reindex (``rows_embedded`` and ``reindex_error`` are the
    group's one write, shared by its turns). A turn that fails before its append
    (its extractor, a full disk) is returned as its exception, in its place, and the other turns
    go on. Nothing is kept of a turn that fails: what it had appended (its transcript line, its
    log block, its confirmations) is taken back (``durable.withdraw``), unless another writer
    appended to that file after it, so a caller that retries a refused turn never stores it twice.

    The turns of one call are classified against the index as it stood before the call: a second
    restatement of a fact another turn of the same call wrote is written as new (never lost; the
    write path may recognise a repeat, never must, design §7 invariant 5b)."""
    store = store or Home(settings).store
    out: list[TurnResult | Exception | None] = []
    written: list[tuple[int, TurnPlan, Path | None, float]] = []
    commits = list(on_written) if on_written is not None else [None] * len(turns)
    for (turn, extractor), commit in zip(turns, commits, strict=True):
        start = time.perf_counter()
        with recorded_appends() as appends:
            try:
                turn = prepared(turn)
                t0 = time.perf_counter()
                transcript = keep(turn, settings)
                kept_s = time.perf_counter() - t0
                plan = plan_turn(turn, settings, extractor, store=store, transcript=transcript)
                plan.timings["keep"] = kept_s
                t0 = time.perf_counter()
                path = apply_plan(plan, settings)
                plan.timings["write"] = time.perf_counter() - t0
                if commit is not None:
                    commit(finish_turn(plan, settings, path, store=store, reindex=False, memory_md=False))
            except Exception as exc:  # not written (what it appended is taken back); the others are
                for appended in reversed(appends):
                    withdraw(appended)
                out.append(exc)
                continue
        written.append((len(out), plan, path, start))
        out.append(None)  # its result, once the days are reindexed
    keys = [k for _, plan, _, _ in written for k in plan.index_keys(index_transcripts)] if reindex else []
    keys = list(dict.fromkeys(keys))
    t0 = time.perf_counter()
    embedded, error = reindex_keys(settings, store, embedder, keys) if keys else ({}, None)
    reindex_s = time.perf_counter() - t0
    refresh: str | None = None
    refresh_s = 0.0
    if any(important(plan) for _, plan, _, _ in written):
        t0 = time.perf_counter()
        refresh = refresh_memory_md(settings, store)
        refresh_s = time.perf_counter() - t0
    for position, plan, path, start in written:
        result = finish_turn(plan, settings, path, store=store, reindex=False, memory_md=False)
        if reindex and plan.index_keys(index_transcripts):
            _embedded(plan, result, embedded)
            result.reindex_error, result.timings["reindex"] = error, reindex_s
        if important(plan):
            result.memory_md, result.timings["memory_md"] = refresh, refresh_s
        result.timings["total"] = time.perf_counter() - start
        out[position] = result
    return [r for r in out if r is not None]
