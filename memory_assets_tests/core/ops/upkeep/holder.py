"""A real process holding one home's upkeep exclusion, for the tests: ``python -m
memory_assets_tests.core.ops.upkeep.holder HOME HOLDER BARRIER``. It takes the exclusion, creates
``BARRIER.held``, then waits until ``BARRIER`` exists (or is killed) and lets go."""

import sys
import time
from pathlib import Path

from memory_assets.core.ops.upkeep.exclusion import exclusive
from memory_assets.core.settings import Settings


def main() -> None:
    home, holder, barrier = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    with exclusive(Settings.load(home, env={}), holder, timeout=10):
        barrier.with_suffix(".held").touch()
        deadline = time.monotonic() + 300
        while not barrier.exists() and time.monotonic() < deadline:
            time.sleep(0.05)


if __name__ == "__main__":
    main()
