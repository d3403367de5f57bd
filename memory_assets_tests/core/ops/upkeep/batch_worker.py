"""A real process running one batch, for the crash tests: ``python -m
memory_assets_tests.core.ops.upkeep.batch_worker ROOT HOLDER USER...`` keeps each user's home
with a dream hint (``run_batch``), loading the model itself; a failpoint may kill it part-way."""

import sys
from pathlib import Path

from memory_assets.core.models.embedder import shared_embedder
from memory_assets.core.ops.upkeep.batch import run_batch
from memory_assets.core.ops.upkeep.work import Work


def main() -> None:
    root, holder, users = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    run_batch(root, [(u, Work(dream=True)) for u in users], holder=holder, embedder=shared_embedder())


if __name__ == "__main__":
    main()
