"""The batched side of a running ``bench_upkeep.py``, read from outside while it runs: what its
finished runs cost so far, for a day that will not finish in the time there is (issue 42).

    .venv/bin/python benchmarks/upkeep_progress.py --side 'WORK/bench-upkeep-*/batched-10000' --out samples.jsonl
    .venv/bin/python benchmarks/upkeep_progress.py --report samples.jsonl

Every ``--every`` seconds (default 20) it finds the side's ``dagster dev`` (the process whose
working directory is the side's folder) and appends one JSON line to ``--out``: the code servers'
reaped children's CPU (``/proc/<pid>/stat`` cutime + cstime: the run processes, the counter
``bench_upkeep.cpu_of_tree`` reads once the day is over), the CPU of the live processes of the
tree (the orchestration), and, from the side's ``dagster_dev.log``, each ``upkeep_batch`` run that
finished (``RUN_SUCCESS`` or ``RUN_FAILURE``) with the users it worked (its ``index_swept``
materialisations, one a member). ``--report`` prints the last sample: the runs finished, the
users they worked, and the runs' CPU per user so far. A run's CPU is counted once its code server
has reaped it, so a sample can lag its ``RUN_SUCCESS`` line by a few seconds.
"""

import argparse
import glob
import json
import os
import re
import sys
import time
from pathlib import Path

CLK = os.sysconf("SC_CLK_TCK")
LINE = re.compile(
    r" - upkeep_batch - ([0-9a-f-]{36}) - \d+ - (?:upkeep_users - ASSET_MATERIALIZATION - "
    r"Materialized value index_swept|(RUN_SUCCESS|RUN_FAILURE))"
)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            kids.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    return kids


def _dagster_dev(side: Path) -> int | None:
    for entry in os.listdir("/proc"):
        if entry.isdigit() and "dagster" in (cmd := _cmdline(int(entry))) and " dev " in cmd + " ":
            try:
                if os.readlink(f"/proc/{entry}/cwd") == str(side):
                    return int(entry)
            except OSError:
                continue
    return None


def sample(side: Path) -> dict:
    dev = _dagster_dev(side)
    runs = orchestration = 0.0
    if dev is not None:
        kids, todo = _children(), [dev]
        while todo:
            pid = todo.pop(0)
            todo += kids.get(pid, [])
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
            orchestration += (utime + stime) / CLK
            cmd = _cmdline(pid)
            if "api grpc" in cmd or "code-server" in cmd or "code_server" in cmd:
                runs += (cutime + cstime) / CLK
    members: dict[str, int] = {}
    finished: list[tuple[str, str]] = []
    log = side / "dagster_dev.log"
    if log.exists():
        with log.open(errors="replace") as lines:
            for line in lines:
                if m := LINE.search(line):
                    if m.group(2):
                        finished.append((m.group(1), m.group(2)))
                    else:
                        members[m.group(1)] = members.get(m.group(1), 0) + 1
    return {
        "t": time.time(),
        "dagster_dev": dev,
        "runs_cpu_s": runs,
        "orchestration_cpu_s": orchestration,
        "finished": [[run, status, members.get(run, 0)] for run, status in finished],
        "users_done": sum(members.values()),
    }


def report(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["dagster_dev"] is not None]
    if not rows:
        print("no sample of a running side")
        return
    last = rows[-1]
    ok = [f for f in last["finished"] if f[1] == "RUN_SUCCESS"]
    users = sum(f[2] for f in ok)
    print(
        f"at {time.strftime('%H:%M:%S', time.gmtime(last['t']))} UTC: {len(last['finished'])} batch run(s) "
        f"finished ({len(ok)} succeeded, their members {', '.join(str(f[2]) for f in ok) or '-'}), "
        f"{last['users_done']} users done in all"
    )
    print(
        f"the finished runs' CPU {last['runs_cpu_s']:.1f} s: {last['runs_cpu_s'] / max(users, 1):.3f} s a user; "
        f"orchestration so far {last['orchestration_cpu_s']:.1f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--side", help="the side's folder (a glob: bench_upkeep.py names its work folder at random)"
    )
    parser.add_argument("--out", type=Path, help="append the samples here (JSON lines)")
    parser.add_argument("--every", type=float, default=20.0, help="seconds between samples (20)")
    parser.add_argument("--report", type=Path, metavar="SAMPLES", help="print what the last sample says")
    args = parser.parse_args()
    if args.report:
        report(args.report)
        return 0
    if not args.side or not args.out:
        parser.error("give --side GLOB and --out FILE to sample, or --report FILE")
    with args.out.open("a", encoding="utf-8") as out:
        while True:
            found = glob.glob(args.side)
            if found:
                out.write(json.dumps(sample(Path(found[0]))) + "\n")
                out.flush()
            time.sleep(args.every)


if __name__ == "__main__":
    sys.exit(main())
