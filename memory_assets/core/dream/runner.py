"""``run_dream``: one tick of the dream, the runner that owns everything but the pages.

Under one lock per home (a second dream waits for nothing: it reports the first is running):

0. the fold ledger is created if the home has none (``folds.ensure_ledger``), and a run a crash
   interrupted is settled from its journal (``journal.py``): finished when its commit is in the
   ledger, rolled back otherwise, so no page ever holds what no commit counts;
1. load ``dream_state.json`` (persisted; an unreadable file is reported and rebuilt, never
   reset silently) and decide (``pacing.decide``): ingest, skip, lint or idle;
2. **skip** (a batch that failed ``max_retries`` times): its days are recorded as unconsolidated
   (their lines stay pending, so they keep their index rows; a later dream tries them after every
   other day), the watermark moves past them with a ``log.md`` entry, and the counter is dropped;
3. **ingest**: the attempt time is saved first; the batch is built (the days' pending lines, the
   confirmations, the revisit queue) and the consolidator folds it into pages, declaring every
   page write to the run's journal first. The vault is then asked what the run did
   (``commit.verify``): a run counts only for the facts a page holds. A run that failed, folded
   none of its facts, or took away claims that held earlier facts is rolled back and counted as a
   failed attempt. Otherwise its commit is appended to ``folds.jsonl`` (the commit point), and the
   follow-up runs: the folded lines go to ``.state/superseded.txt`` (the reconcile retires them),
   exactly the confirmation lines shown are removed, the watermark advances (an ingest entry in
   ``log.md``), the counter is dropped and MEMORY.md is promoted from the personal pages;
4. **lint**: the editorial audit; a clean one appends ``## [date] lint`` to ``log.md``.

The dream never writes the index: the reconcile and the sensors bring it in line afterwards.
"""

