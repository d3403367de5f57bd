"""A home's index during a day of paced turns, against its compacted size (issues 34 and 40).

    .venv/bin/python benchmarks/paced_day.py --turns 150 --pace 1     # 150 turns, one a second
    .venv/bin/python benchmarks/paced_day.py --turns 150 --pace 2 --json

Two real ``memory-assets serve`` processes, each on a fresh home, get the same turns
(LongMemEval-S's dev sample, ``--longmemeval DIR``, by default ``../shared/data/longmemeval-dev/``
when it is there, else the extraction corpus), posted one at a time, at most one every ``--pace``
seconds, the order alternating: the acknowledgement path as an assistant calls it, with the
server's own write lane indexing each turn and optimizing and pruning the table as it decides.

* **before**: the code at ``--before REV`` (default ``015eb0a``: the lane pruning every version
  but the latest right after each optimize), served from a temporary ``git worktree`` of it
  with its own defaults (``--before-env KEY=VALUE`` adds settings, e.g. the day's retention
  ``MEMORY_LANE_VERSION_RETENTION_S=86400`` of issue 34's "before");
* **after**: this tree with the product's defaults (``--after-env KEY=VALUE`` adds settings).

Each home's index directory is sampled every ``--sample-every`` seconds (its bytes, as ``du``
counts them, while the server writes), and, as often as a copy can be made, a *compacted
reference*: the directory copied and optimized with every version but the latest pruned
(``cleanup_older_than=0``), as a home left alone would be. A sample's ratio is its bytes over the
most recent reference taken before it: a home only grows during the day, so an older reference
is smaller and the ratio errs high, never low. ``disk_peak_ratio`` is the largest ratio of any
sample after the warm-up turns (target: at most 2x at every sample); ``peak_over_final`` is the
day's largest sample over the home compacted at the end of the day.

``measure_paced_day`` is what ``bench_upkeep.py`` calls for its ``disk_peak_ratio``.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import json
import os
import shutil
import threading
import time
import warnings
from dataclasses import dataclass, field
from datetime import timedelta
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

USER = "paced"
WARM_TURNS = 5
TARGET = 2.0
BEFORE_REV = "015eb0a"  # main before issue 40: the lane pruned every version but the latest at once


def tree_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` now; files and folders removed while it is walked count
    as gone (a prune removes them as the sampler reads)."""
    total = 0
    for folder, _dirs, files in os.walk(path):  # os.walk skips a folder it cannot list
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except FileNotFoundError:
                continue
    return total


def compacted_bytes(index_dir: Path, table_name: str, scratch: Path) -> int | None:
    """The index's bytes once compacted: a copy of the directory, optimized keeping only the
    latest version. None when every copy caught the server mid-commit (a file gone between the
    listing and the copy, or a manifest whose files were not all copied)."""
    import lancedb

    for _attempt in range(5):
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            shutil.copytree(index_dir, scratch)
            t = lancedb.connect(str(scratch)).open_table(table_name)
            with warnings.catch_warnings():  # "removes every version except the latest": wanted
                warnings.simplefilter("ignore", UserWarning)
                t.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
            return tree_bytes(scratch)
        except Exception:  # noqa: BLE001  (a torn copy: take another)
            time.sleep(0.2)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return None


@dataclass
class Side:
    name: str
    server: Server
    index_dir: Path
    table_name: str
    samples: list[tuple[float, int]] = field(default_factory=list)  # (t, bytes)
    references: list[tuple[float, int]] = field(default_factory=list)  # (t, compacted bytes)

    def ratios(self) -> list[tuple[float, int, int]]:
        """(t, bytes, reference) of every sample with a reference taken before it."""
        out, k = [], -1
        for t, size in self.samples:
            while k + 1 < len(self.references) and self.references[k + 1][0] <= t:
                k += 1
            if k >= 0:
                out.append((t, size, self.references[k][1]))
        return out


def sampler(sides: list[Side], stop: threading.Event, every: float) -> None:
    """Each side's directory bytes, every ``every`` seconds."""
    while not stop.is_set():
        for side in sides:
            if side.index_dir.exists():
                side.samples.append((time.monotonic(), tree_bytes(side.index_dir)))
        stop.wait(every)


def referencer(side: Side, stop: threading.Event, scratch: Path) -> None:
    """The side's compacted reference, again and again (each takes a copy and an optimize)."""
    while not stop.is_set():
        if side.index_dir.exists():
            taken = time.monotonic()
            ref = compacted_bytes(side.index_dir, side.table_name, scratch / side.name)
            if ref is not None:
                side.references.append((taken, ref))
        stop.wait(0.2)


