"""A day of upkeep for many users: today's per-user runs against the batches, side by side, and the
floor (design §11.4, issue 34).

For each size N of ``--homes`` (default ``1000,10000``):

* **The homes.** ``--templates`` homes (default 8) each get a day of activity written through the
  write path's core: ``--turns`` synthetic turns (default 12; sentences of the extraction corpus)
  put through ``process_turn`` as the memory service does (each turn kept in its transcript, its
  facts appended to yesterday's log and indexed, its transcript row indexed). The N homes of the
  size are copies of the templates (home i of template i mod templates), so every home has a day
  the dream can consolidate (yesterday), an index that changed since its last dedup measurement
  (none), and nothing the index is behind on. Each side below works on its own copy.
* **Batched** (this tree): ``dagster dev`` over the root with ``MEMORY_ROOT``, the instance file
  ``memory-assets dagster-yaml`` writes (``--max-concurrent-runs``, default 2: the cores here), its
  daemon and homes sensor as shipped (``MEMORY_UPKEEP_BATCH_SIZE`` = ``--batch-size``;
  ``MEMORY_HOMES_PER_TICK`` = ``--per-tick``, default 500, so a root of new homes is looked at in
  N/500 ticks rather than N/100). The day is done when every home has an upkeep outcome, no run is
  queued or running, and two more sensor ticks request nothing.
* **Today** (``--today-rev``, default 983c3cb, the code before batches, from a ``git worktree``):
  the same, on the first ``--today-homes`` homes (default 20) of a copy: its homes sensor requests
  each user's dream and whatever else it finds, its run-status sensor the reconcile after each
  dream, and its two daily schedules (the 03:30 reconcile, the 04:30 dedup measurement), which the
  benchmark evaluates with that revision's code at those times and launches as the UI's
  "launch all" does (GraphQL ``launchRun``), since the clock does not pass 04:30 here. Today's
  runs and CPU at N homes are the sample's per home times N (the per-user runs are independent
  and alike): 10,000 homes of today's runs are about 40,000 processes, days of this machine.
* **Floor**: the same work as the batches (each batch run's members and hints, as the sensor gave
  them) called in one process over every home (``run_batch``) with one model load, on a third copy.

CPU is every run process's CPU (user + system): read as the children's rusage of the code
servers that launch the runs (``/proc/<pid>/stat`` cutime + cstime, once every run has been
reaped), and the floor process's own rusage (``os.wait4``). The orchestration (the daemon, the
webserver, the code servers themselves: the sensor's ticks) is printed beside it, not added.

**Disk**: ``benchmarks/paced_day.py`` (a real ``memory-assets serve``, a turn every ``--pace``
seconds, the home's index sampled during the day and compacted on a copy at each sample) gives
the peak of a home's index during a day of paced turns against its compacted size
(``disk_peak_ratio``); the index per home after the batched upkeep is measured on every home.

Targets (ratios, in one run): runs for 1,000 users at most ceil(1,000 / batch size) + 5; the
batched CPU at most 1.5x the floor; CPU per user at 10,000 at most 1.2x that at 1,000; the paced
index at most 2x its compacted size at every sample. ``--json`` prints every figure as one JSON
object on the last line.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import contextlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import log, table

from memory_assets.defs.homes.batches import BATCH_SIZE
from memory_assets_tests.processes import descendants, graphql, serve_dagster_dev, stop_tree

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CORPUS = REPO / "benchmarks" / "data" / "extraction_corpus.jsonl"
TODAY_REV = "983c3cb"
CLK = os.sysconf("SC_CLK_TCK")
IN_FLIGHT = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING")
SENSOR_INTERVAL_S = 30


# -- the homes -------------------------------------------------------------------------------------


def build_templates(work: Path, count: int, turns: int) -> list[Path]:
    """``count`` homes, each with ``turns`` turns of yesterday written through the write path's core."""
    from memory_assets.core.models.embedder import shared_embedder
    from memory_assets.core.ops.users import open_user_home
    from memory_assets.core.write_path.extraction import Turn
    from memory_assets.core.write_path.extractor_choice import make_extractor
    from memory_assets.core.write_path.process import process_turn

    root = work / "templates"
    if root.exists():
        shutil.rmtree(root)
    texts = [json.loads(line)["user"] for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]
    embedder = shared_embedder()
    start = (datetime.now(UTC) - timedelta(days=1)).replace(hour=8, minute=0, second=0, microsecond=0)
    homes = []
    for t in range(count):
        home = open_user_home(root, f"t{t:02d}", create=True, embedder=embedder)
        extractor, rng = make_extractor(home.settings), random.Random(t)
        for i in range(turns):
            turn = Turn(
                user=rng.choice(texts),
                assistant="Noted.",
                chat_id=f"chat-{t}",
                at=start + timedelta(minutes=7 * i),
            )
            process_turn(turn, home.settings, extractor=extractor, store=home.store, embedder=embedder)
        homes.append(home.settings.home)
    return homes