import hashlib
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory_assets.core.dream.batch import build_batch
from memory_assets.core.dream.commit import (
    Verdict,
    commit,
    commit_record,
    follow_up,
    named_texts,
    new_run_id,
    verify,
)
from memory_assets.core.dream.consolidator import Batch, ConsolidationResult, Consolidator
from memory_assets.core.dream.journal import DreamJournal, open_journal
from memory_assets.core.dream.pacing import IDLE, INGEST, LINT, SKIP, Decision, decide
from memory_assets.core.durable import LockTimeout, named_lock
from memory_assets.core.failpoints import failpoint
from memory_assets.core.knowledge.dream_state import (
    UNKNOWN_WHY,
    DreamState,
    load_dream_state,
    save_dream_state,
)
from memory_assets.core.knowledge.folds import ensure_ledger, load_folds, read_records
from memory_assets.core.knowledge.vault import list_pages, vault_signature
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
    folded: int = 0  # the batch's facts a vault page holds after the run (committed as folded)
    left: int = 0  # the batch's facts no page holds (they stay indexed)
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
    ensure_ledger(settings)
    warnings = _settle_interrupted(settings, now)
    state = load_dream_state(settings.dream_state_path, settings.log_md, repair=True, now=now)
    warnings += state.warnings
    if state.warnings:
        save_dream_state(settings.dream_state_path, state)  # the rebuilt state replaces the unreadable one
    decision = decide(settings, state, now=now, force=force, lint_only=lint_only)
    result = DreamResult(
        decision.kind,
        decision.reason,
        days=[d.isoformat() for d in decision.days],
        warnings=warnings + decision.warnings,
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


def settle_interrupted(settings: Settings, now: datetime | None = None) -> list[str]:
    """Step 0 alone, under the dream lock: what any dream tick does first (for tools and tests
    that need the vault settled without running a dream). ``[]`` when another dream is running."""
    try:
        with named_lock(f"dream:{settings.home}", timeout=0.5):
            ensure_ledger(settings)
            return _settle_interrupted(settings, (now or datetime.now(UTC)).astimezone(UTC))
    except LockTimeout:
        return []


def _settle_interrupted(settings: Settings, now: datetime) -> list[str]:
    """Finish or roll back the run a crash interrupted (see step 0); warnings say which."""
    journal = open_journal(settings.dream_journal_path, settings.notebook_dir)
    if journal is None:
        return []
    record = next(
        (r for r in read_records(settings.folds_path) if r.get("run") == journal.run and journal.run), None
    )
    if record is not None:
        follow_up(settings, record, now)
        journal.close()
        return [f"dream run {journal.run} was interrupted after its commit; its follow-up was finished now"]
    warnings = journal.rollback()
    journal.close()
    return [
        *warnings,
        f"dream run {journal.run or '(unnamed)'} was interrupted before its commit; the "
        f"{len(journal.before)} page(s) it wrote were rolled back, and its batch will run again",
    ]


def _skip(
    settings: Settings, state: DreamState, decision: Decision, now: datetime, result: DreamResult
) -> DreamResult:
    """Record the batch's days as unconsolidated (their lines stay pending and indexed), move the
    watermark past them with a ``log.md`` entry naming them, and drop the counter."""
    state.skipped(result.days)
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
    if decision.retry_round:  # days given up on, tried once: one failure gives up again
        state.failures[decision.batch_key] = settings.dream_max_retries - 1
        state.gave_up = None
    save_dream_state(settings.dream_state_path, state)
    run = new_run_id(now)
    journal = DreamJournal.begin(settings.dream_journal_path, settings.notebook_dir, run)
    folds = load_folds(settings)
    before = content_snapshot(settings)
    outcome: ConsolidationResult | None = None
    batch: Batch | None = None
    try:  # an unreadable log of the batch (build_batch) is a failed run like any other
        batch, warnings = build_batch(settings, decision.days, now.date(), folds, journal)
        result.warnings += warnings
        outcome = consolidator.consolidate(settings, batch)
    except Exception as exc:  # counted; the watermark stays
        result.error = f"{type(exc).__name__}: {exc}"[:500]
    failpoint("dream.consolidated")
    verdict: Verdict | None = None
    if outcome is not None and batch is not None:
        snapshot = content_snapshot(settings)
        changed = {r for r in set(snapshot) | set(before) if snapshot.get(r) != before.get(r)}
        changed |= set(journal.changed())
        verdict = verify(settings, batch, journal, folds, sorted(changed))
        result.warnings += outcome.warnings
    key = decision.batch_key
    wm = decision.watermark
    if verdict is None or verdict.failure:
        result.warnings += journal.rollback()
        journal.close()
        why = result.error or (verdict.failure if verdict else None) or "the run failed"
        result.failures = state.failed(key, why, now)
        if decision.retrying_skipped:
            for day in result.days:  # what stops them now
                state.skipped_why[day] = why[:500]
            if result.failures >= settings.dream_max_retries:  # given up until the cause may have cleared
                state.gave_up = {
                    "at": now.isoformat(timespec="seconds"),
                    "vault": vault_signature(settings.notebook_dir),
                }
        save_dream_state(settings.dream_state_path, state)
        result.ok = False
        result.reason = why
        result.watermark = wm.isoformat() if wm else None
        return result
    assert batch is not None and outcome is not None
    # A productive run: commit, then its follow-up (replayed after a crash), then promote.
    last = decision.days[-1]
    mark = last if wm is None or last > wm else None
    record = commit_record(run, batch, verdict, mark)
    commit(settings, record)
    failpoint("dream.committed")
    follow_up(settings, record, now)
    journal.close()
    if verdict.left:
        result.warnings.append(
            f"{len(verdict.left)} fact(s) of this batch are held by no vault page after the run, so they "
            f"stay in the index (left unfolded): {named_texts([f.content for f in verdict.left])}"
        )
    result.advanced = mark is not None
    result.watermark = (mark or wm).isoformat() if (mark or wm) else None
    result.pages_changed = sorted(outcome.pages_changed or verdict.changed)
    result.outcomes = dict(outcome.outcomes)
    result.folded = verdict.held
    result.left = len(verdict.left)
    result.confirmations_folded = outcome.confirmations_folded
    result.revisited = list(outcome.revisited)
    result.summary = outcome.summary
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
        "unconsolidated_why": {
            d: state.skipped_why.get(d, UNKNOWN_WHY) for d in sorted(state.unconsolidated)
        },
        "unconsolidated_given_up_at": (state.gave_up or {}).get("at"),
        "failures": dict(state.failures),
        "warnings": state.warnings,
    }
