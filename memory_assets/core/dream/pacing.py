"""Whether the dream runs now, and on what: decided from persisted state only (design §5.9).

The existing runner's gates, with its defaults as settings:

* pending days are the days before today (UTC; today's log is still being appended to and is
  never consolidated) whose log holds pending fact lines (``knowledge/folds.py``): lines no dream
  has read, whatever the watermark says, so a line written to a past day is consolidated like
  any other; oldest first, then the days an earlier skip left unconsolidated (after every other
  day, so a wedged day can never starve new ones);
* more than ``dream_max_days`` pending ("behind") runs at once;
* otherwise a run needs ``dream_min_hours`` since the last attempt and ``dream_min_facts``
  pending fact lines;
* a batch is the first ``dream_max_days`` pending days; after ``dream_max_retries`` failed
  attempts on the same batch (counted in ``dream_state.json``, so restarts do not reset it) the
  batch is skipped: its days are recorded as unconsolidated (their lines stay pending, so they
  keep their index rows) and the watermark moves past them. Once the unconsolidated days alone
  have failed ``dream_max_retries`` more times, the dream gives up on them (still indexed) until
  their cause may have cleared: the vault changed since (a person fixed a page; ``vault_signature``),
  or ``SKIPPED_RETRY_AFTER`` has passed (a cause outside the vault: an endpoint down). Then they are
  tried once more, at once (no time or fact gate: a retry after a fix is not new work to pace),
  and a failure gives up again (``forced``: ``memory-assets dream --force`` tries them whatever);
* lint runs only when nothing is pending and a lint is due: never linted, or the last
  ``## [date] lint`` is ``dream_lint_min_days`` old, and no lint attempt in the last 24 hours.

Ingest always comes before lint, so an editorial audit can never starve consolidation.
"""

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from memory_assets.core.capture.daily_log import list_logs
from memory_assets.core.knowledge.dream_state import SKIPPED_RETRY_AFTER, DreamState
from memory_assets.core.knowledge.folds import Folds, load_folds, unread_fact_lines
from memory_assets.core.knowledge.vault import vault_signature
from memory_assets.core.knowledge.watermark import read_last_lint_date, read_watermark
from memory_assets.core.settings import Settings

LINT_RETRY = timedelta(hours=24)
INGEST, SKIP, LINT, IDLE = "ingest", "skip", "lint", "idle"


@dataclass
class Decision:
    kind: str  # ingest | skip | lint | idle
    reason: str
    days: list[date] = field(default_factory=list)  # the batch (ingest, skip)
    pending: list[date] = field(default_factory=list)
    facts_pending: int = 0
    watermark: date | None = None
    warnings: list[str] = field(default_factory=list)

    retrying_skipped: bool = False  # the batch holds only days an earlier skip left unconsolidated
    retry_round: bool = False  # ... which had been given up on, tried once more (the cause may have cleared)

    @property
    def batch_key(self) -> str:
        """The batch's failure-counter key: its last day (unconsolidated-only batches are marked)."""
        if not self.days:
            return ""
        last = self.days[-1].isoformat()
        return f"unconsolidated:{last}" if self.retrying_skipped else last

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "reason": self.reason,
            "days": [d.isoformat() for d in self.days],
            "pending": [d.isoformat() for d in self.pending],
            "facts_pending": self.facts_pending,
            "watermark": self.watermark.isoformat() if self.watermark else None,
        }


def pending_days(
    settings: Settings, folds: Folds, today: date, warnings: list[str] | None = None
) -> dict[date, int]:
    """The days before ``today`` with pending fact lines, and how many each holds (oldest first).
    Reads only each log's unread tail. A log that cannot be read is not pending (its lines stay
    indexed, and the dream takes them once it can read it); ``warnings`` names it and the fix."""
    found: dict[date, int] = {}
    for day, path in list_logs(settings.archive_dir):
        if day >= today:
            continue
        try:
            count = unread_fact_lines(path, folds.of(path.name))
        except OSError as exc:
            if warnings is not None:
                warnings.append(
                    f"archive/{path.name}: cannot be read ({exc.strerror or exc}); the dream leaves it "
                    "for a later run (its facts stay in the index). Fix: make the file readable by the "
                    "user running memory-assets."
                )
            continue
        if count:
            found[day] = count
    return found


def decide(
    settings: Settings,
    state: DreamState,
    *,
    now: datetime | None = None,
    force: bool = False,
    lint_only: bool = False,
) -> Decision:
    """What the dream should do now. ``force`` skips the time and fact gates (not retry-then-skip);
    ``lint_only`` asks for a lint whatever is pending (still only when one is due, unless forced).
    ``Decision.warnings`` names the logs that could not be read."""
    warnings: list[str] = []
    decision = _decide(settings, state, now, force, lint_only, warnings)
    decision.warnings = warnings
    return decision