def _copy_or_link(src: str, dst: str) -> object:
    """A file of a home copied, except LanceDB's own (inside a table's ``.lance`` directory under
    ``index/``), hard-linked: LanceDB writes each of its files once (a new version is new files;
    an optimize's cleanup unlinks old ones), so a link is never written through. Every other file
    of a home may be written in place (logs, journals, the index's file ledger beside the table,
    ``index/.<table>.files.jsonl``) and is copied. ``check_templates`` proves it after each side."""
    parts = Path(src).parts
    if "index" in parts and any(p.endswith(".lance") for p in parts[parts.index("index") + 1 : -1]):
        os.link(src, dst)
        return dst
    return shutil.copy2(src, dst)


def make_root(templates: list[Path], root: Path, n: int) -> list[str]:
    """A root of ``n`` homes, copies of the templates (their index files hard-linked); their ids, sorted."""
    users = [f"u{i:05d}" for i in range(n)]
    for i, user in enumerate(users):
        shutil.copytree(
            templates[i % len(templates)], root / "users" / user, symlinks=True, copy_function=_copy_or_link
        )
    return users


def template_digest(templates: list[Path]) -> dict[str, str]:
    """Each template index file's sha256 (the files the copies hard-link, and the ledger beside them)."""
    import hashlib

    return {
        str(f): hashlib.sha256(f.read_bytes()).hexdigest()
        for t in templates
        for f in sorted((t / "index").rglob("*"))
        if f.is_file()
    }


def check_templates(templates: list[Path], digest: dict[str, str], side: str) -> None:
    """The templates' index files are as they were built: no side wrote through a hard link."""
    now = template_digest(templates)
    changed = sorted(f for f, d in digest.items() if now.get(f) != d)
    if changed:
        raise SystemExit(
            f"after {side}, {len(changed)} template index file(s) changed through a hard link "
            f"(e.g. {changed[0]}): the copies must not link those files"
        )


def du_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def index_bytes(root: Path, users: list[str]) -> float:
    """The mean size of a home's index directory."""
    return sum(du_bytes(root / "users" / u / "index") for u in users) / max(1, len(users))


# -- processes and their CPU -----------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def cpu_of_tree(pid: int) -> dict[str, float]:
    """Under ``pid``: the CPU seconds of the code servers' reaped children (the run processes), and
    the CPU of every live process of the tree itself (the orchestration)."""
    runs = orchestration = 0.0
    for p in descendants(pid):
        fields = _stat(p)
        if fields is None:
            continue
        utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
        orchestration += (utime + stime) / CLK
        if "api grpc" in cmdline(p) or "code-server" in cmdline(p) or "code_server" in cmdline(p):
            runs += (cutime + cstime) / CLK
    return {"runs": runs, "orchestration": orchestration}


