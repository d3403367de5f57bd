"""Benchmark the dedup measurement core (``memory_assets.core.audit.dedup``).

Run from the repository root::

    .venv/bin/python benchmarks/bench_dedup.py [--sizes 10000 50000 100000]

For every size it generates clustered synthetic unit vectors (384-d float32, three write paths,
a share of rows being noisy copies of earlier rows) and times :func:`measure_redundancy` in a
fresh subprocess, so the peak RSS read back through ``getrusage(RUSAGE_CHILDREN)`` is that size's
own. A naive pairwise Python loop is timed on at most ``--naive-cap`` rows (checked to agree with
the blocked result) and extrapolated quadratically; the printed output says so. Last, the backlog
measurement runs on ~15k synthetic daily-log lines, beside an all-pairs ``cdist`` reference timed
on a sample and extrapolated the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_assets.core.audit.dedup import (  # noqa: E402
    DEFAULT_THRESHOLDS,
    measure_backlog,
    measure_redundancy,
    threshold_key,
    token_set_near_pairs,
)
from memory_assets.core.capture.daily_log import LogFact  # noqa: E402
from memory_assets.core.text import fold  # noqa: E402

DIM = 384
PATHS = ("legacy_direct", "archive_log", "notebook")
PATH_WEIGHTS = (0.55, 0.15, 0.30)
COPY_SHARE = 0.25  # rows that are noisy copies of an earlier original row
NOISE_LEVELS = np.array([0.0, 0.03, 0.15, 0.25, 0.32, 0.5], dtype=np.float32)


def synthetic_index(n: int, seed: int = 0) -> tuple[np.ndarray, list[str], list[tuple[str, str]]]:
    """Clustered unit vectors: originals are random directions, copies sit near an earlier original."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, DIM), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    is_copy = rng.random(n) < COPY_SHARE
    is_copy[0] = False
    originals = np.flatnonzero(~is_copy)
    copies = np.flatnonzero(is_copy)
    # the source of a copy is an original row earlier in (date, id) order (row index order here)
    pos = np.searchsorted(originals, copies)  # originals before each copy
    src = originals[(rng.random(copies.size) * pos).astype(np.int64)]
    noise = NOISE_LEVELS[rng.integers(0, NOISE_LEVELS.size, copies.size)]
    for s0 in range(0, copies.size, 8192):  # bounded temporaries
        sl = slice(s0, s0 + 8192)
        jitter = rng.standard_normal((copies[sl].size, DIM), dtype=np.float32) / np.sqrt(DIM)
        x[copies[sl]] = x[src[sl]] + noise[sl, None] * jitter
    paths = [PATHS[k] for k in rng.choice(len(PATHS), size=n, p=PATH_WEIGHTS)]
    start = date(2026, 1, 1)
    days = np.sort(rng.integers(0, 240, size=n))  # dates increase with the row index
    keys = [((start + timedelta(days=int(d))).isoformat(), f"{k:08d}") for k, d in enumerate(days)]
    return x, paths, keys


def naive_redundancy(x: np.ndarray, paths: list[str], keys: list[tuple[str, str]]) -> dict:
    """The obvious way: a Python loop over every (earlier, later) pair."""
    order = sorted(range(len(keys)), key=keys.__getitem__)
    v = x[order].astype(np.float32)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-30)
    p = [paths[k] for k in order]
    best_same = [-np.inf] * len(v)
    best_any = [-np.inf] * len(v)
    for i in range(len(v)):
        for j in range(i):
            s = float(np.dot(v[i], v[j]))
            if s > best_any[i]:
                best_any[i] = s
            if p[i] == p[j] and s > best_same[i]:
                best_same[i] = s
    out: dict = {}
    for name in sorted(set(paths)):
        rows = [k for k in range(len(v)) if p[k] == name]
        out[name] = {
            threshold_key(t): sum(best_same[k] >= t for k in rows) / len(rows) for t in DEFAULT_THRESHOLDS
        }
    return out


def _rss_kb() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def child_redundancy(n: int, block: int) -> None:
    x, paths, keys = synthetic_index(n)
    before_kb = _rss_kb()
    t0 = time.perf_counter()
    result = measure_redundancy(x, paths, keys, block=block)
    seconds = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "n": n,
                "seconds": seconds,
                "rss_before_kb": before_kb,
                "self_peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                "input_mb": x.nbytes / 2**20,
                "by_write_path": result.by_write_path,
                "across": result.across_write_paths,
            }
        )
    )


