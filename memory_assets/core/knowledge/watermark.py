"""The vault's ``log.md``: the dream's operation log and the consolidation watermark.

Entries are appended, never rewritten (existing format)::

    ## [2026-08-20] ingest | daily logs  watermark=2026-08-19
    ## [2026-08-21] lint

The watermark is the MAXIMUM date of all ``watermark=`` entries (design §4.3), so a stray
older entry, for example one written by a manual ingest, cannot move it backwards.
"""

import re
from datetime import date
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


def read_watermark(log_md: Path) -> date | None:
    if not log_md.exists():
        return None
    return max(_dates(WATERMARK_RE, read_text(log_md).text), default=None)


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
