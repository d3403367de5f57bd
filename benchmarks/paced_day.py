"""A home's index during a day of paced turns, against its compacted size (issue 34, item 5).

    .venv/bin/python benchmarks/paced_day.py                      # 300 turns, one every 2 s
    .venv/bin/python benchmarks/paced_day.py --turns 100 --pace 1 --json

Two real ``memory-assets serve`` processes (this tree), each on a fresh home, get the same turns
(LongMemEval-S's dev sample under ``../shared/data/longmemeval-dev/`` when it is there, else the
extraction corpus), posted one at a time, at most one every ``--pace`` seconds, the order
alternating: the acknowledgement path as an assistant calls it, with the server's own write lane
indexing each turn and optimizing the table when its bounds call for it.

* **before**: the lane as it was, its optimize keeping a day of versions
  (``MEMORY_LANE_VERSION_RETENTION_S`` = 86400, what ``MEMORY_VERSION_RETENTION_DAYS`` gave it);
* **after**: the product's default.

A sampler thread reads each home's index directory every ``--sample-every`` seconds (its bytes,
as ``du`` counts them, while the server writes) and, every ``--compact-every`` samples, a
*compacted reference*: the directory copied and optimized with every version but the latest
pruned (``cleanup_older_than=0``), as a home left alone would be. A sample's ratio is its bytes
over the most recent reference taken before it: a home only grows during the day, so an older
reference is smaller and the ratio errs high, never low. ``disk_peak_ratio`` is the largest
ratio of any sample after the warm-up turns (target: at most 2x at every sample);
``peak_over_final`` is the day's largest sample over the home compacted at the end of the day.

``measure_paced_day`` is what ``bench_upkeep.py`` calls for its ``disk_peak_ratio``.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import json
import shutil
import threading
import time
import warnings
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from _common import log, table
from bench_server import LONGMEMEVAL, Server, corpus_turns, longmemeval_turns
from memory_assets.core.ops.users import user_settings

USER = "paced"
WARM_TURNS = 5
TARGET = 2.0
BEFORE_ENV = {"MEMORY_LANE_VERSION_RETENTION_S": str(24 * 3600)}


def tree_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` now; files removed while it is walked count as gone."""
    total = 0
    for f in path.rglob("*"):
        try:
            if f.is_file():
                total += f.stat().st_size
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
    samples: list[tuple[float, int, float | None]] = field(default_factory=list)  # (t, bytes, ratio)
    references: list[tuple[float, int]] = field(default_factory=list)


def sampler(
    sides: list[Side], stop: threading.Event, every: float, compact_every: int, scratch: Path
) -> None:
    k = 0
    while not stop.is_set():
        for side in sides:
            if not side.index_dir.exists():
                continue
            if k % compact_every == 0:
                ref = compacted_bytes(side.index_dir, side.table_name, scratch / side.name)
                if ref is not None:
                    side.references.append((time.monotonic(), ref))
            size = tree_bytes(side.index_dir)
            ref = side.references[-1][1] if side.references else None
            side.samples.append((time.monotonic(), size, size / ref if ref else None))
        k += 1
        stop.wait(every)


def measure_paced_day(
    turns: int = 300,
    pace_s: float = 2.0,
    work: Path | None = None,
    sample_every_s: float = 1.0,
    compact_every: int = 1,
) -> dict[str, Any]:
    """The paced day on both sides; the figures of each, ``disk_peak_ratio`` etc. of "after" at
    the top level (what bench_upkeep prints)."""
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="paced-")) if work is None else work
    work.mkdir(parents=True, exist_ok=True)
    posted = longmemeval_turns(turns) if LONGMEMEVAL.exists() else corpus_turns(turns)
    warm = corpus_turns(WARM_TURNS)
    envs = {"before": BEFORE_ENV, "after": {}}
    sides: list[Side] = []
    try:
        for name, env in envs.items():
            root = work / name / "root"
            root.mkdir(parents=True, exist_ok=True)
            settings = user_settings(root, USER)
            server = Server(root, env=env)
            sides.append(Side(name, server, Path(settings.index_uri), settings.table_name))
            log(f"paced day, {name}: server ready in {server.ready_s:.1f} s")
        clients = {s.name: httpx.Client(base_url=s.server.url, timeout=120) for s in sides}
        try:
            for t in warm:
                for c in clients.values():
                    c.post(f"/v1/users/{USER}/turns", json=t.body()).raise_for_status()
            stop = threading.Event()
            thread = threading.Thread(
                target=sampler,
                args=(sides, stop, sample_every_s, compact_every, work / "scratch"),
                daemon=True,
            )
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
            time.sleep(max(5.0, 3 * sample_every_s))  # the lane's last group and optimize land
            stop.set()
            thread.join()
        finally:
            for c in clients.values():
                c.close()
    finally:
        for side in sides:
            side.server.stop()
    out: dict[str, Any] = {"turns": len(posted), "pace_s": pace_s, "sides": {}}
    for side in sides:
        final = compacted_bytes(side.index_dir, side.table_name, work / "scratch" / side.name) or 0
        ratios = [r for _, _, r in side.samples if r is not None]
        peak = max(b for _, b, _ in side.samples)
        out["sides"][side.name] = {
            "samples": len(side.samples),
            "references": len(side.references),
            "disk_peak_ratio": max(ratios),
            "samples_over_target": sum(r > TARGET for r in ratios),
            # (seconds into the day, bytes, reference bytes) of each sample over the target
            "over_target": [
                [round(t - side.samples[0][0], 1), b, round(b / r)]
                for t, b, r in side.samples
                if r is not None and r > TARGET
            ][:20],
            "peak_bytes": peak,
            "end_bytes": tree_bytes(side.index_dir),
            "compacted_bytes": final,
            "peak_over_final": peak / final if final else float("nan"),
        }
    after = out["sides"]["after"]
    out.update({k: after[k] for k in ("disk_peak_ratio", "peak_bytes", "compacted_bytes", "peak_over_final")})
    out["disk_peak_ratio_before"] = out["sides"]["before"]["disk_peak_ratio"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=300, help="turns of the day (300)")
    parser.add_argument("--pace", type=float, default=2.0, help="seconds between turns (2)")
    parser.add_argument("--sample-every", type=float, default=1.0, help="seconds between samples (1)")
    parser.add_argument("--compact-every", type=int, default=1, help="samples between references (1)")
    parser.add_argument("--work", help="a directory for the homes (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="every figure as JSON on the last line")
    args = parser.parse_args()
    out = measure_paced_day(
        args.turns, args.pace, Path(args.work) if args.work else None, args.sample_every, args.compact_every
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
