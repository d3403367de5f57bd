"""Many homes: the dedup report across users (each user's own is ``dedup_report``'s partition)."""

import dagster as dg

from memory_assets.core.ops.dedup_across_users import across_users, latest_by_user, write_across_users
from memory_assets.defs.dedup.assets import dedup_history
from memory_assets.defs.resources import MemoryHomeResource
from memory_assets.defs.text_free import TextFree


def _table(frame) -> str:  # noqa: ANN001
    lines = [
        "| write path | threshold | users | rows | rate across users | lowest user | highest user |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in frame.iter_rows(named=True):
        lines.append(
            f"| {r['write_path']} | {r['threshold']:g} | {r['users']} | {r['rows']} | {r['rate']:.1%} | "
            f"{r['lowest_user_rate']:.1%} | {r['highest_user_rate']:.1%} |"
        )
    return "\n".join(lines) if len(lines) > 2 else "_no user measured yet_"


@dg.asset(
    deps=[dedup_history],
    group_name="dedup",
    kinds={"polars", "parquet"},
    description="Many homes: every user's latest dedup measurement side by side (<root>/dedup/by_user.parquet, "
    "one row per user, write path and threshold) and the rates across users, weighted by rows. Each user's "
    "own report is dedup_report's (and dedup_history's) partition of that user.",
)
def dedup_across_users(context: dg.AssetExecutionContext, memory: MemoryHomeResource) -> dg.MaterializeResult:
    root = memory.root_dir()
    if root is None:
        raise dg.Failure("dedup_across_users needs MEMORY_ROOT (the root of the users' homes)")
    by_user, problems = latest_by_user(root)
    TextFree(None).log(context.log, "warning", problems)  # across users: no one home's key
    summary = across_users(by_user)
    path = write_across_users(root, by_user)
    metadata: dict[str, object] = {
        "users_measured": by_user["user"].n_unique(),
        "unreadable_histories": len(problems),
        "across_users": dg.MetadataValue.md(_table(summary)),
        "by_user": dg.MetadataValue.path(str(path)),
    }
    for r in summary.iter_rows(named=True):
        metadata[f"{r['write_path']}/{r['threshold']:g}"] = float(r["rate"])
    return dg.MaterializeResult(metadata=metadata)
