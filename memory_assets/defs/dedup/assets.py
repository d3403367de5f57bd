"""The analysts' dedup report: near-duplicate rates by write path, plotted over time, and the
stored history every measurement appends to, with its self-contained HTML report."""

from pathlib import Path

import dagster as dg
import polars as pl

from memory_assets.core.audit.dedup import DEFAULT_THRESHOLDS
from memory_assets.core.audit.measurement import Measurement
from memory_assets.core.home import Home
from memory_assets.core.ops.dedup_report import DedupHistory, measure_dedup, render_history
from memory_assets.defs.index.assets import archival_memories
from memory_assets.defs.index.external import daily_logs
from memory_assets.defs.partitions import home_partitions
from memory_assets.defs.resources import MemoryHomeResource
from memory_assets.defs.text_free import TextFree


def rate_metadata(report: dict) -> dict[str, float | int]:
    """One float per write path and threshold (plus rows), named so the UI plots each over time."""
    out: dict[str, float | int] = {"rows": report["rows"]}
    entries = {**report["by_write_path"], "all_write_paths": report["across_write_paths"]}
    for path, entry in entries.items():
        out[f"{path}/rows"] = int(entry["rows"])
        for key, value in entry.items():
            if key != "rows":
                out[f"{path}/{key}"] = float(value)
    backlog = report["backlog"]
    for key in ("fact_lines", "logs", "exact_repeats", "near_duplicates", "clusters"):
        out[f"backlog/{key}"] = int(backlog[key])
    out["backlog/largest_cluster_size"] = int(backlog["largest_cluster"]["size"])
    return out


@dg.asset(
    deps=[archival_memories, daily_logs],
    partitions_def=home_partitions,
    group_name="dedup",
    kinds={"polars", "parquet"},
    description="Near-duplicate rates of the index per write path at cosine >= "
    + ", ".join(f"{t:g}" for t in DEFAULT_THRESHOLDS)
    + " (a row is redundant when an earlier row, by fact date then id, reaches the threshold), the "
    "on-disk backlog of the daily logs, and pairs.parquet / clusters.parquet beside the index; each "
    "measurement is appended to history.parquet.",
)
def dedup_report(context: dg.AssetExecutionContext, memory: MemoryHomeResource) -> dg.MaterializeResult:
    home = memory.open().ready()
    done = measure_dedup(home, f"dagster:{context.run.run_id}", report=False)
    free = TextFree(home.settings.state_dir)
    context.log.info("\n" + free.dedup_markdown(done.measurement.report))
    return dg.MaterializeResult(metadata=report_metadata(done.measurement, done.paths, free))


def report_metadata(measurement: Measurement, paths: dict[str, Path], free: TextFree) -> dict[str, object]:
    """``dedup_report``'s metadata for one measurement (its run's, or a batch's for a user): the
    rates and the backlog, text-free (the clusters' and the pairs' texts stay in the home)."""
    return {
        "report": dg.MetadataValue.md(free.dedup_markdown(measurement.report)),
        **rate_metadata(measurement.report),
        "pairs": dg.MetadataValue.path(str(paths["pairs"])),
        "clusters": dg.MetadataValue.path(str(paths["clusters"])),
        "report_json": dg.MetadataValue.path(str(paths["report"])),
        "history": dg.MetadataValue.path(str(paths["history"])),
        "seconds": round(measurement.seconds, 3),
    }


def trend_markdown(history: pl.DataFrame) -> str:
    """Per write path and threshold: the first and the latest rate, the change, the range."""
    if history.is_empty():
        return "_no measurement stored_"
    summary = (
        history.sort("measured_at")
        .group_by(["write_path", "threshold"], maintain_order=True)
        .agg(
            pl.len().alias("n"),
            pl.col("rate").first().alias("first"),
            pl.col("rate").last().alias("latest"),
            pl.col("rate").min().alias("min"),
            pl.col("rate").max().alias("max"),
        )
        .sort(["write_path", "threshold"])
    )
    lines = [
        "| write path | threshold | measurements | first | latest | change | min | max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in summary.iter_rows(named=True):
        change = 100 * (r["latest"] - r["first"])
        lines.append(
            f"| {r['write_path']} | {r['threshold']:g} | {r['n']} | {r['first']:.1%} | {r['latest']:.1%} | "
            f"{change:+.1f} pts | {r['min']:.1%} | {r['max']:.1%} |"
        )
    return "\n".join(lines)


@dg.asset(
    deps=[dedup_report],
    partitions_def=home_partitions,
    group_name="dedup",
    kinds={"parquet", "html"},
    description="The stored history of every dedup measurement (dedup/history.parquet beside the index, "
    "one row per measurement, write path and threshold, with the backlog figures; polars and DuckDB read "
    "it directly) and the analysts' report rendered from it: dedup/report.html, one self-contained file "
    "(plotly.js inlined, opens offline) with the trend per write path and threshold, the largest clusters "
    "and the paraphrase pairs. Its metadata plots each latest rate and the backlog over time.",
)
def dedup_history(context: dg.AssetExecutionContext, memory: MemoryHomeResource) -> dg.MaterializeResult:
    history = render_history(Home(memory.settings()))
    metadata = history_metadata(history)
    context.log.info(f"dedup report with {metadata['measurements']} measurement(s): {history.html}")
    return dg.MaterializeResult(metadata=metadata)


def history_metadata(stored: DedupHistory) -> dict[str, object]:
    """``dedup_history``'s metadata: the stored history and the report rendered from it."""
    history = stored.frame
    latest = history.filter(pl.col("measured_at") == history["measured_at"].max())
    metadata: dict[str, object] = {
        "measurements": history["measured_at"].n_unique(),
        "first_measured_at": str(history["measured_at"].min()),
        "trend": dg.MetadataValue.md(trend_markdown(history)),
        "history": dg.MetadataValue.path(str(stored.path)),
        "report_html": dg.MetadataValue.path(str(stored.html)),
    }
    for r in latest.iter_rows(named=True):
        metadata[f"{r['write_path']}/{r['threshold']:g}"] = float(r["rate"])
    if not latest.is_empty():
        first = latest.row(0, named=True)
        for key in ("fact_lines", "exact_repeats", "near_duplicates", "clusters"):
            metadata[f"backlog/{key}"] = int(first[key])
    return metadata
