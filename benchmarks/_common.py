"""Shared helpers for the benchmark scripts: a quiet, offline environment, timing, tables.

Import this module before anything from ``memory_assets`` (it sets the environment variables that
keep LanceDB's Rust logging and the Hugging Face hub quiet and offline). The generated fact text
the scripts share is ``fixtures/sentences.py``.
"""

import os

os.environ.setdefault("LANCEDB_LOG", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Not set by the package. With libgomp's default spin-waiting, a single CPU-bound neighbour process on
# these 2 cores cuts torch's 2-thread encode throughput ~5x (measured 370 -> 72 sent/s); PASSIVE leaves
# quiet-machine throughput unchanged (~370 sent/s) and keeps ~207 sent/s under such a neighbour, so
# the benchmark's timings are far less at the mercy of other processes. Override by exporting it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from contextlib import contextmanager  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Timing and output
# ---------------------------------------------------------------------------------------------


@contextmanager
def timed() -> Iterator[list[float]]:
    """``with timed() as t: ...`` then ``t[0]`` is the elapsed seconds."""
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def latency_ms(fn: Callable[[int], object], n: int, warmup: int = 5) -> dict[str, float]:
    """Call ``fn(i)`` for i in range(n) (after ``warmup`` untimed calls); p50/p95/mean in ms."""
    for i in range(min(warmup, n)):
        fn(i)
    samples = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - start) * 1000.0)
    return {"p50": percentile(samples, 50), "p95": percentile(samples, 95), "mean": statistics.fmean(samples)}


def log(msg: str) -> None:
    """Progress to stderr (the figures go to stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    sep = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    lines = [sep, "| " + " | ".join(h.ljust(w) for h, w in zip(cells[0], widths, strict=True)) + " |", sep]
    for r in cells[1:]:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
    lines.append(sep)
    return "\n".join(lines)
