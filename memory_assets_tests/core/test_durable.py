"""The lock directory worked out once per environment, the unsynced atomic write, and appends
that are all or nothing (a failed one taken back) and withdrawn while they are the file's last."""

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_assets.core.durable import (
    LockTimeout,
    append_durable,
    lock_dir,
    named_lock,
    recorded_appends,
    withdraw,
    write_atomic,
)
from memory_assets.core.settings import LOCK_DIR_ENV

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


# A child that appends past a real limit of the kernel (RLIMIT_FSIZE: a write past it fails with
# EFBIG, after writing what fits), as a full disk fails an append part way.
_LIMITED_APPEND = """
import os, resource, signal, sys
from pathlib import Path
from memory_assets.core.durable import append_durable
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
path, limit, text = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    append_durable(path, text, header="# H1\\n")
except OSError as exc:
    print("failed", exc.errno)
else:
    print("appended")
"""


def limited_append(path: Path, limit: int, text: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _LIMITED_APPEND, str(path), str(limit), text],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_append_that_fails_part_way_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    log = tmp_path / "log.md"
    append_durable(log, "- line one\n", header="# H1\n")
    before = log.read_bytes()
    # Room for part of the text only: the kernel writes what fits, then refuses the rest.
    assert limited_append(log, len(before) + 5, "- a line too long to fit\n") == f"failed {errno.EFBIG}"
    assert log.read_bytes() == before
    # A file the failed append created is not left behind, empty or torn.
    new = tmp_path / "new.md"
    assert limited_append(new, 3, "- x\n") == f"failed {errno.EFBIG}"
    assert not new.exists()
    assert limited_append(log, 10_000, "- line two\n") == "appended"
    assert log.read_bytes() == before + b"- line two\n"


def test_appends_are_recorded_and_withdrawn_only_while_they_are_last(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    append_durable(a, "kept\n")
    with recorded_appends() as outer:
        first = append_durable(a, "mine\n")
        with recorded_appends() as inner:
            second = append_durable(b, "mine too\n")
        assert inner == [second]
    assert outer == [first, second] and second.created and not first.created
    append_durable(a, "someone else's\n")  # after mine: mine cannot be taken back without theirs
    assert not withdraw(first) and a.read_text() == "kept\nmine\nsomeone else's\n"
    assert withdraw(second) and not b.exists()
    append_durable(a, "mine again\n")  # outside a block: recorded nowhere
    assert outer == [first, second]
    last = append_durable(a, "last\n")
    assert withdraw(last) and a.read_text() == "kept\nmine\nsomeone else's\nmine again\n"
    assert not withdraw(last)  # once
