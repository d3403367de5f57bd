"""The dedup measurement across the users of a root (design §5.11, §11.1).

Each user's home keeps its own dedup history (``core/audit/dedup_history.py``:
``<dedup_dir>/history.parquet``), written by that user's ``dedup_report`` runs. This module reads
the latest measurement of every user who has one and puts them side by side:

* ``latest_by_user(root)``: one row per user, write path and threshold (the history's columns,
  plus ``user``), from each user's latest measurement;
* ``across_users(frame)``: per write path and threshold, the users measured, their rows, and the
  rate across users weighted by rows (the share of all users' rows that are redundant: each
  user's rate is within that user's index, as users never share rows), with the lowest and
  highest user's rate;
* ``write_across_users(root, frame)``: ``<root>/dedup/by_user.parquet``, replaced atomically
  under the file's lock, with the rows of the users who still have a home only (a user deleted
  while the measurement was read is not written back: ``core/ops/delete_user.py`` takes the same
  lock to remove a user's rows).

A user whose history cannot be read is reported by name, never silently left out.
"""

from pathlib import Path

import polars as pl

from memory_assets.core.audit.dedup_history import SCHEMA, read_history
from memory_assets.core.durable import file_lock, replace_durable
from memory_assets.core.ops.users import list_users, user_settings

ACROSS_FILE = "by_user.parquet"


def latest_by_user(root: Path) -> tuple[pl.DataFrame, list[str]]:
    """Every measured user's latest measurement (long form, with ``user``), and the problems met."""
    frames, problems = [], []
    for user in list_users(root):
        try:
            history = read_history(user_settings(root, user).dedup_dir)
        except ValueError as exc:
            problems.append(f"{user}: {exc}")
            continue
        if history.is_empty():
            continue
        latest = history.filter(pl.col("measured_at") == history["measured_at"].max())
        frames.append(latest.with_columns(pl.lit(user).alias("user")))
    if not frames:
        return pl.DataFrame(schema={"user": pl.String, **SCHEMA}), problems
    return pl.concat(frames).select(["user", *SCHEMA]), problems


def across_users(frame: pl.DataFrame) -> pl.DataFrame:
    """Per write path and threshold: users, rows, the row-weighted rate, the lowest and highest."""
    return (
        frame.group_by(["write_path", "threshold"])
        .agg(
            pl.col("user").n_unique().alias("users"),
            pl.col("rows").sum().alias("rows"),
            ((pl.col("rate") * pl.col("rows")).sum() / pl.col("rows").sum().clip(lower_bound=1)).alias(
                "rate"
            ),
            pl.col("rate").min().alias("lowest_user_rate"),
            pl.col("rate").max().alias("highest_user_rate"),
        )
        .sort(["write_path", "threshold"])
    )


def across_users_path(root: Path) -> Path:
    return Path(root) / "dedup" / ACROSS_FILE


def write_across_users(root: Path, frame: pl.DataFrame) -> Path:
    path = across_users_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path):
        kept = frame.filter(pl.col("user").is_in(list_users(root)))
        replace_durable(path, lambda tmp: kept.write_parquet(tmp))
    return path
