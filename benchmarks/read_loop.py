"""One reader process of a user's home, reading in a loop while a server writes it (issue 40).

    python benchmarks/read_loop.py --root ROOT --user ID --kind search --seconds 60 --every 0.005

Run by ``reads_elsewhere.py`` with the checkout under test first on PYTHONPATH, so the reads are
that code's. It holds no lock of the server's: it reads as ``memory-assets search`` or an
assistant's own library call would, from another process. Kinds:

* ``search``: the library's ``search`` (hybrid, the real model's query vectors, embedded once
  before the loop so each call's time is its read), every ``--every`` seconds;
* ``status``: the library's ``home_status`` (the table's statistics and a scan of a column); a
  status that reports ``index_error`` failed;
* ``cli``: ``memory-assets search`` and ``memory-assets status`` alternately, each a process of its
  own (its exit code, and ``index_error`` in the status, say whether it failed).

Prints one JSON object: reads, failures, the first errors, each read's seconds (p50, p99, max),
and the reads the store read again at the latest version (``reread``; 0 in code without it).
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

QUERIES = [
    "what did I say about my garden",
    "where do I work",
    "which trips did I plan",
    "my favourite food",
    "the books I read last month",
]
LAUNCH = "import sys; from memory_assets.cli import main; sys.exit(main(sys.argv[1:]))"


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--kind", choices=["search", "status", "cli"], required=True)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--every", type=float, default=0.005, help="seconds between reads")
    args = parser.parse_args()

    from memory_assets.core.ops.users import open_user_home, user_settings

    root = Path(args.root)
    reads, failed, seconds = 0, 0, []
    errors: Counter[str] = Counter()
    reread = 0
    if args.kind == "cli":
        home = str(user_settings(root, args.user).home)
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            for command in (["search", "garden plans"], ["status"]):
                start = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-c", LAUNCH, "--home", home, "--json", *command],
                    capture_output=True,
                    text=True,
                    env=os.environ,
                )
                seconds.append(time.perf_counter() - start)
                reads += 1
                bad = done.returncode != 0 or (command[0] == "status" and "index_error" in done.stdout)
                if bad:
                    failed += 1
                    errors[
                        (done.stderr.strip().splitlines() or done.stdout.splitlines() or ["?"])[-1][:300]
                    ] += 1
    else:
        from memory_assets.core.ops.status import home_status
        from memory_assets.core.search.retrieval import search

        home = open_user_home(root, args.user)
        vectors = home.embedder.embed(QUERIES) if args.kind == "search" else None
        end = time.monotonic() + args.seconds  # from the first read on (the model's load is no read)
        k = 0
        while time.monotonic() < end:
            start = time.perf_counter()
            try:
                if args.kind == "search":
                    assert vectors is not None
                    i = k % len(QUERIES)
                    search(
                        home.store,
                        QUERIES[i],
                        query_vector=vectors[i],
                        settings=home.settings,
                        log_recall=False,
                    )
                else:
                    status: dict[str, Any] = home_status(home.settings, home.store)
                    if "index_error" in status:
                        raise RuntimeError(str(status["index_error"]))
                seconds.append(time.perf_counter() - start)
                reads += 1
            except Exception as exc:  # noqa: BLE001  (every failure is counted, with its words)
                reads += 1
                failed += 1
                errors[f"{type(exc).__name__}: {exc}"[:300]] += 1
            k += 1
            time.sleep(args.every)
        reread = int(getattr(home.store, "reread", 0))
    print(
        json.dumps(
            {
                "kind": args.kind,
                "reads": reads,
                "failed": failed,
                "errors": errors.most_common(5),
                "p50_s": _quantile(seconds, 0.5),
                "p99_s": _quantile(seconds, 0.99),
                "max_s": max(seconds, default=0.0),
                "reread": reread,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