def _decide(
    settings: Settings,
    state: DreamState,
    now: datetime | None,
    force: bool,
    lint_only: bool,
    warnings: list[str],
) -> Decision:
    """``decide``'s decision; the logs that could not be read are added to ``warnings``."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    today = now.date()
    logs = list_logs(settings.archive_dir)
    # A watermark dated today or later, or after every log, is refused (WatermarkError).
    watermark = read_watermark(settings.log_md, today, logs[-1][0] if logs else None)
    counts = pending_days(settings, load_folds(settings), today, warnings)
    left = state.unconsolidated_days()
    fresh = [d for d in sorted(counts) if d not in left]
    skipped = [d for d in sorted(counts) if d in left]
    pending = fresh + skipped
    again = ""  # why days given up on are tried once more
    if (
        skipped
        and not fresh
        and state.failures.get(f"unconsolidated:{skipped[-1].isoformat()}", 0) >= settings.dream_max_retries
    ):
        again = "forced" if force else cause_may_have_cleared(settings, state, now)
        if not again:
            pending = skipped = []  # they stay unconsolidated, indexed, until their cause may have cleared
    if pending and not lint_only:
        batch = pending[: settings.dream_max_days]
        facts = sum(counts[d] for d in pending)
        decision = Decision(INGEST, "", batch, pending, facts, watermark, retrying_skipped=not fresh)
        behind = len(fresh) > settings.dream_max_days
        if again:
            decision.retry_round = True
            decision.reason = (
                f"{len(batch)} skipped day(s) tried once more ({again}); they last failed: "
                f"{(state.last_failure or {}).get('why') or 'unknown'}"
            )
            return decision
        if state.failures.get(decision.batch_key, 0) >= settings.dream_max_retries:
            decision.kind = SKIP
            decision.reason = (
                f"batch ending {batch[-1]} failed {state.failures[decision.batch_key]} times "
                f"(max_retries {settings.dream_max_retries}): skipped, its days stay indexed as unconsolidated"
            )
            return decision
        if force:
            decision.reason = "forced"
        elif behind:
            decision.reason = (
                f"{len(fresh)} days pending > max_days {settings.dream_max_days}: running at once"
            )
        else:
            since = (now - state.last_attempt_at) if state.last_attempt_at else None
            if since is not None and since < timedelta(hours=settings.dream_min_hours):
                wait = timedelta(hours=settings.dream_min_hours) - since
                return Decision(
                    IDLE,
                    f"{len(pending)} day(s) pending; the last attempt was {since} ago, the next is due in {wait}",
                    [],
                    pending,
                    facts,
                    watermark,
                )
            if facts < settings.dream_min_facts:
                return Decision(
                    IDLE,
                    f"{len(pending)} day(s) pending with {facts} fact line(s) < min_facts {settings.dream_min_facts}",
                    [],
                    pending,
                    facts,
                    watermark,
                )
            decision.reason = f"{len(pending)} day(s), {facts} fact line(s) pending"
        return decision
    lint = _lint_due(settings, state, now, force and lint_only)
    if lint is None:
        return Decision(LINT, "lint due" if not force else "lint forced", [], pending, 0, watermark)
    return Decision(
        IDLE, lint if not pending else f"{len(pending)} day(s) pending; {lint}", [], pending, 0, watermark
    )


def cause_may_have_cleared(settings: Settings, state: DreamState, now: datetime) -> str:
    """Why days the dream gave up on may fold now ('' when nothing says so): the vault changed
    since it gave up (its signature), or ``SKIPPED_RETRY_AFTER`` has passed. A state without the
    record (an older version's) is tried once, and the record is written then."""
    gave_up = state.gave_up
    if gave_up is None:
        return "no record of when they were given up on"
    if gave_up.get("vault") != vault_signature(settings.notebook_dir):
        return "the vault changed since they last failed"
    try:
        at = datetime.fromisoformat(gave_up["at"])
    except ValueError:
        return "the record of when they were given up on cannot be read"
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    if now - at >= SKIPPED_RETRY_AFTER:
        return f"{SKIPPED_RETRY_AFTER.total_seconds() / 3600:g} hours since they last failed"
    return ""


def _lint_due(settings: Settings, state: DreamState, now: datetime, force: bool) -> str | None:
    """None when a lint is due now, else why not."""
    if not settings.dream_lint_enabled:
        return "nothing pending; lint is disabled"
    if force:
        return None
    if state.last_lint_attempt_at is not None and now - state.last_lint_attempt_at < LINT_RETRY:
        return "nothing pending; a lint was attempted in the last 24 hours"
    last = read_last_lint_date(settings.log_md)
    if last is not None and (now.date() - last).days < settings.dream_lint_min_days:
        return f"nothing pending; last lint {last}, next after {settings.dream_lint_min_days:g} days"
    return None
