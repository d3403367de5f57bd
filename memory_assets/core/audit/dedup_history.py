"""The dedup measurement's history: one Parquet file, ``history.parquet``, beside the index (in
``Settings.dedup_dir``), that every measurement appends to, so polars or DuckDB read the trend
directly (``pl.read_parquet(path)``, ``SELECT * FROM 'history.parquet'``).

One row per measurement, write path and threshold (long form, so a filter and a pivot give any
trend):

=====================  ==================================================================
``measured_at``        when (UTC, microseconds); the same for every row of one measurement
``source``             who measured: ``dagster:<run id>`` or ``cli``
``write_path``         ``archive_log``, ``notebook``, ``core_file``, ``transcript`` (the
                       recall tier's kept turns), ``legacy_direct``, or ``all_write_paths``
                       (every row against every earlier row)
``threshold``          the cosine threshold (0.995, 0.95, 0.92)
``rate``               the share of the path's rows redundant at the threshold (0-1)
``rows``               the path's rows in the index
``table_rows``         all rows in the index
``fact_lines`` ...     the on-disk backlog of the daily logs: ``fact_lines``, ``logs``,
                       ``exact_repeats``, ``near_duplicates``, ``clusters``,
                       ``largest_cluster_size`` (the same on every row of a measurement)
=====================  ==================================================================

Appending is a read-modify-write of the whole file under its writers' lock, replaced atomically
and durably: two measurements at once both land, and a reader sees the old file or the new one.
An unreadable history is never overwritten: the error names the file and the fix.
"""

from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from memory_assets.core.durable import file_lock, replace_durable

HISTORY_FILE = "history.parquet"
ALL_WRITE_PATHS = "all_write_paths"
BACKLOG_FIGURES = (
    "fact_lines",
    "logs",
    "exact_repeats",
    "near_duplicates",
    "clusters",
    "largest_cluster_size",
)

SCHEMA: dict[str, Any] = {
    "measured_at": pl.Datetime("us", "UTC"),
    "source": pl.String,
    "write_path": pl.String,
    "threshold": pl.Float64,
    "rate": pl.Float64,
    "rows": pl.Int64,
    "table_rows": pl.Int64,
    **dict.fromkeys(BACKLOG_FIGURES, pl.Int64),
}


def history_path(dedup_dir: Path) -> Path:
    return dedup_dir / HISTORY_FILE


def measurement_rows(report: dict[str, Any], measured_at: datetime, source: str) -> pl.DataFrame:
    """The history rows of one measurement (``dedup.dedup_report``'s report)."""
    backlog = report["backlog"]
    figures = {key: int(backlog[key]) for key in BACKLOG_FIGURES if key != "largest_cluster_size"}
    figures["largest_cluster_size"] = int(backlog["largest_cluster"]["size"])
    entries = {**report["by_write_path"], ALL_WRITE_PATHS: report["across_write_paths"]}
    rows = [
        {
            "measured_at": measured_at,
            "source": source,
            "write_path": path,
            "threshold": float(key),
            "rate": float(value),
            "rows": int(entry["rows"]),
            "table_rows": int(report["rows"]),
            **figures,
        }
        for path, entry in entries.items()
        for key, value in entry.items()
        if key != "rows"
    ]
    return pl.DataFrame(rows, schema=SCHEMA)


def read_history(dedup_dir: Path) -> pl.DataFrame:
    """Every stored measurement, oldest first (an empty frame when none was stored)."""
    path = history_path(dedup_dir)
    if not path.exists():
        return pl.DataFrame(schema=SCHEMA)
    try:
        frame = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise ValueError(
            f"{path}: the dedup history cannot be read ({exc}); restore it from a backup, or move it "
            "aside to start a new history"
        ) from exc
    missing = [name for name in SCHEMA if name not in frame.columns]
    if missing:
        raise ValueError(
            f"{path}: the dedup history lacks the columns {missing}; it is not this project's history "
            "file: move it aside to start a new one"
        )
    return frame.select(list(SCHEMA)).cast(SCHEMA).sort("measured_at", maintain_order=True)


def append_history(
    dedup_dir: Path, report: dict[str, Any], measured_at: datetime, source: str
) -> tuple[Path, pl.DataFrame]:
    """Append one measurement; returns the file and the whole history after the append."""
    dedup_dir.mkdir(parents=True, exist_ok=True)
    path = history_path(dedup_dir)
    with file_lock(path):
        history = pl.concat([read_history(dedup_dir), measurement_rows(report, measured_at, source)])
        replace_durable(path, history.write_parquet)
    return path, history


__all__ = [
    "ALL_WRITE_PATHS",
    "BACKLOG_FIGURES",
    "HISTORY_FILE",
    "SCHEMA",
    "append_history",
    "history_path",
    "measurement_rows",
    "read_history",
]