class PeakRss:
    """The highest resident memory (VmHWM) of any run process under a ``dagster dev``, sampled
    every two seconds while it is in use."""

    def __init__(self, pid: int) -> None:
        import threading

        self.pid, self.peak_mb, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(2.0):
            servers = {p for p in descendants(self.pid) if "api grpc" in cmdline(p)}
            for p in descendants(self.pid):
                fields = _stat(p)
                if fields is None or int(fields[1]) not in servers:
                    continue
                with contextlib.suppress(OSError, ValueError, IndexError):
                    for line in Path(f"/proc/{p}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            self.peak_mb = max(self.peak_mb, int(line.split()[1]) / 1024)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join(timeout=10)
        return self.peak_mb


RUNS = """query($cursor: String) { runsOrError(limit: 1000, cursor: $cursor) { ... on Runs { results {
  runId status jobName startTime endTime tags { key value } } } } }"""


def all_runs(url: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = graphql(url, RUNS, {"cursor": cursor})["runsOrError"]["results"]
        found += page
        if len(page) < 1000:
            return found
        cursor = page[-1]["runId"]


@contextlib.contextmanager
def dagster_dev(
    root: Path, work: Path, env: dict[str, str], code: Path | None = None
) -> Iterator[tuple[subprocess.Popen, str]]:
    """``dagster dev`` over ``root`` (its code from ``code`` first on PYTHONPATH, else this tree),
    on a fresh instance whose file that code's ``memory-assets dagster-yaml`` writes; the process
    and its URL."""
    dagster_home = work / "dagster_home"
    dagster_home.mkdir(parents=True)
    full = {**os.environ, **env, "MEMORY_ROOT": str(root), "DAGSTER_HOME": str(dagster_home)}
    full.pop("MEMORY_HOME", None)
    runs = full.pop("_RUNS", "2")
    if code is not None:
        full["PYTHONPATH"] = str(code)
    subprocess.run(
        [str(BIN / "memory-assets"), "dagster-yaml", "--max-concurrent-runs", runs, "--out", str(dagster_home / "dagster.yaml")],
        env=full, cwd=work, check=True, capture_output=True,
    )  # fmt: skip
    process, url = serve_dagster_dev(
        BIN / "dagster", ["-m", "memory_assets.definitions"], full, work / "dagster_dev.log", work, 300
    )
    try:
        yield process, url
    finally:
        stop_tree(process)


def settle(url: str, done: Callable[[list[dict[str, Any]]], bool], timeout: float) -> list[dict[str, Any]]:
    """Wait until ``done(runs)`` holds, no run is in flight, and the runs stay the same for two
    sensor ticks; the runs."""
    deadline = time.monotonic() + timeout
    quiet_since, count = None, -1
    while time.monotonic() < deadline:
        runs = all_runs(url)
        if done(runs) and not any(r["status"] in IN_FLIGHT for r in runs):
            if len(runs) != count:
                quiet_since, count = time.monotonic(), len(runs)
            elif time.monotonic() - quiet_since >= 2 * SENSOR_INTERVAL_S + 10:
                return runs
        else:
            quiet_since, count = None, -1
        time.sleep(5)
    raise TimeoutError(f"the day's upkeep did not settle within {timeout:.0f} s")


def run_seconds(runs: list[dict[str, Any]]) -> float:
    starts = [r["startTime"] for r in runs if r.get("startTime")]
    ends = [r["endTime"] for r in runs if r.get("endTime")]
    return (max(ends) - min(starts)) if starts and ends else 0.0


# -- the three sides -------------------------------------------------------------------------------


def batched(root: Path, users: list[str], work: Path, args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.upkeep.outcomes import load_outcome

    env = {
        "MEMORY_UPKEEP_BATCH_SIZE": str(args.batch_size),
        "MEMORY_HOMES_PER_TICK": str(args.per_tick),
        "MEMORY_DREAM_MIN_FACTS": "1",
        "_RUNS": str(args.max_concurrent_runs),
    }
    start = time.monotonic()
    with dagster_dev(root, work, env) as (process, url):
        before = cpu_of_tree(process.pid)
        rss = PeakRss(process.pid)

        def done(_runs: list[dict[str, Any]]) -> bool:
            return all(load_outcome(root, u) is not None for u in users)

        runs = settle(url, done, timeout=args.timeout)
        time.sleep(5)  # every run process reaped by its code server
        after = cpu_of_tree(process.pid)
        peak_rss = rss.stop()
    wall = time.monotonic() - start
    members = batch_members(work / "dagster_home")
    outcomes = [load_outcome(root, u) for u in users]
    return {
        "runs": len(runs),
        "batch_runs": sum(r["jobName"] == "upkeep_batch" for r in runs),
        "failed_runs": sum(r["status"] != "SUCCESS" for r in runs),
        "cpu_s": after["runs"] - before["runs"],
        "orchestration_cpu_s": after["orchestration"],
        "wall_s": wall,
        "runs_wall_s": run_seconds(runs),
        "users_ok": sum(1 for o in outcomes if o is not None and o.ok),
        "run_peak_rss_mb": peak_rss,
        "members": members,
    }


def batch_members(dagster_home: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every batch run's members and hints, as the sensor gave them, in run order."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        records = instance.get_run_records(dg.RunsFilter(job_name="upkeep_batch"))
        out = []
        for record in sorted(records, key=lambda r: r.create_timestamp):
            for member in record.dagster_run.run_config["ops"]["upkeep_users"]["config"]["members"]:
                hints = {k: v for k, v in member.items() if k != "user"}
                out.append((member["user"], hints))
    return out


def floor(root: Path, members: list[tuple[str, dict[str, Any]]], work: Path) -> dict[str, Any]:
    """The batches' work in one process over every home, one model load: its rusage."""
    plan = work / "floor_members.json"
    plan.write_text(json.dumps(members))
    env = {**os.environ, "MEMORY_ROOT": str(root), "MEMORY_DREAM_MIN_FACTS": "1"}
    env.pop("MEMORY_HOME", None)
    start = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, __file__, "--floor-child", str(root), str(plan)], env=env, cwd=work
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    if status != 0:
        raise SystemExit(f"the floor process failed ({status})")
    report = json.loads((work / "floor_report.json").read_text())
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall, **report}


def floor_child(root: Path, plan: Path) -> None:
    from memory_assets.core.models.embedder import shared_embedder
    from memory_assets.core.ops.upkeep.batch import UserUpkeep, run_batch
    from memory_assets.core.ops.upkeep.work import Work

    members = [(user, Work.from_dict(hints)) for user, hints in json.loads(plan.read_text())]
    steps: dict[str, int] = {}
    ok = 0

    def count(entry: UserUpkeep) -> None:
        nonlocal ok
        ok += entry.ok
        for step in entry.steps:
            steps[step.step] = steps.get(step.step, 0) + 1
            step.result = None  # over 10,000 homes: keep the counts, not the results

    run_batch(root, members, holder="floor", embedder=shared_embedder(), on_user=count)
    (plan.parent / "floor_report.json").write_text(json.dumps({"users_ok": ok, "steps": steps}))


def today(root: Path, users: list[str], work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Today's per-user runs on ``users``, with the code at ``--today-rev``."""
    code = work / "today-code"
    done = subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(code), args.today_rev],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"git worktree add {args.today_rev} failed: {done.stderr.strip()}")
    env = {"MEMORY_DREAM_MIN_FACTS": "1", "_RUNS": str(args.max_concurrent_runs)}
    start = time.monotonic()
    try:
        with dagster_dev(root, work, env, code=code) as (process, url):
            before = cpu_of_tree(process.pid)
            rss = PeakRss(process.pid)
            # The sensors' part of the day: each user's dream (and what else the homes sensor
            # finds) and the reconcile after it; then the two daily schedules.
            settle(
                url, lambda runs: sum(r["jobName"] == "reconcile" for r in runs) >= len(users), args.timeout
            )
            launched = launch_schedules(url, root, work, code)
            runs = settle(url, lambda runs: True, args.timeout)
            time.sleep(5)
            after = cpu_of_tree(process.pid)
            peak_rss = rss.stop()
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(code)], capture_output=True
        )
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True)
    by_job: dict[str, int] = {}
    for r in runs:
        by_job[r["jobName"]] = by_job.get(r["jobName"], 0) + 1
    return {
        "homes": len(users),
        "runs": len(runs),
        "by_job": by_job,
        "scheduled": launched,
        "failed_runs": sum(r["status"] != "SUCCESS" for r in runs),
        "cpu_s": after["runs"] - before["runs"],
        "orchestration_cpu_s": after["orchestration"],
        "wall_s": time.monotonic() - start,
        "runs_wall_s": run_seconds(runs),
        "run_peak_rss_mb": peak_rss,
    }


