"""What one dream run works on: its days' fact lines, the confirmations, the revisit queue.

A daily log of the batch that cannot be read fails the run (``UnreadableLogError``, naming the
file and the fix): a day the dream cannot read must not pass the watermark, so the run is counted
as failed and the day keeps its index rows. An unreadable page is only left out of the revisit
queue, with a warning.
"""

from datetime import date

from memory_assets.core.capture.daily_log import read_daily_log
from memory_assets.core.dream.consolidator import Batch, BatchFact
from memory_assets.core.knowledge.chunking import parse_page
from memory_assets.core.knowledge.confirmations import read_confirmations
from memory_assets.core.knowledge.personal_pages import list_personal_pages
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.settings import Settings
from memory_assets.core.textfile import read_text

MAX_CONFIRMATIONS = 5000  # lines of confirmations.jsonl one run is shown
MAX_REVISIT = 20  # pages of the revisit queue one run re-confirms


class UnreadableLogError(RuntimeError):
    """A daily log of the batch could not be read; the message names it and the fix."""


def build_batch(settings: Settings, days: list[date], today: date) -> tuple[Batch, list[str]]:
    """The batch for ``days``, and warnings (unreadable lines, pages with broken frontmatter)."""
    warnings: list[str] = []
    tombs = read_tombstones(settings.tombstones_path)
    warnings += tombs.warnings
    facts: list[BatchFact] = []
    for day in sorted(days):
        path = settings.archive_dir / f"{day.isoformat()}.md"
        if not path.is_file():
            continue
        try:
            parsed = read_daily_log(path, f"archive/{path.name}")
        except OSError as exc:
            raise UnreadableLogError(
                f"archive/{path.name}: cannot be read ({exc.strerror or exc}); the dream does not "
                "consolidate a day it cannot read, so this run fails and the watermark stays (the "
                "day's facts stay in the index). Fix: make the file readable by the user running "
                "memory-assets."
            ) from exc
        warnings += parsed.warnings
        for fact in parsed.facts:
            if tombs.hides(fact.content):
                continue
            facts.append(BatchFact(fact.content, fact.category, fact.tags, day, fact.line, path.name))
    confirmations, skipped = read_confirmations(settings.confirmations_path, MAX_CONFIRMATIONS)
    warnings += skipped
    batch = Batch(
        days=sorted(days),
        facts=facts,
        confirmations=confirmations,
        confirmations_shown=len(confirmations) + len(skipped),
        revisit=revisit_queue(settings, today, warnings)[:MAX_REVISIT],
        today=today,
    )
    return batch, warnings


def revisit_queue(settings: Settings, today: date, warnings: list[str] | None = None) -> list[str]:
    """``3_Personal/`` pages to re-confirm: those past their ``stale_after``, soonest first, then
    those with no ``stale_after`` at all (pages written before the field existed would otherwise
    never be visited, so never get it). ``never`` is a value: such pages are not queued, and
    neither is a page that cannot be read (a warning in ``warnings`` names it and the fix)."""
    stale: list[tuple[date, str]] = []
    undated: list[str] = []
    for rel in list_personal_pages(settings):
        try:
            text = read_text(settings.notebook_dir / rel).text
        except OSError as exc:
            if warnings is not None:
                warnings.append(
                    f"notebook/{rel}: cannot be read ({exc.strerror or exc}); not revisited. Fix: make it "
                    "readable by the user running memory-assets."
                )
            continue
        page = parse_page(text, f"notebook/{rel}")
        raw = page.meta.get("stale_after")
        if raw is None or raw == "":
            undated.append(rel)
        elif page.lifecycle.stale_after is not None and page.lifecycle.stale_after <= today:
            stale.append((page.lifecycle.stale_after, rel))
    return [rel for _, rel in sorted(stale)] + sorted(undated)
