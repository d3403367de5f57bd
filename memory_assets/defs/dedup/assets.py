"""The analysts' dedup report: near-duplicate rates by write path, plotted over time."""

import dagster as dg

from memory_assets.core.audit.dedup import threshold_key
from memory_assets.core.audit.measurement import measure_home, write_measurement
from memory_assets.defs.index.assets import archival_memories
from memory_assets.defs.index.external import daily_logs
from memory_assets.defs.resources import MemoryHomeResource


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
    group_name="dedup",
    kinds={"polars", "parquet"},
    description="Near-duplicate rates of the index per write path at cosine >= "
    + ", ".join(threshold_key(t) for t in (0.995, 0.95, 0.92))
    + " (a row is redundant when an earlier row, by fact date then id, reaches the threshold), the "
    "on-disk backlog of the daily logs, and pairs.parquet / clusters.parquet beside the index.",
)
def dedup_report(context: dg.AssetExecutionContext, memory: MemoryHomeResource) -> dg.MaterializeResult:
    home = memory.open().ready()
    settings = home.settings
    measurement = measure_home(settings, home.store)
    paths = write_measurement(measurement, settings.dedup_dir)
    context.log.info("\n" + measurement.markdown)
    metadata: dict[str, object] = {
        "report": dg.MetadataValue.md(measurement.markdown),
        **rate_metadata(measurement.report),
        "pairs": dg.MetadataValue.path(str(paths["pairs"])),
        "clusters": dg.MetadataValue.path(str(paths["clusters"])),
        "report_json": dg.MetadataValue.path(str(paths["report"])),
        "seconds": round(measurement.seconds, 3),
    }
    return dg.MaterializeResult(metadata=metadata)