def measure_paced_day(
    turns: int = 300,
    pace_s: float = 2.0,
    work: Path | None = None,
    sample_every_s: float = 0.2,
    before_rev: str = BEFORE_REV,
    before_env: dict[str, str] | None = None,
    after_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The paced day on both sides; the figures of each, ``disk_peak_ratio`` etc. of "after" at
    the top level (what bench_upkeep prints)."""
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="paced-")) if work is None else work
    work.mkdir(parents=True, exist_ok=True)
    posted = longmemeval_turns(turns) if bench_server.LONGMEMEVAL.exists() else corpus_turns(turns)
    warm = corpus_turns(WARM_TURNS)
    tree = baseline_worktree(before_rev, work)
    codes = {"before": tree, "after": bench_server.REPO}
    envs = {"before": before_env or {}, "after": after_env or {}}
    sides: list[Side] = []
    out: dict[str, Any] = {"turns": len(posted), "pace_s": pace_s, "sides": {}, "code": {}}
    try:
        for name, env in envs.items():
            root = work / name / "root"
            root.mkdir(parents=True, exist_ok=True)
            settings = user_settings(root, USER)
            server = Server(root, env=env, code=codes[name])
            imported = server.imported_from()
            if imported.parent.resolve() != codes[name].resolve():
                raise SystemExit(f"the {name} server imported {imported}, not the checkout {codes[name]}")
            out["code"][name] = f"{describe_code(imported.parent)}" + (f" with {env}" if env else "")
            sides.append(Side(name, server, Path(settings.index_uri), settings.table_name))
            log(f"paced day, {name}: {out['code'][name]}; server ready in {server.ready_s:.1f} s")
        # Idle connections dropped before the server's keep-alive ends (5 s): on a loaded machine a
        # turn to one server can take longer than that, and a POST on a connection the other
        # server just closed fails without an answer.
        limits = httpx.Limits(keepalive_expiry=1.0)
        clients = {s.name: httpx.Client(base_url=s.server.url, timeout=120, limits=limits) for s in sides}
        try:
            for t in warm:
                for c in clients.values():
                    c.post(f"/v1/users/{USER}/turns", json=t.body()).raise_for_status()
            stop = threading.Event()
            threads = [threading.Thread(target=sampler, args=(sides, stop, sample_every_s), daemon=True)]
            threads += [
                threading.Thread(target=referencer, args=(side, stop, work / "scratch"), daemon=True)
                for side in sides
            ]
            for thread in threads:
                thread.start()
            log(f"paced day: {len(posted)} turns, one every {pace_s:g} s, to both servers")
            began = time.perf_counter()
            for i, t in enumerate(posted):
                time.sleep(max(0.0, began + i * pace_s - time.perf_counter()))
                order = sides if i % 2 == 0 else sides[::-1]
                for side in order:
                    clients[side.name].post(f"/v1/users/{USER}/turns", json=t.body()).raise_for_status()
                if (i + 1) % 50 == 0:
                    log(f"paced day: {i + 1} turns")
            time.sleep(5.0)  # the lane's last group and optimize land
            stop.set()
            for thread in threads:
                thread.join()
        finally:
            for c in clients.values():
                c.close()
    finally:
        for side in sides:
            side.server.stop()
        remove_worktree(tree)
    for side in sides:
        final = compacted_bytes(side.index_dir, side.table_name, work / "scratch" / side.name) or 0
        rated = side.ratios()
        ratios = [b / r for _, b, r in rated]
        peak = max(b for _, b in side.samples)
        start = side.samples[0][0]
        out["sides"][side.name] = {
            "samples": len(rated),
            "references": len(side.references),
            "disk_peak_ratio": max(ratios),
            "samples_over_target": sum(r > TARGET for r in ratios),
            # (seconds into the day, bytes, reference bytes) of each sample over the target
            "over_target": [[round(t - start, 1), b, r] for t, b, r in rated if b / r > TARGET][:20],
            "peak_bytes": peak,
            "end_bytes": tree_bytes(side.index_dir),
            "compacted_bytes": final,
            "peak_over_final": peak / final if final else float("nan"),
        }
    after = out["sides"]["after"]
    out.update({k: after[k] for k in ("disk_peak_ratio", "peak_bytes", "compacted_bytes", "peak_over_final")})
    out["disk_peak_ratio_before"] = out["sides"]["before"]["disk_peak_ratio"]
    return out


def _env(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"{pair!r}: give settings as KEY=VALUE")
        out[key] = value
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=300, help="turns of the day (300)")
    parser.add_argument("--pace", type=float, default=2.0, help="seconds between turns (2)")
    parser.add_argument("--sample-every", type=float, default=0.2, help="seconds between samples (0.2)")
    parser.add_argument("--before", default=BEFORE_REV, help=f"the code of the before side ({BEFORE_REV})")
    parser.add_argument("--before-env", action="append", default=[], help="KEY=VALUE for the before server")
    parser.add_argument("--after-env", action="append", default=[], help="KEY=VALUE for the after server")
    parser.add_argument("--longmemeval", help="the LongMemEval-S dev sample's directory")
    parser.add_argument("--work", help="a directory for the homes (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="every figure as JSON on the last line")
    args = parser.parse_args()
    if args.longmemeval:
        bench_server.LONGMEMEVAL = Path(args.longmemeval)
    out = measure_paced_day(
        args.turns,
        args.pace,
        Path(args.work) if args.work else None,
        args.sample_every,
        args.before,
        _env(args.before_env),
        _env(args.after_env),
    )
    rows = [
        [
            name,
            s["samples"],
            f"{s['disk_peak_ratio']:.2f}x",
            s["samples_over_target"],
            f"{s['peak_bytes'] / 1e6:.2f}",
            f"{s['end_bytes'] / 1e6:.2f}",
            f"{s['compacted_bytes'] / 1e6:.2f}",
            f"{s['peak_over_final']:.2f}x",
        ]
        for name, s in out["sides"].items()
    ]
    print(f"{out['turns']} turns, one every {out['pace_s']:g} s (target: every sample at most {TARGET:g}x)")
    for name, code in out["code"].items():
        print(f"{name}: {code}")
    print(
        table(
            rows,
            [
                "side",
                "samples",
                "peak sample / reference",
                f"samples > {TARGET:g}x",
                "peak MB",
                "end MB",
                "compacted at end MB",
                "peak / compacted at end",
            ],
        )
    )
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
