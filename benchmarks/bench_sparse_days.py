"""A backfill over a year of sparse daily logs, before and after the sparse-days change.

    .venv/bin/python benchmarks/bench_sparse_days.py               # a year: 366 days, ~1 in 4 with a log
    .venv/bin/python benchmarks/bench_sparse_days.py --days 60     # a shorter span, for a quick look

One generated home: a log on about one day in four over the span (3 fact lines each), indexed
for real first (the bundled model), so both backfills find the index up to date: what the UI
invited on the demo home ("382 missing partitions") is work for nothing. Then, each under its
own ``dagster dev`` (webserver and daemon, a fresh ``DAGSTER_HOME`` with one run at a time, as
``make setup`` writes it), the backfill a person launches from the UI, through the same GraphQL
mutation the Materialize dialog sends:

* **before**: ``baselines/daily_partitions_location.py``, the old shape: a partition per calendar
  day from the oldest log to today, no backfill policy; the backfill selects every partition
  (the UI's "All"), one run per day;
* **after**: ``memory_assets.definitions``: a partition per day that has a log (registered as the
  daily_log_sensor does), ``BackfillPolicy.multi_run(100)``; the backfill selects every
  partition.

For each: partitions, runs launched, and wall time from the launch until the backfill completed.
``--budget S`` stops waiting for a side after S seconds: it then reports the runs finished so far,
their rate, and the wall time the rest would take at that rate, marked as projected (the old
shape's hundreds of runs take hours on a busy 2-core machine). Figures go to stdout, progress
to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import requests

from _common import log, table

from fixtures.sentences import fact_sentences

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo: memory_assets_tests

from memory_assets.core.capture.daily_log import LogFact, append_facts, list_logs
from memory_assets.core.home import Home
from memory_assets.core.ops.status import init_home
from memory_assets.core.settings import Settings
from memory_assets_tests.processes import BACKFILL_STATUS, LAUNCH_BACKFILL, free_port, graphql, stop_tree

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DAGSTER_YAML = "telemetry:\n  enabled: false\nconcurrency:\n  runs:\n    max_concurrent_runs: 1\n"


def seed(settings: Settings, days: int, share: float, seed_value: int = 19) -> int:
    rng = random.Random(seed_value)
    today = datetime.now(UTC).date()
    texts = fact_sentences(days * 3, seed=seed_value)
    written = 0
    for n in range(days):
        day = today - timedelta(days=days - 1 - n)
        if n in (0, days - 1) or rng.random() < share:  # the span's ends always have a log
            facts = [LogFact(texts[3 * n + k][1], texts[3 * n + k][0]) for k in range(3)]
            append_facts(
                settings.archive_dir,
                f"sp{n:06d}",
                facts,
                now=datetime(day.year, day.month, day.day, 9, tzinfo=UTC),
            )
            written += 1
    return written


PARTITIONS = """{ assetNodeOrError(assetKey: {path: ["archive_index"]}) { ... on AssetNode {
  partitionKeysByDimension { partitionKeys } } } }"""


def backfill(
    label: str, location: list[str], settings: Settings, work: Path, register: list[str], budget: float | None
) -> dict[str, Any]:
    dagster_home = work / f"dagster_home_{label}"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text(DAGSTER_YAML)
    env = {
        **os.environ,
        "MEMORY_HOME": str(settings.home),
        "DAGSTER_HOME": str(dagster_home),
        # The home is never dreamed here: keep the dream's gates shut, so the current location's
        # dream_sensor (and the reindex of the days a dream consolidates) does not share the one
        # run slot with the backfill being measured. The old location has no sensors.
        "MEMORY_DREAM_MAX_DAYS": "100000",
        "MEMORY_DREAM_MIN_FACTS": "100000000",
    }
    if register:
        import dagster as dg

        from memory_assets.defs.partitions import register_days

        with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
            register_days(instance, register)  # what daily_log_sensor does on its first tick
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(BIN / "dagster"), "dev", "-h", "127.0.0.1", "-p", str(port), *location],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT / "benchmarks")},
        stdout=(work / f"dagster_dev_{label}.log").open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        while True:
            try:
                if requests.get(f"{url}/server_info", timeout=2).ok:
                    break
            except requests.ConnectionError:
                time.sleep(1)
        keys = graphql(url, PARTITIONS)["assetNodeOrError"]["partitionKeysByDimension"][0]["partitionKeys"]
        log(f"{label}: {len(keys)} partitions; launching the backfill of all of them")
        start, launched_at = time.perf_counter(), time.time()
        launched = graphql(
            url,
            LAUNCH_BACKFILL,
            {"p": {"assetSelection": [{"path": ["archive_index"]}], "partitionNames": keys}},
        )["launchPartitionBackfill"]
        if launched["__typename"] != "LaunchBackfillSuccess":
            raise RuntimeError(launched)
        projected = False
        while True:
            state = graphql(url, BACKFILL_STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"]
            if state["status"] not in ("REQUESTED",):
                break
            if budget is not None and time.perf_counter() - start > budget:
                projected = True
                break
            time.sleep(2)
        runs = state["runs"]
        ends = [r["endTime"] for r in runs if r.get("endTime")]
        # The wall time a person waits for the work: from the launch to the end of its last run
        # (the backfill's own status can lag behind while other runs hold the queue).
        seconds = (max(ends) - launched_at) if ends and not projected else time.perf_counter() - start
        succeeded = sum(r["status"] == "SUCCESS" for r in runs)
        launched_runs = len(runs)
        if projected:
            # Every day is a run of its own here: the runs not yet launched are still to come.
            launched_runs = max(len(runs), len(keys))
            per_run = seconds / max(succeeded, 1)
            seconds = per_run * launched_runs
            log(f"{label}: {succeeded} runs done in {budget:.0f} s ({per_run:.1f} s a run); projecting")
        log(f"{label}: {state['status']} in {seconds:.0f} s, {launched_runs} runs")
        return {
            "partitions": len(keys),
            "runs": launched_runs,
            "succeeded": succeeded,
            "seconds": seconds,
            "status": "PROJECTED" if projected else state["status"],
        }
    finally:
        stop_tree(process)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=366, help="calendar days the logs span (default 366)")
    parser.add_argument("--share", type=float, default=0.25, help="share of days with a log (default 0.25)")
    parser.add_argument("--only", choices=["before", "after"], help="measure one side only")
    parser.add_argument(
        "--budget", type=float, help="seconds to wait for a side's backfill before projecting the rest"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sparse-") as tmp:
        work = Path(tmp)
        settings = Settings.load(work / "home", env={})
        init_home(settings)
        logs = seed(settings, args.days, args.share)
        log(f"{logs} daily logs over {args.days} days; indexing them")
        Home(settings).ready().indexer.sweep()
        days = [d.isoformat() for d, _ in list_logs(settings.archive_dir)]
        results = {}
        if args.only != "after":
            results["before"] = backfill(
                "before",
                ["-f", str(ROOT / "benchmarks" / "baselines" / "daily_partitions_location.py")],
                settings,
                work,
                [],
                args.budget,
            )
        if args.only != "before":
            results["after"] = backfill(
                "after", ["-m", "memory_assets.definitions"], settings, work, days, args.budget
            )
    print(f"A backfill of archive_index over {args.days} days with {logs} daily logs (index up to date):")
    rows = [
        [side, r["partitions"], r["runs"], r["succeeded"], f"{r['seconds']:.0f}", r["status"].lower()]
        for side, r in results.items()
    ]
    print(
        table(rows, ["shape", "partitions", "runs launched", "runs succeeded", "wall time (s)", "backfill"])
    )
    if len(results) == 2:
        b, a = results["before"], results["after"]
        print(f"runs: {b['runs']} -> {a['runs']}; wall time: {b['seconds'] / a['seconds']:.1f}x shorter")
    return 0 if all(r["status"] in ("COMPLETED_SUCCESS", "PROJECTED") for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
