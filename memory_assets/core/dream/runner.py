"""``run_dream``: one tick of the dream, the runner that owns everything but the pages.

Under one lock per home (a second dream waits for nothing: it reports the first is running):

1. load ``dream_state.json`` (persisted; an unreadable file is reported and rebuilt, never
   reset silently) and decide (``pacing.decide``): ingest, skip, lint or idle;
2. **skip** (a batch that failed ``max_retries`` times): its days are recorded as unconsolidated
   (they keep their index rows), the watermark moves past them with a ``log.md`` entry, and the
   counter is dropped;
3. **ingest**: the attempt time is saved first; the batch is built (the days' facts, the
   confirmations, the revisit queue) and the consolidator folds it into pages. Only a clean run
   that changed at least one content page counts: then the folded facts are appended to
   ``.state/superseded.txt`` (durably; the reconcile retires them), exactly the confirmation lines
   shown are removed, the batch's days leave ``unconsolidated``, the watermark advances (an ingest
   entry in ``log.md``), the counter is dropped and MEMORY.md is promoted from the personal pages.
   A failed or empty run increments the batch's counter and leaves the watermark where it is;
4. **lint**: the editorial audit; a clean one appends ``## [date] lint`` to ``log.md``.

The dream never writes the index: the reconcile and the sensors bring it in line afterwards.
"""

import hashlib
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory_assets.core.dream.batch import build_batch
from memory_assets.core.dream.consolidator import ConsolidationResult, Consolidator
from memory_assets.core.dream.pacing import IDLE, INGEST, LINT, SKIP, Decision, decide
from memory_assets.core.durable import LockTimeout, append_durable, named_lock
from memory_assets.core.knowledge.confirmations import remove_first
from memory_assets.core.knowledge.dream_state import DreamState, load_dream_state, save_dream_state
from memory_assets.core.knowledge.vault import list_pages
from memory_assets.core.knowledge.watermark import append_ingest_entry
from memory_assets.core.settings import Settings


@dataclass
class DreamResult:
    kind: str  # ingest | skip | lint | idle | busy
    reason: str
    ok: bool = True
    advanced: bool = False
    watermark: str | None = None
    days: list[str] = field(default_factory=list)
    pages_changed: list[str] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    folded: int = 0
    confirmations_folded: int = 0
    revisited: list[str] = field(default_factory=list)
    memory_md: str | None = None
    lint: dict[str, Any] | None = None
    failures: int = 0  # the batch's failed attempts after this run
    error: str | None = None
    summary: str = ""
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def content_snapshot(settings: Settings) -> dict[str, str]:
    """Every content page's hash (the root navigation files are not content; a page that cannot
    be read is marked so, and the readers that need it warn about it)."""
    out = {}
    for rel in list_pages(settings.notebook_dir):
        try:
            out[rel] = hashlib.sha256((settings.notebook_dir / rel).read_bytes()).hexdigest()
        except OSError:
            out[rel] = "unreadable"
    return out


def run_dream(
    settings: Settings,
    consolidator: Consolidator,
    *,
    now: datetime | None = None,
    force: bool = False,
    lint_only: bool = False,
) -> DreamResult:
    """One dream tick; see the module docstring. Never raises for a consolidator's failure (it
    is counted); raises for what a person must fix (a state file from a newer version)."""
    start = time.perf_counter()
    now = (now or datetime.now(UTC)).astimezone(UTC)
    try:
        with named_lock(f"dream:{settings.home}", timeout=0.5):
            result = _tick(settings, consolidator, now, force, lint_only)
    except LockTimeout:
        result = DreamResult("busy", "another dream is running on this home", ok=True)
    result.seconds = time.perf_counter() - start
    return result


def _tick(
    settings: Settings, consolidator: Consolidator, now: datetime, force: bool, lint_only: bool
) -> DreamResult:
    state = load_dream_state(settings.dream_state_path, settings.log_md, repair=True, now=now)
    warnings = list(state.warnings)
    if state.warnings:
        save_dream_state(settings.dream_state_path, state)  # the rebuilt state replaces the unreadable one
    decision = decide(settings, state, now=now, force=force, lint_only=lint_only)
    result = DreamResult(
        decision.kind, decision.reason, days=[d.isoformat() for d in decision.days], warnings=warnings
    )
    if decision.kind == IDLE:
        result.watermark = decision.watermark.isoformat() if decision.watermark else None
        return result
    if decision.kind == SKIP:
        return _skip(settings, state, decision, now, result)
    if decision.kind == LINT:
        return _lint(settings, state, now, result)
    assert decision.kind == INGEST
    return _ingest(settings, state, decision, consolidator, now, result)


