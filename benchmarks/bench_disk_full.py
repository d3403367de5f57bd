"""A full disk under the memory service, before and after issue 40, side by side in one run.

    .venv/bin/python benchmarks/bench_disk_full.py                 # before = 015eb0a, after = this tree
    .venv/bin/python benchmarks/bench_disk_full.py --after REV --rounds 2

Needs root (it mounts a tmpfs; CI and this machine run as root). For each side, a real
``memory-assets serve`` (loopback, no tokens) on a fresh root on its own 24 MB tmpfs: *before*
runs the code of ``--before`` (a temporary ``git worktree``, imported through PYTHONPATH and
checked, as ``bench_server.py`` does), *after* this tree (or ``--after``), with its free-space
threshold off (``MEMORY_SERVER_MIN_FREE_BYTES=0``) so that, as before, every write meets the full
disk itself. Three turns are written; then ``--rounds`` times, for each of eight amounts of free
space left (0 to 256 kB), the disk is filled by a file written until the kernel refuses more and
cut to leave that much, one turn is posted (with an ``Idempotency-Key``, which the code before
ignores) and the file removed. Counted: the answers by status, the answers carrying an internal
error (a Rust source path, a Python exception's name, "os error"), the refused turns kept anyway
(in the user's transcripts), ``/ready`` while the disk is full; then, space back, every refused
turn retried once with its key: the turns kept more than once. Last, the after side with its
default threshold (100 MB, more than the disk holds): the answer to a write and ``/ready``.

Figures go to stdout, progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import contextlib
import errno
import json
import os
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from _common import log, table
from bench_server import REPO, Server, baseline_worktree, describe_code, remove_worktree

BEFORE_REV = "015eb0a"  # main before issue 40
DISK_MB = 24
LEAVE = (0, 0, 2048, 4096, 8192, 16384, 65536, 262144)
INTERNALS = (".rs:", "Error:", "Errno", "os error", "OSError", "RuntimeError", "lance error")


@contextlib.contextmanager
def small_disk(path: Path) -> Iterator[Path]:
    path.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(path)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"cannot mount a tmpfs ({done.stderr.strip()}): run as root")
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(disk: Path, leave: int) -> Path:
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    if leave:
        os.truncate(filler, filler.stat().st_size - leave)
    return filler


def kept(root: Path, user: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for path in sorted((root / "users" / user / "transcripts" / "captured").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if entry.get("role") == "user":
                    out[entry["content"]] += 1
    return out


def run_side(name: str, code: Path | None, rounds: int, tmp: Path) -> dict[str, Any]:
    disk = tmp / name.split()[0] / "disk"
    with small_disk(disk):
        root = disk / "root"
        server = Server(
            root, env={"MEMORY_SERVER_MIN_FREE_BYTES": "0"}, code=code, log_dir=tmp / name.split()[0]
        )
        statuses: Counter[int] = Counter()
        internals = 0
        refused: dict[str, str] = {}
        ready_when_full = ""
        try:
            if code is not None and server.imported_from().resolve() != (code / "memory_assets").resolve():
                raise SystemExit(f"{name}: the server imported {server.imported_from()}, not {code}")
            with httpx.Client(base_url=server.url, timeout=120) as client:
                for n in range(3):
                    answer = client.post(
                        "/v1/users/alice/turns", json={"user": f"I planted {n + 3} lemon trees."}
                    )
                    assert answer.status_code == 200, answer.text
                n = 0
                for _ in range(rounds):
                    for leave in LEAVE:
                        n += 1
                        filler = fill(disk, leave)
                        text = f"My locker number at the pool is {4100 + n}."
                        key = f"probe-{n}"
                        try:
                            answer = client.post(
                                "/v1/users/alice/turns", json={"user": text}, headers={"Idempotency-Key": key}
                            )
                            statuses[answer.status_code] += 1
                            internals += any(word in answer.text for word in INTERNALS)
                            if answer.status_code != 200:
                                refused[key] = text
                        except httpx.HTTPError:
                            statuses[0] += 1  # no answer at all
                            refused[key] = text
                        filler.unlink()
                filler = fill(disk, 0)
                ready = client.get("/ready")
                body = ready.json()
                ready_when_full = f"{ready.status_code}, ready {body.get('ready')}, root_writable {body.get('root_writable')}"
                if "disk_ok" in body:
                    ready_when_full += f", disk_ok {body['disk_ok']}"
                filler.unlink()
                kept_anyway = sum(kept(root, "alice")[t] > 0 for t in refused.values())
                for key, text in refused.items():
                    client.post(
                        "/v1/users/alice/turns", json={"user": text}, headers={"Idempotency-Key": key}
                    )
                twice = sum(kept(root, "alice")[t] > 1 for t in refused.values())
        finally:
            server.stop()
        threshold: dict[str, Any] = {}
        if name.startswith("after"):
            guarded = Server(root, env={}, code=code, log_dir=tmp / name.split()[0], wait=False)
            try:
                guarded.wait_until_up()
                with httpx.Client(base_url=guarded.url, timeout=120) as client:
                    answer = client.post("/v1/users/alice/turns", json={"user": "I keep bees."})
                    threshold = {
                        "write": f"{answer.status_code} {answer.json().get('error')}",
                        "ready": client.get("/ready").status_code,
                    }
            finally:
                guarded.stop()
    return {
        "statuses": dict(sorted(statuses.items())),
        "internals": internals,
        "refused": len(refused),
        "kept_anyway": kept_anyway,
        "twice": twice,
        "ready_when_full": ready_when_full,
        "threshold": threshold,
        "posted": sum(statuses.values()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--before", default=BEFORE_REV, help="the revision before (default: main before issue 40)"
    )
    parser.add_argument(
        "--after", help="serve the after side from this revision (a worktree) instead of this tree"
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the eight fills (default 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-disk-full-") as tmp_name:
        tmp = Path(tmp_name)
        tree = baseline_worktree(args.before, tmp)
        after_tree = baseline_worktree(args.after, tmp) if args.after else None
        try:
            log(f"before: {describe_code(tree)}; after: {describe_code(after_tree or REPO)}")
            sides = {
                f"before ({args.before})": run_side(f"before ({args.before})", tree, args.rounds, tmp),
                f"after ({args.after or 'this tree'})": run_side(
                    f"after ({args.after or 'this tree'})", after_tree, args.rounds, tmp
                ),
            }
        finally:
            remove_worktree(tree)
            if after_tree is not None:
                remove_worktree(after_tree)
    rows = []
    for name, got in sides.items():
        rows.append(
            [
                name,
                got["posted"],
                ", ".join(f"{n} x {s or 'no answer'}" for s, n in got["statuses"].items()),
                got["internals"],
                f"{got['kept_anyway']} of {got['refused']}",
                got["twice"],
                got["ready_when_full"],
                f"write {got['threshold'].get('write', '-')}, /ready {got['threshold'].get('ready', '-')}",
            ]
        )
    print(f"{DISK_MB} MB tmpfs; {args.rounds} rounds of {len(LEAVE)} fills leaving {LEAVE} bytes")
    print(
        table(
            rows,
            [
                "server",
                "turns posted to a full disk",
                "answers",
                "answers with internals",
                "refused but kept",
                "kept twice after a retry",
                "/ready while full",
                "default threshold",
            ],
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