SCHEDULES = """
import json, sys
from datetime import UTC, datetime
import dagster as dg
from memory_assets.defs.homes.schedules import homes_dedup_schedule, homes_reconcile_schedule
from memory_assets.defs.resources import MemoryHomeResource
out = []
for schedule, hour, minute in ((homes_reconcile_schedule, 3, 30), (homes_dedup_schedule, 4, 30)):
    when = datetime.now(UTC).replace(hour=hour, minute=minute, second=0, microsecond=0)
    with dg.build_schedule_context(resources={"memory": MemoryHomeResource()}, scheduled_execution_time=when) as context:
        for request in schedule(context):
            out.append({"job": schedule.job_name, "tags": {**request.tags, "dagster/partition": request.partition_key}})
print(json.dumps(out))
"""
LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } ... on InvalidSubsetError { message } } }"""
LOCATIONS = """{ workspaceOrError { ... on Workspace { locationEntries { name } } } }"""


def launch_schedules(url: str, root: Path, work: Path, code: Path) -> int:
    """Today's 03:30 and 04:30 schedules evaluated with that code at those times; each request
    launched as the UI launches a run. How many were launched."""
    env = {**os.environ, "MEMORY_ROOT": str(root), "PYTHONPATH": str(code)}
    env.pop("MEMORY_HOME", None)
    done = subprocess.run(
        [sys.executable, "-c", SCHEDULES], env=env, cwd=work, capture_output=True, text=True, check=True
    )
    requests_ = json.loads(done.stdout.strip().splitlines()[-1])
    [location] = [e["name"] for e in graphql(url, LOCATIONS)["workspaceOrError"]["locationEntries"]]
    for request in requests_:
        params = {
            "selector": {
                "repositoryLocationName": location,
                "repositoryName": "__repository__",
                "jobName": request["job"],
            },
            "runConfigData": {},
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in request["tags"].items()]},
        }
        answer = graphql(url, LAUNCH, {"p": params})["launchRun"]
        if answer["__typename"] != "LaunchRunSuccess":
            raise RuntimeError(f"launchRun: {answer}")
    return len(requests_)


def paced(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from paced_day import measure_paced_day

    return measure_paced_day(turns=args.paced_turns, pace_s=args.pace, work=work)


# -- one size, and the report ------------------------------------------------------------------------


def one_size(
    n: int, templates: list[Path], work: Path, args: argparse.Namespace, digest: dict[str, str]
) -> dict[str, Any]:
    out: dict[str, Any] = {"homes": n, "batch_size": args.batch_size}
    log(f"{n} homes: batched")
    root = work / f"batched-{n}" / "root"
    begin = time.monotonic()
    users = make_root(templates, root, n)
    out["copy_s"] = time.monotonic() - begin
    side = batched(root, users, work / f"batched-{n}", args)
    check_templates(templates, digest, f"the batched side at {n}")
    members = side.pop("members")
    out["active_users_batched"] = len({user for user, _ in members})
    out["runs_batched"], out["batch_runs_batched"] = side["runs"], side["batch_runs"]
    out["failed_runs_batched"], out["users_ok_batched"] = side["failed_runs"], side["users_ok"]
    out["cpu_batched_s"], out["orchestration_cpu_batched_s"] = side["cpu_s"], side["orchestration_cpu_s"]
    out["wall_batched_s"], out["runs_wall_batched_s"] = side["wall_s"], side["runs_wall_s"]
    out["run_peak_rss_batched_mb"] = side["run_peak_rss_mb"]
    out["index_bytes_after_upkeep"] = index_bytes(root, users)
    out["work_batched"] = len(members)
    shutil.rmtree(work / f"batched-{n}")

    if n in args.floor_at:
        log(f"{n} homes: floor")
        root = work / f"floor-{n}" / "root"
        make_root(templates, root, n)
        side = floor(root, members, work / f"floor-{n}")
        check_templates(templates, digest, f"the floor at {n}")
        out["cpu_floor_s"], out["wall_floor_s"] = side["cpu_s"], side["wall_s"]
        out["floor_users_ok"], out["floor_steps"] = side["users_ok"], side["steps"]
        shutil.rmtree(work / f"floor-{n}")

    if not args.skip_today and n in args.today_at:
        k = min(args.today_homes, n)
        log(f"{n} homes: today, on {k} of them")
        root = work / f"today-{n}" / "root"
        make_root(templates, root, k)
        side = today(root, [f"u{i:05d}" for i in range(k)], work / f"today-{n}", args)
        check_templates(templates, digest, f"today's runs at {n}")
        out["today_sample"] = side
        out["runs_today"] = round(side["runs"] / k * n)
        out["cpu_today_s"] = side["cpu_s"] / k * n
        shutil.rmtree(work / f"today-{n}")
    out["runs_target"] = math.ceil(n / args.batch_size) + 5
    out["cpu_per_user_batched_s"] = out["cpu_batched_s"] / n
    out["cpu_per_active_user_batched_s"] = out["cpu_batched_s"] / max(1, out["active_users_batched"])
    if "cpu_floor_s" in out:
        out["cpu_per_user_floor_s"] = out["cpu_floor_s"] / n
        out["batched_over_floor"] = out["cpu_batched_s"] / out["cpu_floor_s"]
    if "cpu_today_s" in out:
        out["cpu_per_user_today_s"] = out["cpu_today_s"] / n
        if "cpu_floor_s" in out:
            out["today_over_floor"] = out["cpu_today_s"] / out["cpu_floor_s"]
    return out


def report(results: list[dict[str, Any]], disk: dict[str, Any] | None) -> dict[str, Any]:
    rows = []
    for r in results:
        sample = r.get("today_sample")
        rows.append(
            [
                r["homes"],
                f"{r.get('runs_today', '-')}"
                + (f" ({sample['runs']} on {sample['homes']})" if sample else ""),
                f"{r['runs_batched']} (target <= {r['runs_target']})",
                f"{r.get('cpu_today_s', float('nan')):.0f}",
                f"{r['cpu_batched_s']:.0f}",
                f"{r.get('cpu_floor_s', float('nan')):.0f}",
                f"{r.get('today_over_floor', float('nan')):.2f}x",
                f"{r.get('batched_over_floor', float('nan')):.2f}x",
                f"{1000 * r.get('cpu_per_user_today_s', float('nan')):.0f} / {1000 * r['cpu_per_user_batched_s']:.0f} / {1000 * r.get('cpu_per_user_floor_s', float('nan')):.0f}",
                f"{r['wall_batched_s']:.0f} / {r.get('wall_floor_s', float('nan')):.0f}",
                f"{r['index_bytes_after_upkeep'] / 1e6:.2f}",
            ]
        )
    print(
        table(
            rows,
            [
                "homes",
                "runs today",
                "runs batched",
                "CPU today (s)",
                "CPU batched (s)",
                "CPU floor (s)",
                "today / floor",
                "batched / floor",
                "CPU per user, ms (today / batched / floor)",
                "wall s (batched / floor)",
                "index MB a home after",
            ],
        )
    )
    summary: dict[str, Any] = {"sizes": results}
    for r in results:
        if "cpu_floor_s" not in r:
            print(
                f"{r['homes']} homes: the floor not run (--floor-at): one process doing the same work for "
                "every home with one model load, its CPU per user is flat in the number of homes by construction"
            )
        print(
            f"{r['homes']} homes: {r['active_users_batched']} active users (in a batch), "
            f"{r['cpu_per_active_user_batched_s'] * 1000:.0f} ms of run CPU each; roots copied in {r['copy_s']:.0f} s"
        )
    if len(results) >= 2:
        first, last = results[0], results[-1]
        summary["per_user_ratio"] = (
            last["cpu_per_active_user_batched_s"] / first["cpu_per_active_user_batched_s"]
        )
        print(
            f"CPU per active user, batched, {last['homes']} / {first['homes']} homes: "
            f"{summary['per_user_ratio']:.2f}x (target <= 1.2x)"
        )
    for r in results:
        print(
            f"{r['homes']} homes: orchestration CPU (daemon, webserver, code servers: the sensor's looks) "
            f"{r['orchestration_cpu_batched_s']:.0f} s batched"
            + (
                f", {r['today_sample']['orchestration_cpu_s']:.0f} s today on {r['today_sample']['homes']} homes"
                if r.get("today_sample")
                else ""
            )
        )
    for r in results:
        sample = r.get("today_sample")
        print(
            f"{r['homes']} homes: the largest run process held {r['run_peak_rss_batched_mb']:.0f} MB batched"
            + (f", {sample['run_peak_rss_mb']:.0f} MB today" if sample else "")
        )
    if disk:
        summary["disk"] = disk
        for r in results:
            r["disk_peak_ratio"] = disk["disk_peak_ratio"]
        print(
            f"disk of a home during a day of paced turns: peak {disk['peak_bytes'] / 1e6:.2f} MB, compacted "
            f"{disk['compacted_bytes'] / 1e6:.2f} MB: {disk['disk_peak_ratio']:.2f}x (target <= 2x)"
        )
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--homes", default="1000,10000", help="the sizes, comma separated (1000,10000)")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=BATCH_SIZE,
        help=f"MEMORY_UPKEEP_BATCH_SIZE (the default, {BATCH_SIZE})",
    )
    parser.add_argument(
        "--json", action="store_true", help="every figure as one JSON object on the last line"
    )
    parser.add_argument("--turns", type=int, default=12, help="turns of a home's day (12)")
    parser.add_argument("--templates", type=int, default=8, help="distinct homes the roots copy (8)")
    parser.add_argument(
        "--today-homes", type=int, default=20, help="homes today's per-user runs are measured on (20)"
    )
    parser.add_argument("--today-rev", default=TODAY_REV, help=f"the code of today's runs ({TODAY_REV})")
    parser.add_argument("--skip-today", action="store_true", help="no per-user runs")
    parser.add_argument(
        "--today-at", help="the sizes today's runs are measured at, comma separated (default: every size)"
    )
    parser.add_argument(
        "--floor-at",
        help="the sizes the floor runs at, comma separated (default: every size); its CPU per user is "
        "flat in the number of homes by construction (one process, one model load, the same work a home)",
    )
    parser.add_argument("--per-tick", type=int, default=500, help="MEMORY_HOMES_PER_TICK (500)")
    parser.add_argument("--max-concurrent-runs", type=int, default=2, help="the instance's run limit (2)")
    parser.add_argument("--paced-turns", type=int, default=300, help="turns of the paced day (300)")
    parser.add_argument("--pace", type=float, default=2.0, help="seconds between paced turns (2)")
    parser.add_argument("--skip-paced", action="store_true", help="no paced day")
    parser.add_argument("--timeout", type=float, default=6 * 3600, help="the longest a side may take (6 h)")
    parser.add_argument("--work", help="a directory for the roots (default: a temporary one)")
    parser.add_argument("--floor-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_child:
        floor_child(Path(args.floor_child[0]), Path(args.floor_child[1]))
        return 0
    sizes = [int(s) for s in args.homes.split(",") if s]
    args.floor_at = {int(s) for s in args.floor_at.split(",") if s} if args.floor_at else set(sizes)
    args.today_at = {int(s) for s in args.today_at.split(",") if s} if args.today_at else set(sizes)
    if args.work:
        Path(args.work).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-upkeep-", dir=args.work) as tmp:
        work = Path(tmp)
        log(f"templates: {args.templates} homes of {args.turns} turns")
        templates = build_templates(work, args.templates, args.turns)
        digest = template_digest(templates)
        results = [one_size(n, templates, work, args, digest) for n in sizes]
        disk = None if args.skip_paced else paced(args, work / "paced")
    summary = report(results, disk)
    if args.json:
        flat = {
            "homes": [r["homes"] for r in results],
            "batch_size": args.batch_size,
            "runs_today": [r.get("runs_today") for r in results],
            "runs_batched": [r["runs_batched"] for r in results],
            "cpu_today_s": [r.get("cpu_today_s") for r in results],
            "cpu_batched_s": [r["cpu_batched_s"] for r in results],
            "cpu_floor_s": [r.get("cpu_floor_s") for r in results],
            "disk_peak_ratio": [r.get("disk_peak_ratio") for r in results],
            **summary,
        }
        print(json.dumps(flat, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