def _skip(
    settings: Settings, state: DreamState, decision: Decision, now: datetime, result: DreamResult
) -> DreamResult:
    state.unconsolidated = sorted(set(state.unconsolidated) | set(result.days))
    state.failures.pop(decision.batch_key, None)
    wm = decision.watermark
    last = decision.days[-1]
    if wm is None or last > wm:
        append_ingest_entry(settings.log_md, now.date(), last, unconsolidated=decision.days)
        result.advanced, wm = True, last
    save_dream_state(settings.dream_state_path, state)
    result.watermark = wm.isoformat() if wm else None
    return result


def _ingest(
    settings: Settings,
    state: DreamState,
    decision: Decision,
    consolidator: Consolidator,
    now: datetime,
    result: DreamResult,
) -> DreamResult:
    state.last_attempt_at = now
    save_dream_state(settings.dream_state_path, state)
    before = content_snapshot(settings)
    outcome: ConsolidationResult | None = None
    try:  # an unreadable log of the batch (build_batch) is a failed run like any other
        batch, warnings = build_batch(settings, decision.days, now.date())
        result.warnings += warnings
        outcome = consolidator.consolidate(settings, batch)
    except Exception as exc:  # counted; the watermark stays
        result.error = f"{type(exc).__name__}: {exc}"[:500]
    changed = content_snapshot(settings) != before
    key = decision.batch_key
    if outcome is None or not changed:
        state.failures[key] = state.failures.get(key, 0) + 1
        save_dream_state(settings.dream_state_path, state)
        result.ok = False
        result.failures = state.failures[key]
        result.reason = result.error or "the consolidator changed no content page"
        wm = decision.watermark
        result.watermark = wm.isoformat() if wm else None
        if outcome is not None:
            result.warnings += outcome.warnings
        return result
    # A clean, productive run: hand off, truncate, advance, promote.
    if outcome.folded:
        append_durable(settings.superseded_path, "".join(f"{' '.join(t.split())}\n" for t in outcome.folded))
    remove_first(settings.confirmations_path, batch.confirmations_shown)
    state.failures.pop(key, None)
    done = {d.isoformat() for d in decision.days}
    state.unconsolidated = [d for d in state.unconsolidated if d not in done]
    wm = decision.watermark
    fresh = [d for d in decision.days if wm is None or d > wm]
    if fresh:
        append_ingest_entry(settings.log_md, now.date(), fresh[-1])
        wm = fresh[-1]
        result.advanced = True
    save_dream_state(settings.dream_state_path, state)
    result.watermark = wm.isoformat() if wm else None
    result.pages_changed = sorted(outcome.pages_changed)
    result.outcomes = dict(outcome.outcomes)
    result.folded = len(outcome.folded)
    result.confirmations_folded = outcome.confirmations_folded
    result.revisited = list(outcome.revisited)
    result.summary = outcome.summary
    result.warnings += outcome.warnings
    result.memory_md = _promote(settings)
    return result


def _promote(settings: Settings) -> str:
    from memory_assets.core.dream.promote import promote_memory_md

    try:
        return str(promote_memory_md(settings).reason)
    except Exception as exc:  # a failed promotion never undoes a productive dream
        return f"not promoted: {type(exc).__name__}: {exc}"[:300]


def _lint(settings: Settings, state: DreamState, now: datetime, result: DreamResult) -> DreamResult:
    from memory_assets.core.dream.lint import lint_vault
    from memory_assets.core.knowledge.watermark import append_lint_entry

    state.last_lint_attempt_at = now
    save_dream_state(settings.dream_state_path, state)
    try:
        report = lint_vault(settings, now.date())
    except Exception as exc:
        result.ok = False
        result.error = f"{type(exc).__name__}: {exc}"[:500]
        return result
    append_lint_entry(settings.log_md, now.date(), report.summary)
    result.lint = report.to_dict()
    result.pages_changed = sorted(report.pages_changed)
    result.summary = report.summary
    return result


def next_dream(settings: Settings, now: datetime | None = None) -> dict[str, Any]:
    """What the dream would do now and why (for ``status``), without doing it or writing anything."""
    state = load_dream_state(settings.dream_state_path, settings.log_md, now=now)
    decision = decide(settings, state, now=now)
    return {
        **decision.to_dict(),
        "unconsolidated_days": sorted(state.unconsolidated),
        "failures": dict(state.failures),
        "warnings": state.warnings,
    }