def child_naive(n: int) -> None:
    x, paths, keys = synthetic_index(n)
    t0 = time.perf_counter()
    naive = naive_redundancy(x, paths, keys)
    seconds = time.perf_counter() - t0
    fast = measure_redundancy(x, paths, keys)
    agree = all(
        abs(naive[name][k] - fast.by_write_path[name][k]) < 1e-12 for name in naive for k in naive[name]
    )
    print(json.dumps({"n": n, "seconds": seconds, "agrees": agree}))


# ---------------------------------------------------------------------------------------------
# synthetic daily logs
# ---------------------------------------------------------------------------------------------

SUBJECTS = ["User", "The user", "User's partner", "User's team", "User's manager"]
VERBS = [
    "prefers",
    "wants to",
    "likes",
    "uses",
    "is learning",
    "works on",
    "plans to",
    "dislikes",
    "asked about",
]
FILLER = ["the", "a", "to", "for", "with", "and", "in", "on", "at", "every", "from", "of"]


def synthetic_logs(lines: int, seed: int = 0, per_day: int = 100) -> list[tuple[date, list[LogFact]]]:
    """Fact lines over a Zipfian pseudo-word vocabulary, with exact repeats, paraphrases and typos."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(6000)})
    rng.shuffle(vocab)
    weights = [1.0 / (k + 30) for k in range(len(vocab))]  # Zipf-like, without a handful of giants
    originals: list[str] = []
    texts: list[str] = []
    while len(texts) < lines:
        roll = rng.random()
        if originals and roll < 0.03:  # exact repeat (sometimes re-cased)
            text = rng.choice(originals)
            texts.append(text.lower() if rng.random() < 0.3 else text)
        elif originals and roll < 0.05:  # a paraphrase that drops or adds specifics
            words = rng.choice(originals).rstrip(".").split()
            words = words[:-1] if len(words) > 8 and rng.random() < 0.5 else [*words, "daily"]
            texts.append(" ".join(words) + ".")
        elif originals and roll < 0.06:  # a typo
            chars = list(rng.choice(originals))
            chars[rng.randrange(len(chars))] = rng.choice(letters)
            texts.append("".join(chars))
        else:
            words = [rng.choice(SUBJECTS), rng.choice(VERBS)]
            for _ in range(rng.randint(3, 9)):
                if rng.random() < 0.3:
                    words.append(rng.choice(FILLER))
                words.append(rng.choices(vocab, weights)[0])
            text = " ".join(words) + "."
            originals.append(text)
            texts.append(text)
    start = date(2026, 1, 1)
    return [
        (
            start + timedelta(days=d),
            [
                LogFact(t, "preference", line=5 + k)
                for k, t in enumerate(texts[d * per_day : (d + 1) * per_day])
            ],
        )
        for d in range((lines + per_day - 1) // per_day)
    ]


def child_backlog(lines: int, sample: int) -> None:
    logs = synthetic_logs(lines)
    t0 = time.perf_counter()
    result = measure_backlog(logs)
    seconds = time.perf_counter() - t0
    from rapidfuzz import fuzz, process

    folded = sorted({fold(f.content) for _, facts in logs for f in facts})
    distinct = len(folded)
    part = folded[:sample]
    t0 = time.perf_counter()
    full = process.cdist(part, part, scorer=fuzz.token_set_ratio, score_cutoff=90.0, workers=-1)
    cdist_seconds = time.perf_counter() - t0
    ref_i, ref_j = np.nonzero(np.triu(full, 1))
    t0 = time.perf_counter()
    i, j, _ = token_set_near_pairs(part, 90.0)
    pairs_seconds = time.perf_counter() - t0
    agree = ref_i.tolist() == i.tolist() and ref_j.tolist() == j.tolist()
    print(
        json.dumps(
            {
                "seconds": seconds,
                "summary": {k: v for k, v in result.summary().items() if k != "paraphrase_pairs"},
                "paraphrase_pairs": len(result.paraphrase_pairs),
                "distinct_folded": distinct,
                "sample": len(part),
                "sample_pairs": len(ref_i),
                "cdist_seconds": cdist_seconds,
                "pairs_seconds": pairs_seconds,
                "agrees": agree,
                "self_peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            }
        )
    )


# ---------------------------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------------------------


def run_child(*args: str) -> tuple[dict, int]:
    """Run this script as a child; its JSON line, and the largest child peak RSS so far (kB)."""
    proc = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), resource.getrusage(
        resource.RUSAGE_CHILDREN
    ).ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 100_000])
    parser.add_argument("--block", type=int, default=2048)
    parser.add_argument("--naive-cap", type=int, default=2_000)
    parser.add_argument("--backlog-lines", type=int, default=15_000)
    parser.add_argument("--cdist-sample", type=int, default=3_000)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        kind, *rest = args.child
        if kind == "redundancy":
            child_redundancy(int(rest[0]), int(rest[1]))
        elif kind == "naive":
            child_naive(int(rest[0]))
        elif kind == "backlog":
            child_backlog(int(rest[0]), int(rest[1]))
        return

    sizes = sorted(args.sizes)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, numpy {np.__version__}"
    )
    print(
        f"index: {DIM}-d float32 unit vectors, paths {PATHS}, {COPY_SHARE:.0%} noisy copies; block={args.block}"
    )
    print("each size runs in a fresh subprocess; peak RSS is that whole process (interpreter, imports, data)")
    print()
    header = f"{'rows':>8} {'seconds':>8} {'peak RSS MB':>12} {'RSS before MB':>14} {'input MB':>9}  rates (across paths)"
    print(header)
    measured: dict[int, float] = {}
    peak_so_far = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    for n in sizes:
        out, children_peak = run_child("redundancy", str(n), str(args.block))
        # ascending sizes: the largest child peak so far is this child's, unless an earlier one was larger
        own = children_peak if children_peak > peak_so_far else out["self_peak_kb"]
        peak_so_far = max(peak_so_far, children_peak)
        measured[n] = out["seconds"]
        rates = " ".join(f"≥{k}:{100 * out['across'][k]:.1f}%" for k in out["across"] if k != "rows")
        print(
            f"{n:>8} {out['seconds']:>8.2f} {own / 1024:>12.0f} {out['rss_before_kb'] / 1024:>14.0f} "
            f"{out['input_mb']:>9.0f}  {rates}"
        )
        if n == sizes[-1]:
            print(f"{'':>8} by write path at n={n}: " + json.dumps(out["by_write_path"]))
    print()

    cap = min(args.naive_cap, sizes[0])
    naive, _ = run_child("naive", str(cap))
    per_pair = naive["seconds"] / (cap * (cap - 1) / 2)
    print(
        f"naive pairwise Python loop: measured {naive['seconds']:.2f} s on {cap} rows "
        f"({per_pair * 1e6:.2f} µs per pair); rates agree with measure_redundancy: {naive['agrees']}"
    )
    print("naive baseline EXTRAPOLATED (not run) as seconds-per-pair x n(n-1)/2:")
    for n in sizes:
        est = per_pair * n * (n - 1) / 2
        print(
            f"{n:>8} rows: naive ~{est:>10.0f} s (~{est / 3600:.1f} h)  vs blocked {measured[n]:.2f} s measured"
        )
    print()

    out, _ = run_child("backlog", str(args.backlog_lines), str(args.cdist_sample))
    s = out["summary"]
    print(
        f"backlog: {s['fact_lines']} fact lines in {s['logs']} logs measured in {out['seconds']:.2f} s "
        f"(peak RSS {out['self_peak_kb'] / 1024:.0f} MB)"
    )
    print(
        f"  exact repeats {s['exact_repeats']}, near duplicates {s['near_duplicates']}, clusters {s['clusters']}, "
        f"largest {s['largest_cluster']['size']} lines over {s['largest_cluster']['distinct_days']} days, "
        f"{out['paraphrase_pairs']} paraphrase pairs sampled"
    )
    scale = (out["distinct_folded"] / out["sample"]) ** 2
    print(
        f"  near-pair search on a {out['sample']}-text sample: filtered {out['pairs_seconds']:.2f} s vs all-pairs "
        f"cdist {out['cdist_seconds']:.2f} s, same {out['sample_pairs']} pairs: {out['agrees']}"
    )
    print(
        f"  all-pairs cdist over all {out['distinct_folded']} distinct folded texts EXTRAPOLATED (not run): "
        f"~{out['cdist_seconds'] * scale:.0f} s"
    )


if __name__ == "__main__":
    main()
