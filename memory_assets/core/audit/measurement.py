"""The dedup measurement of a whole memory home: the index's stored embeddings and the logs on disk.

Reads what the indexer stored (never re-embeds), runs ``dedup.py``'s exact measurement, and
writes the analysts' files in ``Settings.dedup_dir`` beside the index: ``pairs.parquet`` (each
redundant row and its best earlier match), ``clusters.parquet`` (the backlog's near-duplicate
clusters) and ``report.json``, each the latest measurement's, and ``history.parquet``, which
every measurement appends to (``dedup_history.py``). ``write_report_html`` renders the history
and the latest measurement as one self-contained HTML file (``dedup_html.py``).
"""

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from memory_assets.core.audit import dedup
from memory_assets.core.audit.dedup_history import append_history, read_history
from memory_assets.core.audit.dedup_html import write_html
from memory_assets.core.durable import replace_durable, write_atomic
from memory_assets.core.index.store import MemoryStore, quote
from memory_assets.core.settings import Settings
from memory_assets.core.sources import LEGACY_SOURCE_TYPE


@dataclass
class Measurement:
    report: dict[str, Any]
    pairs: pl.DataFrame
    clusters: pl.DataFrame
    markdown: str
    seconds: float
    measured_at: datetime


def _vectors(column: Any, rows: int) -> np.ndarray:
    if rows == 0:
        return np.zeros((0, 0), dtype=np.float32)
    flat = column.combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(rows, -1)


def measure_home(settings: Settings, store: MemoryStore) -> Measurement:
    measured_at = datetime.now(UTC)
    start = time.perf_counter()
    data = store.scan(
        ["id", "vector", "source_type", "fact_date", "content"], where=f"user_id = {quote(store.user_id)}"
    )
    n = data.num_rows
    ids = data.column("id").to_pylist() if n else []
    paths = [t or LEGACY_SOURCE_TYPE for t in data.column("source_type").to_pylist()] if n else []
    dates = data.column("fact_date").to_pylist() if n else []
    texts = data.column("content").to_pylist() if n else []
    redundancy = dedup.measure_redundancy(
        _vectors(data.column("vector") if n else None, n),
        paths,
        [(d or "", i) for d, i in zip(dates, ids, strict=True)],
        ids=ids,
        texts=texts,
    )
    backlog = dedup.measure_backlog(dedup.load_logs(settings.archive_dir))
    report = dedup.dedup_report(redundancy, backlog)
    return Measurement(
        report=report,
        pairs=dedup.pairs_frame(redundancy),
        clusters=dedup.clusters_frame(backlog),
        markdown=dedup.markdown_table(report),
        seconds=time.perf_counter() - start,
        measured_at=measured_at,
    )


def write_measurement(measurement: Measurement, out_dir: Path, source: str = "cli") -> dict[str, Path]:
    """Write the parquet files and the JSON report, and append the measurement to the history.
    The latest-measurement files each replace the previous one atomically and durably (temp file,
    fsync, rename, directory fsync); ``source`` says who measured (``cli``, ``dagster:<run id>``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {name: out_dir / f"{name}.parquet" for name in ("pairs", "clusters")}
    for name, frame in (("pairs", measurement.pairs), ("clusters", measurement.clusters)):
        replace_durable(paths[name], frame.write_parquet)
    paths["report"] = out_dir / "report.json"
    write_atomic(paths["report"], json.dumps(measurement.report, ensure_ascii=False, indent=2))
    paths["history"], _ = append_history(out_dir, measurement.report, measurement.measured_at, source)
    return paths


def write_report_html(out_dir: Path, path: Path | None = None) -> Path:
    """The analysts' HTML report (default ``out_dir/report.html``) from the stored history and the
    latest measurement's files in ``out_dir``; the error names what is missing and the fix."""
    report_json = out_dir / "report.json"
    if not report_json.exists():
        raise ValueError(f"{report_json} does not exist: run `memory-assets dedup-report` to measure first")
    report = json.loads(report_json.read_text(encoding="utf-8"))
    clusters_path = out_dir / "clusters.parquet"
    clusters = pl.read_parquet(clusters_path) if clusters_path.exists() else pl.DataFrame()
    return write_html(path or out_dir / "report.html", read_history(out_dir), report, clusters)
