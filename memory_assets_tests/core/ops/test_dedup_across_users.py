"""The dedup report across the users of a root: each user's latest measurement side by side,
the rates across users weighted by rows, and a user whose history cannot be read named."""

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from memory_assets.core.audit.dedup_history import BACKLOG_FIGURES, SCHEMA, history_path
from memory_assets.core.ops.dedup_across_users import across_users, latest_by_user, write_across_users
from memory_assets.core.ops.users import open_user_home


def _history(root: Path, user: str, *measurements: tuple[datetime, float, int]) -> None:
    dedup_dir = open_user_home(root, user, create=True).settings.dedup_dir
    dedup_dir.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "measured_at": at,
            "source": "test",
            "write_path": "write_path",
            "threshold": 0.95,
            "rate": rate,
            "rows": rows,
            "table_rows": rows,
            **dict.fromkeys(BACKLOG_FIGURES, 0),
        }
        for at, rate, rows in measurements
    ]
    pl.DataFrame(rows, schema=SCHEMA).write_parquet(history_path(dedup_dir))


def test_each_users_latest_measurement_and_the_rate_across_users_weighted_by_rows(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _history(
        root,
        "alice",
        (datetime(2026, 11, 1, tzinfo=UTC), 0.5, 80),
        (datetime(2026, 12, 1, tzinfo=UTC), 0.1, 100),
    )
    _history(root, "bob", (datetime(2026, 11, 20, tzinfo=UTC), 0.3, 300))
    open_user_home(root, "carol", create=True)  # never measured: not in the report
    broken = open_user_home(root, "dave", create=True).settings.dedup_dir
    broken.mkdir(parents=True, exist_ok=True)
    history_path(broken).write_bytes(b"not parquet")

    latest, problems = latest_by_user(root)
    assert sorted(zip(latest["user"], latest["rate"], latest["rows"], strict=True)) == [
        ("alice", 0.1, 100),
        ("bob", 0.3, 300),
    ]
    assert len(problems) == 1 and problems[0].startswith("dave: ") and "cannot be read" in problems[0]

    [row] = across_users(latest).to_dicts()
    assert row["users"] == 2 and row["rows"] == 400
    assert row["rate"] == pytest.approx((0.1 * 100 + 0.3 * 300) / 400)
    assert (row["lowest_user_rate"], row["highest_user_rate"]) == (0.1, 0.3)

    path = write_across_users(root, latest)
    assert path == root / "dedup" / "by_user.parquet"
    assert pl.read_parquet(path).equals(latest)
