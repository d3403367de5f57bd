"""The reconcile's cost: 1,000 superseded lines over 60 days of logs.

    .venv/bin/python benchmarks/bench_reconcile.py               # 60 days x 100 facts, 1,000 lines
    .venv/bin/python benchmarks/bench_reconcile.py --lines 200

On the consolidation benchmark's generated home (``make_consolidation_home.py``), indexed with the
bundled model, ``superseded.txt`` gets the given number of distinct log facts (as the dream writes
them: ``- [category] text `tags```), then one ``reconcile`` runs: retire (a tombstone per line,
each day holding one reindexed), the sweep, optimize. Prints its time, the rows it removed, and the
table's versions and fragments before and after.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import log, table
from fixtures.make_consolidation_home import generate
from memory_assets.core.home import Home
from memory_assets.core.capture.daily_log import list_logs, read_daily_log
from memory_assets.core.reconcile import reconcile
from memory_assets.core.settings import Settings


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--lines", type=int, default=1000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_reconcile_"))
    try:
        home = root / "home"
        log(f"generating {args.days} days x 100 facts and indexing them")
        generate(home, args.days, 100)
        settings = Settings.load(home, env={})
        indexer = Home(settings).indexer
        indexer.sweep()
        # Many small writes first, as a live index has between two optimizes.
        for day, _ in list_logs(settings.archive_dir)[-10:]:
            (settings.notebook_dir / "3_Personal" / f"Note {day}.md").write_text(
                f"- A note written on {day}.\n"
            )
            indexer.reindex_files(keys=[f"notebook:3_Personal/Note {day}.md"])
        seen: dict[str, str] = {}
        for _, path in list_logs(settings.archive_dir):
            for fact in read_daily_log(path).facts:
                if len(fact.content) >= 24:
                    seen.setdefault(fact.content, f"- [{fact.category}] {fact.content} `folded`")
                if len(seen) >= args.lines:
                    break
            if len(seen) >= args.lines:
                break
        settings.superseded_path.write_text("".join(f"{line}\n" for line in seen.values()))
        log(f"{len(seen)} superseded lines; reconciling")
        rows_before = indexer.store.count()
        start = time.perf_counter()
        result = reconcile(settings, indexer)
        seconds = time.perf_counter() - start
        print("# memory-assets reconcile benchmark\n")
        print(
            f"command : .venv/bin/python benchmarks/bench_reconcile.py --days {args.days} --lines {args.lines}"
        )
        print(
            f"home    : {args.days} days x 100 facts; {len(seen)} distinct superseded lines; "
            f"{len(result.days_reindexed)} day(s) held one and were reindexed\n"
        )
        print(
            table(
                [
                    ["reconcile, whole", f"{seconds:.1f} s", ""],
                    ["retired (tombstoned once)", result.retired, f"{result.already_retired} already"],
                    [
                        "rows removed",
                        f"{rows_before} -> {indexer.store.count()}",
                        "every row holding a retired line (a line can repeat over days)",
                    ],
                    ["fragments", f"{result.fragments_before} -> {result.fragments_after}", "optimize ran"],
                    [
                        "versions kept",
                        f"{result.versions_before} -> {result.versions_after}",
                        "optimize prunes versions older than 1 day; these are all newer",
                    ],
                ],
                ["figure", "value", "note"],
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
