"""Many homes in one code location (``MEMORY_ROOT``): the homes sensor's tick, the partition
counts, one user's year backfilled, the sensor's memory.

    .venv/bin/python benchmarks/bench_homes.py                        # 100, 1,000 and 10,000 homes
    .venv/bin/python benchmarks/bench_homes.py --sizes 100,1000       # a quicker look
    .venv/bin/python benchmarks/bench_homes.py --skip-backfill        # the sensor and the counts only
    .venv/bin/python benchmarks/bench_homes.py --sizes none --skip-backfill   # the partitions only

**Homes.** One template home is made for real: three days of daily logs (three facts each),
indexed with the bundled model, its core files and vault as ``init`` leaves them. Each root is
that home copied N times (``users/u00000`` ...): every home is a complete, indexed home.

**(a) The sensor's tick**, for each size in a fresh process (its own memory figures), on a
SQLite instance in a temp ``DAGSTER_HOME``: first the ticks that look at every home once (the
homes are new), then, ``--repeats`` times, 1% of the homes change (a fact appended to today's
log, noted in the root's change feed as the memory service notes a write) and one tick is
timed; and ticks with no change. Each timed tick is the sensor's evaluation as the daemon calls
it (``build_sensor_context``), with its default budget (100 homes a tick) and sweep slice (10).
Printed: the tick's wall time (median), the homes looked at, the runs requested, the tick's
Python allocations (tracemalloc peak) and the process's resident memory; the ratio of the
10,000-home tick to the 1,000-home tick (target <= 1.5x).

**(b) Partition counts**: users x days for the user-and-day shape (the days of these roots,
and a year of history) against Dagster's guidance of 100,000 an asset, and users alone for the
users-only shape; then what a count costs: the grid of 100, 273, 1,000 and 2,740 users by a year
of days, and 10,000 and 100,000 users alone, registered on an instance and listed as the UI's
partition views and a backfill's dialog list them (``get_partition_keys``), each timed.

**(c) One user's year**: a root with one user who has a daily log on each of ``--year`` days,
under a real ``dagster dev`` (webserver and daemon, one run at a time):

* the backfill of that user's row of ``archive_index`` (every day), launched as the UI's
  backfill dialog does (GraphQL ``launchPartitionBackfill``, the user's range, tag ``user``),
  over an index already up to date: runs launched and wall time to the last run's end;
* a new home with the same year of logs, not indexed: the runs the homes sensor requests for
  it, and the wall time until its index holds every day.

Figures go to stdout, progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import itertools
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import requests
from _common import log, table
from fixtures.sentences import fact_sentences

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo: memory_assets_tests

from memory_assets.core.capture.daily_log import LogFact, append_facts
from memory_assets.core.home import Home
from memory_assets.core.ops.users import user_settings
from memory_assets.core.ops.status import init_home
from memory_assets.core.settings import Settings
from memory_assets_tests.processes import BACKFILL_STATUS, LAUNCH_BACKFILL, free_port, graphql, stop_tree

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GUIDANCE = 100_000
DAGSTER_YAML = "telemetry:\n  enabled: false\nconcurrency:\n  runs:\n    max_concurrent_runs: 1\n"


def write_day(settings: Settings, day: date, facts: list[tuple[str, str]], chat: str) -> None:
    append_facts(
        settings.archive_dir,
        chat,
        [LogFact(text, category) for category, text in facts],
        now=datetime(day.year, day.month, day.day, 9, tzinfo=UTC),
    )


def template_home(work: Path) -> Path:
    """A complete home: three days of logs, indexed with the bundled model."""
    settings = Settings.load(work / "template", env={})
    init_home(settings)
    texts = fact_sentences(9, seed=18)
    today = datetime.now(UTC).date()
    for n in range(3):
        write_day(settings, today - timedelta(days=3 - n), texts[3 * n : 3 * n + 3], f"tpl{n}")
    Home(settings).ready().indexer.sweep()
    return settings.home


def make_root(template: Path, root: Path, n: int) -> None:
    users = root / "users"
    users.mkdir(parents=True)
    for i in range(n):
        shutil.copytree(template, users / f"u{i:05d}", symlinks=True)


# -- (a) one size, in its own process ----------------------------------------------------------


def waiting(cursor: str | None) -> list[str]:
    """The homes a homes-sensor cursor holds waiting over the tick's budget."""
    return list(json.loads(cursor).get("queue", [])) if cursor else []


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_size(root: Path, repeats: int, changed_share: float, fixed_changed: int) -> dict[str, Any]:
    os.environ["MEMORY_ROOT"] = str(root)
    import dagster as dg

    from memory_assets.core.ops.root_feed import note_change
    from memory_assets.core.ops.users import list_users
    from memory_assets.defs.homes import sensors
    from memory_assets.defs.homes.sensors import homes_sensor
    from memory_assets.defs.resources import MemoryHomeResource

    # Each look at a home timed (the sensor calls ``_look_at`` once a home): a tick is its looks
    # and the rest (the cursor, the feed, the instance's queries, the requests' assembly).
    looks: list[float] = []
    look_at = sensors._look_at

    def timed_look(*args: Any) -> bool:
        start = time.perf_counter()
        try:
            return look_at(*args)
        finally:
            looks.append(time.perf_counter() - start)

    sensors._look_at = timed_look

    dagster_home = Path(tempfile.mkdtemp(prefix="bench-homes-dh-"))
    (dagster_home / "dagster.yaml").write_text(DAGSTER_YAML)
    users = list_users(root)
    n = len(users)
    cursor: str | None = None
    rng = random.Random(7)
    texts = fact_sentences(10_000, seed=81)
    fact = itertools.cycle(range(len(texts)))
    today = datetime.now(UTC).date()

    try:
        with dg.DagsterInstance.from_config(str(dagster_home)) as instance:

            def tick(trace: bool = False) -> tuple[float, dg.SensorResult, int]:
                """One evaluation as the daemon calls it; ``trace``: under tracemalloc (its peak, the
                tick's Python allocations), which slows Python down, so never a timed tick."""
                nonlocal cursor
                with dg.build_sensor_context(
                    instance=instance, cursor=cursor, resources={"memory": MemoryHomeResource()}
                ) as context:
                    if trace:
                        tracemalloc.start()
                    looks.clear()
                    start = time.perf_counter()
                    result = homes_sensor(context)
                    seconds = time.perf_counter() - start
                peak = 0
                if trace:
                    peak = tracemalloc.get_traced_memory()[1]
                    tracemalloc.stop()
                for request in result.dynamic_partitions_requests or []:
                    if isinstance(request, dg.AddDynamicPartitionsRequest):
                        instance.add_dynamic_partitions(
                            request.partitions_def_name, list(request.partition_keys)
                        )
                    else:
                        for key in request.partition_keys:
                            instance.delete_dynamic_partition(request.partitions_def_name, key)
                cursor = result.cursor
                return seconds, result, peak

            def change(count: int, label: str) -> list[str]:
                """``count`` homes change: a fact appended to today's log, noted in the root's feed."""
                chosen = rng.sample(users, count)
                for k, user in enumerate(chosen):
                    write_day(user_settings(root, user), today, [texts[next(fact)]], f"{label}{k:05d}")
                    note_change(root, user, "turns")
                return chosen

            baseline_rss = rss_mb()
            # The first look at every home (they are all new): a budget of every home, so it is one tick.
            os.environ["MEMORY_HOMES_PER_TICK"] = str(n)
            first_seconds, first, _ = tick()
            os.environ.pop("MEMORY_HOMES_PER_TICK")
            log(f"{n} homes: first look at every home in {first_seconds:.1f} s")
            idle: list[float] = []
            for _ in range(3):
                seconds, result, _ = tick()
                idle.append(seconds)
            timed: list[dict[str, Any]] = []
            fixed: list[float] = []
            fixed_looked: list[int] = []
            for r in range(repeats):
                # 1% of the homes change (the measure: 10 of 1,000, 100 of 10,000) ...
                chosen = change(max(1, round(n * changed_share)), f"chg{r:02d}")
                seconds, result, _ = tick()
                timed.append(
                    {
                        "seconds": seconds,
                        "changed": len(chosen),
                        "runs": len(result.run_requests or []),
                        "looked": len(looks),
                        "looks_s": sum(looks),
                    }
                )
                log(
                    f"{n} homes, {len(chosen)} changed: tick {seconds:.2f} s, {len(result.run_requests or [])} runs"
                )
                # ... and the same number of homes at every size, so the tick's dependence on the
                # homes that did not change is seen alone (after an untimed tick that looks at the
                # homes the 1% tick left waiting over its budget, so both sizes look at as many).
                while waiting(cursor):
                    tick()
                chosen = change(min(fixed_changed, n), f"fix{r:02d}")
                seconds, result, _ = tick()
                fixed.append(seconds)
                fixed_looked.append(len(looks))
                log(f"{n} homes, {len(chosen)} changed: tick {seconds:.2f} s")
            change(max(1, round(n * changed_share)), "mem")
            _, _, peak = tick(trace=True)
            per_look = sum(t["looks_s"] for t in timed) / max(1, sum(t["looked"] for t in timed))
            return {
                "homes": n,
                "first_look_s": first_seconds,
                "first_look_per_home_ms": 1000 * first_seconds / n,
                "idle_tick_s": statistics.median(idle),
                "tick_s": statistics.median(t["seconds"] for t in timed),
                "ticks": timed,
                "changed": timed[0]["changed"],
                "runs": statistics.median(t["runs"] for t in timed),
                "looked": statistics.median(t["looked"] for t in timed),
                "per_look_ms": 1000 * per_look,
                "rest_s": statistics.median(t["seconds"] - t["looks_s"] for t in timed),
                "fixed_looked": statistics.median(fixed_looked),
                "fixed_changed": min(fixed_changed, n),
                "fixed_tick_s": statistics.median(fixed),
                "tick_peak_kb": peak / 1024,
                "rss_before_mb": baseline_rss,
                "rss_after_mb": rss_mb(),
                "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "log_days": len(instance.get_dynamic_partitions("log_days")),
            }
    finally:
        shutil.rmtree(dagster_home, ignore_errors=True)


