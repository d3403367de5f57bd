"""The user's exclusion across real processes: a holder is named when it refuses, a batch's
``timeout=0`` never waits, a killed holder lets go, and an error inside is never a refusal."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_assets.core.durable import LockTimeout
from memory_assets.core.ops.upkeep.exclusion import UserHeld, exclusive
from memory_assets.core.settings import Settings

ROOT = Path(__file__).resolve().parents[4]


def held_by_another(settings: Settings, barrier: Path) -> subprocess.Popen:
    """A real process holding ``settings``' home as "upkeep batch run B1", once it says so."""
    process = subprocess.Popen(
        [sys.executable, "-m", "memory_assets_tests.core.ops.upkeep.holder", str(settings.home), "upkeep batch run B1", str(barrier)],
        cwd=ROOT, env={**os.environ},
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not barrier.with_suffix(".held").exists():
        assert process.poll() is None, "the holder exited before holding"
        assert time.monotonic() < deadline, "the holder never held the home"
        time.sleep(0.05)
    return process


@pytest.fixture
def holder(settings: Settings, tmp_path: Path) -> Iterator[tuple[subprocess.Popen, Path]]:
    barrier = tmp_path / "release"
    process = held_by_another(settings, barrier)
    yield process, barrier
    barrier.touch()
    process.wait(timeout=30)


def test_a_held_home_is_refused_at_once_naming_its_holder(
    settings: Settings, holder: tuple[subprocess.Popen, Path]
) -> None:
    process, barrier = holder
    with pytest.raises(UserHeld) as refused, exclusive(settings, "upkeep batch run B2", timeout=0):
        raise AssertionError("entered a held home")
    assert refused.value.holder.startswith(f"upkeep batch run B1 (pid {process.pid}, since ")
    assert str(settings.home) in str(refused.value) and "run it again" in str(refused.value)
    barrier.touch()
    process.wait(timeout=30)
    with exclusive(settings, "upkeep batch run B2", timeout=10):  # let go: free again
        pass


def test_a_killed_holder_holds_nothing(settings: Settings, tmp_path: Path) -> None:
    process = held_by_another(settings, tmp_path / "never")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    with exclusive(settings, "after the kill", timeout=10):
        pass


def test_an_error_inside_is_never_taken_for_a_refusal(settings: Settings) -> None:
    with pytest.raises(LockTimeout) as raised, exclusive(settings, "me", timeout=0):
        raise LockTimeout("a lock inside the block")
    assert not isinstance(raised.value, UserHeld)
