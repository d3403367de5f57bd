"""The daily-log sensor's tick over a long history, measured side by side with the old tick.

    .venv/bin/python benchmarks/bench_sensor.py              # 1,000 logs (target: a tick <= 1 s)
    .venv/bin/python benchmarks/bench_sensor.py --logs 200   # smaller

A real home: N daily logs of 5 fact lines each, indexed for real (bulk fill with the bundled
model), so the index state records every log's digest and the first tick has nothing to request.
Then, on an ephemeral Dagster instance:

* the first tick with an empty cursor (it reads every log once: what `make ui` after `make demo`
  pays, and it requests nothing);
* ticks over the unchanged history (the steady state: stats only) — the figure with the target;
* a tick after one append (one log re-read, one run requested);
* a tick after a tombstone is written (every log above the watermark re-planned);
* the old tick's work for comparison: plan every log and hash every file, as the sensor did
  before it stat'ed files first.

Figures go to stdout, progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg

from _common import log, percentile, table

from fixtures.sentences import fact_sentences
from memory_assets.core.home import Home
from memory_assets.core.capture.daily_log import LogFact, append_facts, list_logs
from memory_assets.core.ops.status import init_home
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.settings import Settings

TARGET_S = 1.0


def tick(
    cursor: str | None, settings: Settings, instance: dg.DagsterInstance
) -> tuple[float, dg.SensorResult]:
    from memory_assets.defs.index.sensors import daily_log_sensor
    from memory_assets.defs.resources import MemoryHomeResource

    with dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"memory": MemoryHomeResource(home=str(settings.home))}
    ) as context:
        start = time.perf_counter()
        result = daily_log_sensor(context)
        return time.perf_counter() - start, result


def old_tick(settings: Settings) -> float:
    """What every tick did before: plan every log (read + parse + digest) and sha256 every file."""
    start = time.perf_counter()
    indexer = Home(settings).indexer_without_embedder()
    tombs, wm = indexer.tombstones(), indexer.watermark()
    for day, path in list_logs(settings.archive_dir):
        indexer.plan_day(day, tombs, wm, read_watermark_file=False).digest()
        hashlib.sha256(path.read_bytes()).hexdigest()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--logs", type=int, default=1000, help="daily logs in the history (default 1,000)")
    parser.add_argument("--ticks", type=int, default=20, help="steady-state ticks timed (default 20)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_sensor_"))
    first_day = date(2023, 1, 1)
    try:
        settings = Settings.load(root / "home", env={})
        init_home(settings)
        per_log = 5
        facts = fact_sentences(args.logs * per_log, seed=7)
        log(f"writing {args.logs:,} logs of {per_log} facts")
        for n in range(args.logs):
            day = first_day + timedelta(days=n)
            block = [LogFact(text, category) for category, text in facts[n * per_log : (n + 1) * per_log]]
            append_facts(
                settings.archive_dir,
                "bench000",
                block,
                now=datetime(day.year, day.month, day.day, 9, tzinfo=UTC),
            )
        log("indexing them (bulk fill with the bundled model)")
        start = time.perf_counter()
        sweep = Home(settings).indexer.sweep()
        index_s = time.perf_counter() - start
        instance = dg.DagsterInstance.ephemeral()

        cold_s, cold = tick(None, settings, instance)
        assert not cold.run_requests, "an indexed home needs no runs"
        steady = []
        cursor = cold.cursor
        for _ in range(args.ticks):
            seconds, result = tick(cursor, settings, instance)
            assert not result.run_requests
            cursor = result.cursor or cursor
            steady.append(seconds)
        old = [old_tick(settings) for _ in range(max(3, args.ticks // 4))]

        last = first_day + timedelta(days=args.logs - 1)
        append_facts(
            settings.archive_dir,
            "bench001",
            [LogFact("One more fact appended to the last day", "context")],
            now=datetime(last.year, last.month, last.day, 10, tzinfo=UTC),
        )
        append_s, appended = tick(cursor, settings, instance)
        assert [r.partition_key for r in appended.run_requests] == [last.isoformat()]
        append_tombstone(settings.tombstones_path, facts[0][1])
        tomb_s, tombed = tick(appended.cursor, settings, instance)
        assert [r.partition_key for r in tombed.run_requests] == [first_day.isoformat()]

        p50 = percentile(steady, 50)
        print("# memory-assets sensor benchmark\n")
        print(
            f"command : .venv/bin/python benchmarks/bench_sensor.py --logs {args.logs} --ticks {args.ticks}"
        )
        print(
            f"started : {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC; 2 cores shared, 1-min load {os.getloadavg()[0]:.2f}"
        )
        print(
            f"history : {args.logs:,} daily logs x {per_log} facts = {sweep.rows:,} rows, indexed in {index_s:.1f} s; "
            f"cursor after a tick: {len(cursor or ''):,} bytes\n"
        )
        print(
            table(
                [
                    [
                        "first tick, empty cursor (reads every log once)",
                        f"{cold_s * 1000:.0f}",
                        "0 runs requested",
                    ],
                    [
                        f"steady tick over unchanged logs, p50 / max of {len(steady)}",
                        f"{p50 * 1000:.1f} / {max(steady) * 1000:.1f}",
                        f"target <= {TARGET_S * 1000:.0f} ms: {'ok' if p50 <= TARGET_S else 'MISSED'}",
                    ],
                    ["tick after one append", f"{append_s * 1000:.1f}", "1 log re-read, 1 run"],
                    ["tick after a tombstone", f"{tomb_s * 1000:.0f}", "every log re-planned, 1 run"],
                    [
                        f"old tick (plan + sha256 every log), p50 of {len(old)}",
                        f"{percentile(old, 50) * 1000:.0f}",
                        f"{percentile(old, 50) / p50:.0f}x the steady tick",
                    ],
                ],
                ["tick", "ms", "note"],
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