# -- (b) what a partition count costs past Dagster's guidance -----------------------------------


def partition_scale(grids: list[tuple[int, int]], users_only: list[int]) -> list[list[Any]]:
    """The partitions as the UI's and a backfill's views list them: ``get_partition_keys`` of the
    user-and-day grid (users x log days registered on an instance) and of the users-only shape,
    each timed, in this process (its peak RSS is the process's)."""
    import dagster as dg

    rows: list[list[Any]] = []
    for n_users, n_days in [*grids, *[(n, 0) for n in users_only]]:
        dagster_home = Path(tempfile.mkdtemp(prefix="bench-homes-parts-"))
        (dagster_home / "dagster.yaml").write_text(DAGSTER_YAML)
        users = dg.DynamicPartitionsDefinition(name="users")
        days = dg.DynamicPartitionsDefinition(name="log_days")
        shape: dg.PartitionsDefinition = (
            dg.MultiPartitionsDefinition({"day": days, "user": users}) if n_days else users
        )
        first = date(2025, 1, 1)
        with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
            start = time.perf_counter()
            instance.add_dynamic_partitions("users", [f"u{i:07d}" for i in range(n_users)])
            if n_days:
                instance.add_dynamic_partitions(
                    "log_days", [(first + timedelta(days=d)).isoformat() for d in range(n_days)]
                )
            register = time.perf_counter() - start
            start = time.perf_counter()
            keys = shape.get_partition_keys(dynamic_partitions_store=instance)
            listing = time.perf_counter() - start
        rows.append(
            [
                "user x day" if n_days else "users only",
                f"{n_users:,}" + (f" x {n_days}" if n_days else ""),
                f"{len(keys):,}",
                "yes" if len(keys) <= GUIDANCE else "no",
                f"{register:.2f}",
                f"{listing:.2f}",
                f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}",
            ]
        )
        log(f"partitions: {rows[-1]}")
        del keys
        shutil.rmtree(dagster_home, ignore_errors=True)
    return rows


