"""The vault's ``log.md``: the dream's operation log and the consolidation watermark.

Entries are appended, never rewritten (existing format)::

    ## [2026-08-20] ingest | daily logs  watermark=2026-08-19
    ## [2026-08-21] lint

The watermark is the MAXIMUM date of all ``watermark=`` entries (design §4.3), so a stray
older entry, for example one written by a manual ingest, cannot move it backwards.

Because the maximum wins, one bad entry would mark every daily log up to its date as folded,
and the index drops the rows of folded days. So ``read_watermark`` refuses an entry that cannot
be right: dated today or later (the dream never consolidates today's log, which is still being
written), or later than the newest daily log when the caller names it (the dream only advances
to a day whose log it read). The ``WatermarkError`` names ``log.md``'s line and the fix; the
commands that index or consolidate stop on it before changing anything, ``check`` fails on it
and ``status`` reports it.
"""

import re
from datetime import UTC, date, datetime
from pathlib import Path

from memory_assets.core.durable import append_durable
from memory_assets.core.textfile import read_text

WATERMARK_RE = re.compile(r"watermark=(\d{4}-\d{2}-\d{2})")
LINT_RE = re.compile(r"##\s*\[(\d{4}-\d{2}-\d{2})\]\s*lint\b")


def _dates(pattern: re.Pattern[str], text: str) -> list[date]:
    found = []
    for m in pattern.finditer(text):
        try:
            found.append(date.fromisoformat(m.group(1)))
        except ValueError:
            continue
    return found


class WatermarkError(ValueError):
    """A ``watermark=`` entry of ``log.md`` that cannot be right; the message names its line and the fix."""


def read_watermark(log_md: Path, today: date | None = None, newest_log: date | None = None) -> date | None:
    """The watermark: the latest ``watermark=`` date of ``log_md`` (None without one).

    Raises ``WatermarkError`` for an entry dated ``today`` (UTC by default) or later, or later
    than ``newest_log`` (the newest daily log's day, when the caller knows it)."""
    if not log_md.exists():
        return None
    text = read_text(log_md).text
    today = today or datetime.now(UTC).date()
    found: date | None = None
    for m in WATERMARK_RE.finditer(text):
        try:
            day = date.fromisoformat(m.group(1))
        except ValueError:
            continue
        if day >= today:
            why = f"is {'today' if day == today else 'later than today'} ({today})"
            because = (
                "The dream never consolidates today's log (it is still being written), so the entry is "
                "a mistake that would take every daily log up to that day, today's included, out of the index"
            )
        elif newest_log is not None and day > newest_log:
            why = f"is later than the newest daily log ({newest_log.isoformat()}.md)"
            because = (
                "The dream only advances the watermark to a day whose log it read, so the entry is a "
                "mistake (or that day's daily log was deleted: restore it)"
            )
        else:
            found = day if found is None or day > found else found
            continue
        line = text.count("\n", 0, m.start()) + 1
        raise WatermarkError(
            f"{log_md} line {line}: watermark={day.isoformat()} {why}; fix: correct the date on that line "
            f"to the last day the dream consolidated, or delete the line. {because}. The index and the "
            "vault were left as they are."
        )
    return found


def read_last_lint_date(log_md: Path) -> date | None:
    if not log_md.exists():
        return None
    return max(_dates(LINT_RE, read_text(log_md).text), default=None)


def _append(log_md: Path, entry: str) -> None:
    append_durable(log_md, "\n" + entry.rstrip() + "\n")


UNCONSOLIDATED_RE = re.compile(r"unconsolidated=([0-9,-]+)")


def append_ingest_entry(
    log_md: Path, run_date: date, watermark: date, unconsolidated: list[date] | None = None
) -> None:
    """An ingest entry; a skip (retry-then-skip) also names the days it left unconsolidated, after
    the watermark, so the record survives the loss of ``dream_state.json``."""
    entry = f"## [{run_date.isoformat()}] ingest | daily logs  watermark={watermark.isoformat()}"
    if unconsolidated:
        entry += "  unconsolidated=" + ",".join(d.isoformat() for d in unconsolidated)
    _append(log_md, entry)


def read_skipped_days(log_md: Path) -> list[date]:
    """Every day a skip entry of ``log.md`` named as unconsolidated (over-inclusive: days a later
    dream folded are still listed, which keeps them indexed until a dream folds them again)."""
    if not log_md.exists():
        return []
    days = set()
    for match in UNCONSOLIDATED_RE.finditer(read_text(log_md).text):
        for part in match.group(1).split(","):
            try:
                days.add(date.fromisoformat(part))
            except ValueError:
                continue
    return sorted(days)


def _one_line(summary: str) -> str:
    """``summary`` as one plain line that cannot pass for an entry: newlines collapsed, ``##``
    runs reduced to ``#`` (so no ``## [date] lint`` inside it) and ``watermark=`` spaced out (so
    it can never move the watermark)."""
    line = " ".join(summary.split())
    while "##" in line:
        line = line.replace("##", "#")
    return line.lstrip("#").strip().replace("watermark=", "watermark =")


def append_lint_entry(log_md: Path, run_date: date, summary: str | None = None) -> None:
    """Append ``## [YYYY-MM-DD] lint`` (the existing format), with ``summary`` on the next line
    when one is given, durably (append only; nothing before it is rewritten)."""
    entry = f"## [{run_date.isoformat()}] lint"
    line = _one_line(summary) if summary else ""
    _append(log_md, f"{entry}\n{line}" if line else entry)
