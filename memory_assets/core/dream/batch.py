"""What one dream run works on: its days' pending fact lines, the confirmations, the revisit queue.

A run reads each day's log up to its last complete line (a line still being appended is left for
the next run) and takes the lines the fold ledger calls pending (``knowledge/folds.py``): lines no
dream has read, whatever their day, and lines handed back as pending. ``Batch.read`` records how
far it read, for the run's commit.

A daily log of the batch that cannot be read fails the run (``UnreadableLogError``, naming the
file and the fix): a day the dream cannot read must not pass the watermark, so the run is counted
as failed and the day keeps its index rows. An unreadable page is only left out of the revisit
queue, with a warning.
"""

from datetime import date
from pathlib import Path

from memory_assets.core.capture.daily_log import parse_daily_log
from memory_assets.core.dream.consolidator import Batch, BatchFact, PageJournal
from memory_assets.core.knowledge.chunking import parse_page
from memory_assets.core.knowledge.confirmations import read_confirmations
from memory_assets.core.knowledge.folds import Folds, load_folds, read_complete_lines
from memory_assets.core.knowledge.personal_pages import list_personal_pages
from memory_assets.core.knowledge.tombstones import read_tombstones
from memory_assets.core.settings import Settings
from memory_assets.core.textfile import read_text

MAX_CONFIRMATIONS = 5000  # lines of confirmations.jsonl one run is shown
MAX_REVISIT = 20  # pages of the revisit queue one run re-confirms


class UnreadableLogError(RuntimeError):
    """A daily log of the batch could not be read; the message names it and the fix."""


def build_batch(
    settings: Settings,
    days: list[date],
    today: date,
    folds: Folds | None = None,
    journal: PageJournal | None = None,
) -> tuple[Batch, list[str]]:
    """The batch for ``days`` (their pending lines, by ``folds``, the home's ledger by default),
    and warnings (unreadable lines, pages with broken frontmatter)."""
    folds = folds if folds is not None else load_folds(settings)
    warnings: list[str] = []
    tombs = read_tombstones(settings.tombstones_path)
    warnings += tombs.warnings
    facts: list[BatchFact] = []
    read: dict[str, tuple[int, int]] = {}
    for day in sorted(days):
        path = settings.archive_dir / f"{day.isoformat()}.md"
        if not path.is_file():
            continue
        try:
            prefix = read_complete_lines(path)
        except OSError as exc:
            raise UnreadableLogError(
                f"archive/{path.name}: cannot be read ({exc.strerror or exc}); the dream does not "
                "consolidate a day it cannot read, so this run fails (the day's facts stay in the "
                "index). Fix: make the file readable by the user running memory-assets."
            ) from exc
        text = prefix.data.decode("utf-8", errors="replace")
        parsed = parse_daily_log(text, f"archive/{path.name}")
        warnings += parsed.warnings
        file = folds.of(path.name)
        read[path.name] = (prefix.lines, prefix.bytes)
        for fact in parsed.facts:
            if not file.pending(fact.line) or tombs.hides(fact.content):
                continue
            facts.append(BatchFact(fact.content, fact.category, fact.tags, day, fact.line, path.name))
    confirmations, skipped = read_confirmations(settings.confirmations_path, MAX_CONFIRMATIONS)
    warnings += skipped
    shown = len(confirmations) + len(skipped)
    # A restatement of a forgotten claim is counted as read (its line goes with the others at the
    # commit) but never shown: the dream must not be served a forgotten text, nor bump its count.
    confirmations = [c for c in confirmations if not (tombs.hides(c.content) or tombs.hides(c.matched))]
    batch = Batch(
        days=sorted(days),
        facts=facts,
        confirmations=confirmations,
        confirmations_shown=shown,
        revisit=revisit_queue(settings, today, warnings)[:MAX_REVISIT],
        today=today,
        read=read,
        journal=journal,
        confirmation_lines=_first_lines(settings.confirmations_path, shown),
    )
    return batch, warnings


def _first_lines(path: Path, count: int) -> list[bytes]:
    """The first ``count`` lines of ``path`` as bytes (what the run's commit identifies them by)."""
    if count <= 0 or not path.exists():
        return []
    return path.read_bytes().split(b"\n")[:count]


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
