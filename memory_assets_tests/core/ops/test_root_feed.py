"""The root's change feed and the per-home state of its follower (core/ops/root_feed.py)."""

import multiprocessing
import time
from pathlib import Path

import pytest

from memory_assets.core.ops.root_feed import (
    end_position,
    feed_dir,
    load_home_state,
    note_change,
    prune_feed,
    read_changes,
    save_home_state,
)
from memory_assets.core.ops.users import UserIdError

DAY = 86_400.0
T0 = 1_796_000_000.0  # 2026-11-30, a fixed instant


def test_changes_are_read_from_a_position_on_across_days(tmp_path: Path) -> None:
    changes, start = read_changes(tmp_path, None)  # a new follower starts at the end
    assert changes == [] and start == ("", 0)
    note_change(tmp_path, "alice", "turns", at=T0)
    note_change(tmp_path, "bob", "forget", at=T0 + 1)
    first, position = read_changes(tmp_path, start)
    assert [(c.user, c.what) for c in first] == [("alice", "turns"), ("bob", "forget")]
    note_change(tmp_path, "carol", "run", at=T0 + DAY)  # the next day's file
    later, position = read_changes(tmp_path, position)
    assert [c.user for c in later] == ["carol"]
    assert read_changes(tmp_path, position)[0] == []
    assert position == end_position(tmp_path)


def test_a_line_cut_short_is_read_once_complete_and_junk_is_skipped(tmp_path: Path) -> None:
    note_change(tmp_path, "alice", at=T0)
    path = next(feed_dir(tmp_path).iterdir())
    with path.open("ab") as fh:
        fh.write(b"1796000001.000 bo")  # a writer part way through its line
    changes, position = read_changes(tmp_path, ("", 0))
    assert [c.user for c in changes] == ["alice"]
    with path.open("ab") as fh:
        fh.write(b"b turns\nnot a change line\n1796000002.0 ../etc x\n")
    changes, _ = read_changes(tmp_path, position)
    assert [c.user for c in changes] == ["bob"]  # the junk and the bad id are skipped


def test_a_bad_user_id_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(UserIdError):
        note_change(tmp_path, "../x")
    assert not feed_dir(tmp_path).exists()


def _writer(root: str, user: str, n: int) -> None:
    for _ in range(n):
        note_change(Path(root), user, "turns")


def test_writers_in_several_processes_never_tear_a_line(tmp_path: Path) -> None:
    procs = [
        multiprocessing.get_context("spawn").Process(target=_writer, args=(str(tmp_path), f"u{n}", 300))
        for n in range(4)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    changes, _ = read_changes(tmp_path, ("", 0))
    assert sorted({c.user for c in changes}) == ["u0", "u1", "u2", "u3"]
    assert len(changes) == 1200  # every line whole (a day boundary may split them over two files)


def test_old_feed_files_are_pruned(tmp_path: Path) -> None:
    for n in range(10):
        note_change(tmp_path, "alice", at=T0 - n * DAY)
    gone = prune_feed(tmp_path, keep_days=7, now=T0)
    assert len(gone) == 2 and len(list(feed_dir(tmp_path).iterdir())) == 8


def test_a_homes_state_is_kept_and_a_garbled_one_is_forgotten(tmp_path: Path) -> None:
    assert load_home_state(tmp_path, "homes_sensor", "alice") == {}
    # No home (never made, or deleted): no state is kept at the root.
    assert save_home_state(tmp_path, "homes_sensor", "alice", {"days": "x"}) is False
    assert not (tmp_path / "state" / "homes_sensor" / "alice.json").exists()
    (tmp_path / "users" / "alice").mkdir(parents=True)
    assert save_home_state(tmp_path, "homes_sensor", "alice", {"days": "x", "at": time.time()}) is True
    assert load_home_state(tmp_path, "homes_sensor", "alice")["days"] == "x"
    (tmp_path / "state" / "homes_sensor" / "alice.json").write_text("{not json")
    assert load_home_state(tmp_path, "homes_sensor", "alice") == {}
