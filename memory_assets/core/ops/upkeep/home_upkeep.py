"""``upkeep_home``: one home's upkeep, the steps in order, each asking again whether it has work.

The caller holds the user's exclusion (``exclusion.py``). The steps, and when each runs:

1. **ingest**: the write path over the transcripts (``ingest_transcripts``: each new user turn
   exactly once) when the hints say a session is behind;
2. **index**: the catch-up, the hints' index keys reindexed as one write (each a diff: a key
   already current costs a plan and a comparison); a retried index step with no keys sweeps;
3. **dream**: ``run_dream`` from the home's persisted pacing state (it decides ingest, skip,
   lint or idle itself), again while a tick advances the watermark, at most ``DREAM_TICKS``;
4. **reconcile**: after a productive dream, or whenever the hand-off holds lines (a dream outside
   left them, or an earlier reconcile was cut short): retire superseded, then the sweep;
5. **dedup**: the measurement, its files and the analysts' report, when the index changed since
   the last one and the hints ask, or this upkeep consolidated, or the last one is from an earlier
   day (the day's measurement, which the planner would ask for next);
6. **optimize**: after the reconcile (its third step), when the hints give the table's reasons,
   or when this upkeep's ingest or catch-up committed rows: compaction, index folding, pruning.

A step that raises is recorded as failed with its error and the next steps are still tried:
each asks its own question, and a step whose input a failure left unchanged finds nothing new to
do. The dream's own failures (a bad model answer) are a failed step too; the dream counts them for
its retry-then-skip. Nothing here catches ``BaseException``: a kill leaves what each runner's crash
safety leaves.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory_assets.core.dream.consolidator import Consolidator
from memory_assets.core.dream.consolidator_choice import make_consolidator
from memory_assets.core.dream.runner import DreamResult, run_dream
from memory_assets.core.home import Home
from memory_assets.core.index.indexer import SweepResult
from memory_assets.core.ops.dedup_report import measure_dedup
from memory_assets.core.ops.upkeep.work import Work, dedup_due, dedup_due_today
from memory_assets.core.ops.write import ingest
from memory_assets.core.reconcile import handoff_pending, reconcile

DREAM_TICKS = 8
"""At most this many dream ticks in one upkeep (a home far behind folds several batches)."""


@dataclass
class StepResult:
    """One step of a home's upkeep: the runner's own result, or the error that stopped it."""

    step: str
    ok: bool
    result: Any = None
    error: str = ""
    seconds: float = 0.0


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _dream(home: Home, consolidator: Consolidator, now: datetime) -> tuple[list[DreamResult], str]:
    """Dream ticks while they advance; the results and an error ('' when every tick was ok)."""
    results: list[DreamResult] = []
    for _ in range(DREAM_TICKS):
        result = run_dream(home.settings, consolidator, now=now)
        results.append(result)
        if result.kind == "busy":
            return results, "another dream is running on this home (outside this upkeep)"
        if not result.ok:
            return results, (
                f"dream on {result.days} did not consolidate: {result.error or result.reason} "
                f"(attempt {result.failures} of {home.settings.dream_max_retries})"
            )
        if result.kind in ("idle", "lint") or not result.advanced:
            break
    return results, ""


def upkeep_home(
    home: Home,
    work: Work,
    *,
    now: datetime | None = None,
    source: str = "upkeep",
    consolidator: Callable[[Home], Consolidator] | None = None,
) -> list[StepResult]:
    """The steps of ``home``'s upkeep that had work, in order (see the module docstring).
    ``source``: who measured, in the dedup history (``dagster:<run id>``); ``consolidator``: how to
    build the dream's consolidator (default: the one the home's settings name)."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    settings = home.settings
    steps: list[StepResult] = []

    def step(name: str, call: Callable[[], Any]) -> StepResult:
        start = time.perf_counter()
        try:
            outcome = StepResult(name, True, call())
        except Exception as exc:  # recorded against the user; the batch goes on
            outcome = StepResult(name, False, error=_error(exc))
        outcome.seconds = time.perf_counter() - start
        steps.append(outcome)
        return outcome

    committed = False
    if work.wants("ingest"):
        ingested = step("ingest", lambda: ingest(home))
        committed |= bool(ingested.ok and ingested.result.turns)
    if work.wants("index"):
        index = step("index", lambda: _catch_up(home, work.keys))
        committed |= bool(index.ok and index.result.files_updated)

    consolidated = False
    if work.wants("dream"):
        start = time.perf_counter()
        try:
            build = consolidator or (lambda h: make_consolidator(h.settings))
            results, error = _dream(home, build(home), now)
        except Exception as exc:
            results, error = [], _error(exc)
        steps.append(StepResult("dream", not error, results, error, time.perf_counter() - start))
        consolidated = any(r.advanced or r.pages_changed for r in results)

    reconciled = False
    if consolidated or "reconcile" in work.retry or handoff_pending(settings):
        reconciled = step("reconcile", lambda: reconcile(settings, home.indexer, optimize=False)).ok
        consolidated = True

    if dedup_due(settings) and (work.wants("dedup") or consolidated or dedup_due_today(settings, now)):
        step("dedup", lambda: measure_dedup(home, source))

    if reconciled or committed or work.wants("optimize"):
        step("optimize", lambda: home.indexer_without_embedder().optimize())
    return steps


def _catch_up(home: Home, keys: list[str]) -> SweepResult:
    """The hints' keys reindexed as one write, or (a retried step with none) a sweep."""
    if not keys:
        return home.indexer.sweep()
    sweep = SweepResult()
    for result in home.indexer.reindex_keys(sorted(set(keys))):
        sweep.add(result)
    sweep.rows, sweep.seconds = home.store.count(), sum(f.seconds for f in sweep.files)
    return sweep
