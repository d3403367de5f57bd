"""A home's dedup measurement with its files and report, as ``memory-assets dedup-report`` and the
upkeep's dedup step take it (design §5.11).

``measure_dedup``: the near duplicates measured over the home's index (``measure_home``), the
latest measurement's files written to the home's ``dedup/`` and the measurement appended to its
history under ``source`` (who measured: ``cli``, ``dagster:<run id>``), then, with ``report``, the
analysts' HTML report written (to ``html``; default ``dedup/report.html``).
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_assets.core.audit.measurement import measure_home, write_measurement, write_report_html
from memory_assets.core.home import Home


@dataclass
class DedupResult:
    """The measurement, its files and the rendered report (None: not asked for)."""

    measurement: Any
    directory: Path
    """Where the dedup files are (the home's ``dedup/``)."""
    paths: dict[str, Any] = field(default_factory=dict)
    html: Any = None


def measure_dedup(home: Home, source: str, *, report: bool = True, html: Path | None = None) -> DedupResult:
    """See the module docstring."""
    measurement = measure_home(home.settings, home.store)
    directory = home.settings.dedup_dir
    paths = write_measurement(measurement, directory, source=source)
    return DedupResult(measurement, directory, paths, write_report_html(directory, html) if report else None)
