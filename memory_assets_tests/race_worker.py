"""A real process for the concurrency tests: ``python -m memory_assets_tests.race_worker ROLE ...``.

Roles, each looping over repetition homes ``<root>/rep<N>`` (created by the test) so that one
process serves every repetition and loads the model once:

* ``reindex``: waits for ``go``, then runs ``memory-assets reindex`` (the CLI's own ``main``, in
  this process) again and again until the appender is done, then once more; writes
  ``reindexer-<id>.json`` with every run's JSON summary.
* ``append``: waits for ``go``, appends ``--lines`` fact lines across three daily logs in small
  blocks (the durable append under the writers' lock), then writes ``appender-done``.
"""

import argparse
import io
import json
import random
import sys
import time
from contextlib import redirect_stdout
from datetime import UTC, datetime
from pathlib import Path

from memory_assets.cli import main as cli_main
from memory_assets.core.capture.daily_log import LogFact, append_facts
from memory_assets.core.durable import write_atomic

DAYS = (
    datetime(2026, 11, 1, 9, tzinfo=UTC),
    datetime(2026, 11, 2, 9, tzinfo=UTC),
    datetime(2026, 11, 3, 9, tzinfo=UTC),
)
TOPICS = ("coffee", "running", "Lisbon", "pytest", "the garden", "Ana", "Dagster", "bees", "metric units")


def fact(n: int) -> str:
    return f"Fact {n}: mentioned {TOPICS[n % len(TOPICS)]} while talking about plan number {n * 7 % 101}"


def wait_for(path: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.005)


def reindex(home: Path) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli_main(["--home", str(home), "--json", "reindex"])
    if code != 0:
        raise SystemExit(f"reindex exited {code}")
    return json.loads(out.getvalue())


def run_reindexer(root: Path, reps: int, ident: int) -> None:
    for rep in range(reps):
        home = root / f"rep{rep}"
        wait_for(home / "go")
        runs = []
        while True:
            done = (home / "appender-done").exists()
            runs.append(reindex(home))
            if done:
                break
        write_atomic(home / f"reindexer-{ident}.json", json.dumps(runs))  # the test reads it once it exists


def run_appender(root: Path, reps: int, lines: int, seed: int) -> None:
    rng = random.Random(seed)
    for rep in range(reps):
        home = root / f"rep{rep}"
        wait_for(home / "go")
        written = 0
        while written < lines:
            block = [
                LogFact(fact(written + i), "context") for i in range(min(rng.randint(1, 4), lines - written))
            ]
            now = DAYS[rng.randrange(len(DAYS))]
            append_facts(home / "memory" / "archive", f"chat{rep:04d}", block, now=now)
            written += len(block)
            time.sleep(rng.random() * 0.004)
        write_atomic(home / "appender-done", str(written))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["reindex", "append"])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--reps", type=int, required=True)
    parser.add_argument("--id", type=int, default=0)
    parser.add_argument("--lines", type=int, default=500)
    args = parser.parse_args(argv)
    if args.role == "reindex":
        run_reindexer(args.root, args.reps, args.id)
    else:
        run_appender(args.root, args.reps, args.lines, seed=args.id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
