"""A home's dedup measurement with its files and report, as ``memory-assets dedup-report``, the
upkeep's dedup step and the Dagster dedup assets take it (design §5.11).

``measure_dedup``: the near duplicates measured over the home's index (``measure_home``), the
latest measurement's files written to the home's ``dedup/`` and the measurement appended to its
history under ``source`` (who measured: ``cli``, ``dagster:<run id>``), then, with ``report``, the
analysts' HTML report written (to ``html``; default ``dedup/report.html``).

``render_history``: the analysts' HTML report rendered again from the stored history and the
latest measurement's files, no new measurement; with the history it was rendered from
(``DedupHistory``: one row per measurement, write path and threshold).

``markdown_without_texts``: a measurement's markdown table for a record kept outside the home:
the largest cluster's text given as its tag (``tag``, the caller's), the paraphrase pairs counted
and not quoted (their texts stay in the home, in ``dedup/report.html``).
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from memory_assets.core.audit.dedup import markdown_table
from memory_assets.core.audit.dedup_history import history_path, read_history
from memory_assets.core.audit.measurement import measure_home, write_measurement, write_report_html
from memory_assets.core.home import Home


@dataclass
class DedupHistory:
    """A home's stored dedup history (``dedup_history.SCHEMA``'s columns), the file that holds it,
    and the report rendered from it (None: not rendered)."""

    frame: pl.DataFrame
    path: Path
    html: Path | None = None

    @classmethod
    def read(cls, directory: Path, html: Path | None = None) -> "DedupHistory":
        """The history stored in ``directory`` (a home's ``dedup/``); ``ValueError`` if unreadable."""
        return cls(read_history(directory), history_path(directory), html)


@dataclass
class DedupResult:
    """The measurement, its files and the rendered report (None: not asked for)."""

    measurement: Any
    directory: Path
    """Where the dedup files are (the home's ``dedup/``)."""
    paths: dict[str, Any] = field(default_factory=dict)
    html: Any = None

    def history(self) -> DedupHistory:
        """The home's stored history, this measurement included, with its rendered report."""
        return DedupHistory.read(self.directory, self.html)


def measure_dedup(home: Home, source: str, *, report: bool = True, html: Path | None = None) -> DedupResult:
    """See the module docstring."""
    measurement = measure_home(home.settings, home.store)
    directory = home.settings.dedup_dir
    paths = write_measurement(measurement, directory, source=source)
    return DedupResult(measurement, directory, paths, write_report_html(directory, html) if report else None)


def render_history(home: Home) -> DedupHistory:
    """See the module docstring; ``ValueError`` naming the fix when nothing was measured yet."""
    directory = home.settings.dedup_dir
    return DedupHistory.read(directory, write_report_html(directory))


def markdown_without_texts(report: dict[str, Any], tag: Callable[[str], str]) -> str:
    """See the module docstring; ``report`` is a measurement's (``Measurement.report``), unchanged."""
    shown = copy.deepcopy(report)
    backlog = shown["backlog"]
    largest = backlog["largest_cluster"]
    if largest.get("text"):
        largest["text"] = tag(str(largest["text"]))
    pairs = len(backlog.get("paraphrase_pairs") or [])
    backlog["paraphrase_pairs"] = []
    text = markdown_table(shown)
    if pairs:
        text += f"\n{pairs} paraphrase pair(s) where one side is less informative: see dedup/report.html\n"
    return text
