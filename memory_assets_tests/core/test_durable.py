"""The lock directory worked out once per environment, and the unsynced atomic write."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_assets.core.durable import LOCK_DIR_ENV, LockTimeout, lock_dir, named_lock, write_atomic

REPO = Path(__file__).resolve().parents[2]


def test_the_lock_directory_follows_the_environment_and_comes_back_when_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    monkeypatch.setenv(LOCK_DIR_ENV, str(first))
    with named_lock("durable-test"):
        pass
    assert lock_dir() == first and any(first.iterdir())
    shutil.rmtree(first)  # removed under a running process: the next lock creates it again
    with named_lock("durable-test"):
        assert first.is_dir()
    # Another directory in the environment: a real process holding a lock there is seen.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from memory_assets.core.durable import named_lock\n"
            "with named_lock('durable-test'):\n print('held', flush=True); time.sleep(20)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, LOCK_DIR_ENV: str(second), "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with named_lock("durable-test", timeout=0.2):  # still the first directory: free
            pass
        monkeypatch.setenv(LOCK_DIR_ENV, str(second))
        assert lock_dir() == second
        with pytest.raises(LockTimeout), named_lock("durable-test", timeout=0.2):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_an_unsynced_atomic_write_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    path.write_text("old")
    write_atomic(path, b"new bytes", sync=False)
    write_atomic(path, "newer text", sync=False)
    assert path.read_text() == "newer text" and [p.name for p in tmp_path.iterdir()] == ["cache.json"]