# -- (c) one user's year under dagster dev ------------------------------------------------------


RUNS = """{ runsOrError(limit: 1000) { ... on Runs { results { runId status jobName endTime tags { key value } } } } }"""


def year_root(work: Path, name: str, days: int) -> tuple[Path, list[date]]:
    root = work / name
    settings = user_settings(root, "alice")
    init_home(settings)
    today = datetime.now(UTC).date()
    texts = fact_sentences(days * 3, seed=365)
    span = [today - timedelta(days=days - n) for n in range(days)]  # a log every day, today excluded
    for n, day in enumerate(span):
        write_day(settings, day, texts[3 * n : 3 * n + 3], f"yr{n:05d}")
    return root, span


def dagster_dev(
    root: Path, work: Path, label: str, register: list[date] | None
) -> tuple[subprocess.Popen, str]:
    dagster_home = work / f"dh_{label}"
    dagster_home.mkdir()
    (dagster_home / "dagster.yaml").write_text(DAGSTER_YAML)
    env = {
        **os.environ,
        "MEMORY_ROOT": str(root),
        "DAGSTER_HOME": str(dagster_home),
        "MEMORY_DREAM_MAX_DAYS": "100000",  # the dream's gates shut: the runs measured are index runs
        "MEMORY_DREAM_MIN_FACTS": "100000000",
    }
    if register is not None:
        os.environ["MEMORY_ROOT"] = str(root)
        import dagster as dg

        from memory_assets.defs.partitions import register_days

        with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
            register_days(instance, register, "alice")
    port = free_port()
    process = subprocess.Popen(
        [str(BIN / "dagster"), "dev", "-h", "127.0.0.1", "-p", str(port), "-m", "memory_assets.definitions"],
        cwd=ROOT,
        env=env,
        stdout=(work / f"dagster_dev_{label}.log").open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            if requests.get(f"{url}/server_info", timeout=2).ok:
                return process, url
        except requests.ConnectionError:
            if process.poll() is not None:
                raise RuntimeError(f"dagster dev exited: see {work}/dagster_dev_{label}.log") from None
            time.sleep(1)


def year_backfill(work: Path, days: int) -> dict[str, Any]:
    root, span = year_root(work, "year_indexed", days)
    settings = user_settings(root, "alice")
    start = time.perf_counter()
    sweep = Home(settings).ready().indexer.sweep()
    index_seconds = time.perf_counter() - start
    cost = {
        "facts": 3 * len(span),
        "index_seconds": index_seconds,
        "embedded": sweep.embedded,
        "markdown_bytes": sum(
            p.stat().st_size
            for p in settings.home.rglob("*")
            if p.is_file() and "index" not in p.relative_to(settings.home).parts[:1]
        ),
        "index_bytes": sum(p.stat().st_size for p in (settings.home / "index").rglob("*") if p.is_file()),
    }
    log(f"one user's year: {len(span)} days of logs, indexed; dagster dev, then the backfill of the row")
    process, url = dagster_dev(root, work, "backfill", span)
    try:
        start, launched_at = time.perf_counter(), time.time()
        keys = {"start": "alice", "end": "alice"}  # the user's partition: the run reindexes every day
        launched = graphql(
            url,
            LAUNCH_BACKFILL,
            {
                "p": {
                    "partitionsByAssets": [
                        {"assetKey": {"path": ["archive_index"]}, "partitions": {"range": keys}}
                    ],
                    "tags": [{"key": "user", "value": "alice"}],
                }
            },
        )["launchPartitionBackfill"]
        if launched["__typename"] != "LaunchBackfillSuccess":
            raise RuntimeError(launched)
        while True:
            state = graphql(url, BACKFILL_STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"]
            if state["status"] != "REQUESTED":
                break
            time.sleep(2)
        ends = [r["endTime"] for r in state["runs"] if r.get("endTime")]
        seconds = (max(ends) - launched_at) if ends else time.perf_counter() - start
        return {
            "cost": cost,
            "partitions": state["numPartitions"],
            "runs": len(state["runs"]),
            "succeeded": sum(r["status"] == "SUCCESS" for r in state["runs"]),
            "seconds": seconds,
            "status": state["status"],
        }
    finally:
        stop_tree(process)


def year_new_home(work: Path, days: int) -> dict[str, Any]:
    root, span = year_root(work, "year_new", days)
    log(f"a new home with {len(span)} days of logs, not indexed: dagster dev and its homes sensor")
    started = time.time()
    process, url = dagster_dev(root, work, "sensor", None)
    store_settings = user_settings(root, "alice")
    try:
        deadline = time.time() + 3600
        runs: list[dict[str, Any]] = []
        while time.time() < deadline:
            runs = [r for r in graphql(url, RUNS)["runsOrError"]["results"] if r["jobName"] == "reindex"]
            if runs and all(r["status"] in ("SUCCESS", "FAILURE", "CANCELED") for r in runs):
                indexed = Home(store_settings).store.count("source_type = 'archive_log'")
                if indexed >= 3 * len(span):
                    break
            time.sleep(3)
        ends = [r["endTime"] for r in runs if r.get("endTime")]
        return {
            "runs": len(runs),
            "succeeded": sum(r["status"] == "SUCCESS" for r in runs),
            "rows": Home(store_settings).store.count("source_type = 'archive_log'"),
            "seconds": (max(ends) - started) if ends else float("nan"),
        }
    finally:
        stop_tree(process)


# -- main ------------------------------------------------------------------------------------------


def print_ticks(results: list[dict[str, Any]]) -> None:
    print("(a) The homes sensor's tick, 1% of the homes changed (median of the timed ticks):")
    rows = [
        [
            r["homes"],
            r["changed"],
            f"{r['tick_s']:.3f}",
            f"{r['idle_tick_s']:.3f}",
            f"{r['fixed_tick_s']:.3f} ({r['fixed_changed']})",
            r["runs"],
            f"{r['looked']:.0f} ({r['fixed_looked']:.0f})",
            f"{r['per_look_ms']:.1f}",
            f"{r['rest_s']:.3f}",
            f"{r['tick_peak_kb']:.0f}",
            f"{r['rss_after_mb']:.0f}",
            f"{r['first_look_per_home_ms']:.1f}",
        ]
        for r in results
    ]
    print(
        table(
            rows,
            [
                "homes",
                "changed",
                "tick (s)",
                "tick, none changed (s)",
                "tick, fixed changed (s)",
                "runs requested",
                "homes looked at (fixed)",
                "per home looked at (ms)",
                "rest of the tick (s)",
                "tick allocations peak (KiB)",
                "sensor process RSS (MB)",
                "first look per home (ms)",
            ],
        )
    )
    by = {r["homes"]: r for r in results}
    if 1000 in by and 10000 in by:
        ratio = by[10000]["tick_s"] / by[1000]["tick_s"]
        idle = by[10000]["idle_tick_s"] / by[1000]["idle_tick_s"]
        fixed = by[10000]["fixed_tick_s"] / by[1000]["fixed_tick_s"]
        per_home = [by[n]["tick_s"] / max(by[n]["changed"], 1) for n in (1000, 10000)]
        print(
            f"10,000-home tick / 1,000-home tick, 1% changed each: {ratio:.2f}x (target <= 1.5x; "
            f"{'met' if ratio <= 1.5 else 'missed'}: 1% is {by[10000]['changed']} homes against "
            f"{by[1000]['changed']}, and a tick's work follows the homes that changed)"
        )
        print(
            f"  the same {by[10000]['fixed_changed']} homes changed at both sizes: {fixed:.2f}x "
            f"(target <= 0.8x: {'met' if fixed <= 0.8 else 'missed'}); none changed: {idle:.2f}x; per changed "
            f"home at 1%: {1000 * per_home[0]:.1f} ms and {1000 * per_home[1]:.1f} ms"
        )
        looked = [by[n]["looked"] for n in (1000, 10000)]
        look = [by[n]["per_look_ms"] for n in (1000, 10000)]
        rest = [by[n]["rest_s"] for n in (1000, 10000)]
        print(
            f"  in the 1% tick: homes looked at {looked[0]:.0f} and {looked[1]:.0f} "
            f"({looked[1] / max(looked[0], 1):.2f}x); per home looked at {look[0]:.1f} ms and {look[1]:.1f} ms "
            f"({look[1] / look[0]:.2f}x); the rest of the tick {rest[0]:.3f} s and {rest[1]:.3f} s"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", default="100,1000,10000", help="home counts (default 100,1000,10000; none: skip (a))"
    )
    parser.add_argument("--changed", type=float, default=0.01, help="share of homes changed per tick (0.01)")
    parser.add_argument(
        "--fixed", type=int, default=10, help="homes changed per tick at every size, beside the share (10)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed ticks per size (3)")
    parser.add_argument("--year", type=int, default=365, help="days of one user's year (365)")
    parser.add_argument("--skip-backfill", action="store_true", help="skip (c), the year under dagster dev")
    parser.add_argument("--one-size", help=argparse.SUPPRESS)  # internal: a root measured in this process
    args = parser.parse_args()
    if args.one_size:
        print(json.dumps(one_size(Path(args.one_size), args.repeats, args.changed, args.fixed)))
        return 0

    sizes = [] if args.sizes == "none" else [int(s) for s in args.sizes.split(",")]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-homes-") as tmp:
        work = Path(tmp)
        log("the template home (3 days of logs, indexed with the bundled model)")
        template = template_home(work)
        for n in sizes:
            root = work / f"root{n}"
            start = time.perf_counter()
            make_root(template, root, n)
            log(f"{n} homes copied in {time.perf_counter() - start:.0f} s")
            out = subprocess.run(
                [sys.executable, __file__, "--one-size", str(root), "--repeats", str(args.repeats),
                 "--changed", str(args.changed), "--fixed", str(args.fixed)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            sys.stderr.write(out.stderr[-4000:])
            if out.returncode != 0:
                raise SystemExit(f"the {n}-home measurement failed")
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
            shutil.rmtree(root)
        scale = partition_scale([(100, 366), (273, 366), (1000, 366), (2740, 365)], [10_000, 100_000])
        year: dict[str, Any] = {}
        if not args.skip_backfill:
            year["backfill"] = year_backfill(work, args.year)
            year["new_home"] = year_new_home(work, args.year)

    if results:
        print_ticks(results)
    print()
    print("(b) Partitions of a day-shaped asset (archive_index):")
    rows = []
    for r in results:
        for days in (r["log_days"], 366):
            grid = r["homes"] * days
            rows.append([r["homes"], days, grid, "yes" if grid <= GUIDANCE else "no", r["homes"]])
    print(table(rows, ["users", "log days", "user x day", "within 100k", "users only"]))
    print(f"user x day stays within Dagster's guidance up to {GUIDANCE // 366} users with a year of logs")
    print()
    print("(b) Listing the partitions as the UI and a backfill do (get_partition_keys on an instance):")
    print(
        table(
            scale,
            [
                "shape",
                "users x days",
                "partitions",
                "within 100k",
                "register (s)",
                "list (s)",
                "process max RSS (MB)",
            ],
        )
    )
    if year:
        print()
        b, s = year["backfill"], year["new_home"]
        print(f"(c) One user's year ({args.year} days of logs) under dagster dev:")
        print(
            table(
                [
                    [
                        "backfill of the user's row (index up to date)",
                        b["partitions"],
                        b["runs"],
                        b["succeeded"],
                        f"{b['seconds']:.0f}",
                    ],
                    [
                        "a new home, the homes sensor's requests",
                        args.year,
                        s["runs"],
                        s["succeeded"],
                        f"{s['seconds']:.0f}",
                    ],
                ],  # fmt: skip
                ["what", "partitions", "runs", "succeeded", "wall time (s)"],
            )
        )
        print(f"the new home's index: {s['rows']} daily-log rows (of {3 * args.year})")
        c = b["cost"]
        print()
        print(f"(d) One user's year on disk ({c['facts']} facts, 3 a day):")
        print(
            table(
                [
                    ["markdown (logs, vault, state)", f"{c['markdown_bytes'] / 1e6:.2f} MB"],
                    ["index (LanceDB, after the first sweep)", f"{c['index_bytes'] / 1e6:.2f} MB"],
                    ["indexing the year (model, diffs and commits)", f"{c['index_seconds']:.1f} s"],
                    ["indexing time per fact", f"{1000 * c['index_seconds'] / max(c['embedded'], 1):.1f} ms"],
                    ["a run of the backfill, start to end", f"{b['seconds'] / max(b['runs'], 1):.1f} s"],
                ],
                ["figure", "value"],
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
