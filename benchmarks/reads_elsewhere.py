"""Reads from other processes while a server writes, optimizes and prunes (issue 40, item 3).

    .venv/bin/python benchmarks/reads_elsewhere.py --seconds 240            # the issue's probe
    .venv/bin/python benchmarks/reads_elsewhere.py --seconds 60 --json

Two real ``memory-assets serve`` processes, one per side, each writing ``--users`` users: a turn
to each user every ``--pace`` seconds (LongMemEval-S dev turns, ``--longmemeval DIR``, else the
extraction corpus), so each user's write lane optimizes and prunes its table as it decides.
Meanwhile, on each side, reader processes of the first user's home (``read_loop.py``, run with
that side's code first on PYTHONPATH) read it as another process would, holding none of the
server's locks: the library's ``search`` every ``--every`` seconds, the library's ``home_status``,
and the CLI's ``search`` and ``status`` as processes of their own.

* **before**: the code at ``--before REV`` (default ``015eb0a``: the lane pruned every version but
  the latest right after each optimize; a read met a pruned version as damage), from a temporary
  ``git worktree`` of it;
* **after**: this tree, with the product's defaults (``--after-env KEY=VALUE`` adds settings).

A watcher lists the read home's ``_versions/`` every 0.1 s and counts the versions that vanished:
the prunes the readers lived through. Figures: reads and failed reads per 100 of each kind, each
read's time (p50, p99, max: what the retention must cover), the reads read again at the latest
version, and the first errors.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

import bench_server
from _common import log, table
from bench_server import (
    Server,
    baseline_worktree,
    corpus_turns,
    describe_code,
    longmemeval_turns,
    remove_worktree,
)
from memory_assets.core.ops.users import user_settings

BEFORE_REV = "015eb0a"
KINDS = ("search", "status", "cli")
WARM_TURNS = 10


def _env(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"{pair!r}: give settings as KEY=VALUE")
        out[key] = value
    return out


def watch_versions(directory: Path, stop: threading.Event, seen: dict[str, int]) -> None:
    """Count the manifests under ``directory`` that vanished (versions pruned) until ``stop``."""
    known: set[str] = set()
    while not stop.is_set():
        try:
            now = {n for n in os.listdir(directory) if n.endswith(".manifest")}
        except FileNotFoundError:
            now = set()
        seen["pruned"] += len(known - now)
        known = now
        stop.wait(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the readers read (60)")
    parser.add_argument("--users", type=int, default=3, help="users the servers write (3)")
    parser.add_argument("--pace", type=float, default=1.0, help="seconds between a user's turns (1)")
    parser.add_argument("--every", type=float, default=0.005, help="seconds between library reads (0.005)")
    parser.add_argument("--before", default=BEFORE_REV, help=f"the code of the before side ({BEFORE_REV})")
    parser.add_argument("--after-env", action="append", default=[], help="KEY=VALUE for the after server")
    parser.add_argument("--longmemeval", help="the LongMemEval-S dev sample's directory")
    parser.add_argument("--work", help="a directory for the homes (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="every figure as JSON on the last line")
    args = parser.parse_args()
    if args.longmemeval:
        bench_server.LONGMEMEVAL = Path(args.longmemeval)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="reads-elsewhere-"))
    work.mkdir(parents=True, exist_ok=True)
    users = [f"user{k}" for k in range(args.users)]
    rounds = int(args.seconds / args.pace) + 30
    source = longmemeval_turns if bench_server.LONGMEMEVAL.exists() else corpus_turns
    turns = source(WARM_TURNS + rounds * len(users))
    tree = baseline_worktree(args.before, work)
    codes = {"before": tree, "after": bench_server.REPO}
    envs = {"before": {}, "after": _env(args.after_env)}
    servers: dict[str, Server] = {}
    out: dict[str, Any] = {
        "seconds": args.seconds,
        "users": args.users,
        "pace_s": args.pace,
        "code": {},
        "sides": {},
    }
    try:
        for side, code in codes.items():
            root = work / side / "root"
            root.mkdir(parents=True, exist_ok=True)
            servers[side] = Server(root, env=envs[side], code=code)
            imported = servers[side].imported_from().parent
            if imported.resolve() != code.resolve():
                raise SystemExit(f"the {side} server imported {imported}, not the checkout {code}")
            out["code"][side] = describe_code(imported) + (f" with {envs[side]}" if envs[side] else "")
            log(f"reads elsewhere, {side}: {out['code'][side]}")
        limits = httpx.Limits(keepalive_expiry=1.0)  # idle connections dropped before the server's
        clients = {
            side: httpx.Client(base_url=s.url, timeout=120, limits=limits) for side, s in servers.items()
        }
        for k, turn in enumerate(turns[:WARM_TURNS]):
            for side in servers:
                clients[side].post(
                    f"/v1/users/{users[k % len(users)]}/turns", json=turn.body()
                ).raise_for_status()
        stop = threading.Event()
        pruned = {side: {"pruned": 0} for side in servers}
        watchers = []
        for side in servers:
            settings = user_settings(work / side / "root", users[0])
            versions = Path(settings.index_uri) / f"{settings.table_name}.lance" / "_versions"
            watchers.append(
                threading.Thread(target=watch_versions, args=(versions, stop, pruned[side]), daemon=True)
            )
        for w in watchers:
            w.start()
        readers: dict[tuple[str, str], subprocess.Popen[str]] = {}
        for side, code in codes.items():
            env = {**os.environ, "PYTHONPATH": str(code), **envs[side]}
            for kind in KINDS:
                readers[(side, kind)] = subprocess.Popen(
                    [
                        sys.executable,
                        str(Path(__file__).parent / "read_loop.py"),
                        "--root",
                        str(work / side / "root"),
                        "--user",
                        users[0],
                        "--kind",
                        kind,
                        "--seconds",
                        str(args.seconds),
                        "--every",
                        str(args.every if kind == "search" else 0.05),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    env=env,
                    cwd=work,
                )
        log(
            f"reads elsewhere: {len(readers)} readers for {args.seconds:g} s; {args.users} users, a turn each every {args.pace:g} s"
        )
        began = time.perf_counter()
        k = WARM_TURNS
        i = 0
        while any(r.poll() is None for r in readers.values()):
            time.sleep(max(0.0, began + i * args.pace - time.perf_counter()))
            for user in users:
                if k >= len(turns):
                    break
                for side in servers if i % 2 == 0 else list(servers)[::-1]:
                    clients[side].post(f"/v1/users/{user}/turns", json=turns[k].body()).raise_for_status()
                k += 1
            i += 1
        stop.set()
        for w in watchers:
            w.join()
        for c in clients.values():
            c.close()
        for (side, kind), reader in readers.items():
            text = reader.stdout.read() if reader.stdout else ""
            result = (
                json.loads(text.strip().splitlines()[-1])
                if text.strip()
                else {"kind": kind, "reads": 0, "failed": 0}
            )
            out["sides"].setdefault(side, {"versions_pruned": pruned[side]["pruned"], "turns": k})[kind] = (
                result
            )
    finally:
        for server in servers.values():
            server.stop()
        remove_worktree(tree)
    rows = []
    for side, figures in out["sides"].items():
        for kind in KINDS:
            r = figures[kind]
            per100 = 100.0 * r["failed"] / r["reads"] if r["reads"] else float("nan")
            rows.append(
                [
                    side,
                    kind,
                    r["reads"],
                    r["failed"],
                    f"{per100:.2f}",
                    f"{1000 * r.get('p50_s', 0):.0f}",
                    f"{1000 * r.get('p99_s', 0):.0f}",
                    f"{1000 * r.get('max_s', 0):.0f}",
                    r.get("reread", 0),
                    figures["versions_pruned"],
                ]
            )
    print(f"{args.seconds:g} s of reads; {args.users} users written, a turn each every {args.pace:g} s")
    for side, code in out["code"].items():
        print(f"{side}: {code}")
    print(
        table(
            rows,
            [
                "side",
                "reader",
                "reads",
                "failed",
                "failed / 100",
                "p50 ms",
                "p99 ms",
                "max ms",
                "read again",
                "versions pruned meanwhile",
            ],
        )
    )
    for side, figures in out["sides"].items():
        for kind in KINDS:
            for error, n in figures[kind].get("errors", []):
                print(f"{side} {kind} x{n}: {error}")
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
