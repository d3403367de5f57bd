"""One look of the homes sensor at one home, this tree against another revision, side by side.

    .venv/bin/python benchmarks/bench_homes_look.py --against 26b585d            # 100 homes, 2 rounds
    .venv/bin/python benchmarks/bench_homes_look.py --against HEAD~3 --homes 50 --rounds 3

A tick of ``homes_sensor`` is its looks at homes (``_look_at``, one a home) and a little more
(``bench_homes.py`` (a) splits the two); this measures the look alone, so a change to what a look
costs is seen without the noise of whole ticks at two sizes.

The other revision's ``memory_assets`` is taken with ``git archive`` into a temporary directory.
Each round runs both sides, alternately, each in a fresh process on a fresh root of ``--homes``
copies of one indexed home (``bench_homes.template_home``) and a fresh SQLite instance:

* **first**: the first look at every home (nothing of the home's known yet);
* **changed**: a fact appended to today's log of every home, then a look at each (three times);
* **optimize due**: the same, with the clock eleven minutes on (``freshness.clock``), so every
  home is due its optimize check (at most every 10 minutes a home, and always due in a real
  deployment for a home not looked at in the last 10 minutes).

Printed: the mean look per home for each phase and side (the median over the rounds), and the
ratio of this tree to the other.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import log, table

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("first", "changed", "optimize due")


def one_side(code: Path, root: Path) -> dict[str, float]:
    """In this process: ``code``'s sensor looking at every home of ``root``, phase by phase."""
    import os

    sys.path.insert(0, str(code))
    os.environ["MEMORY_ROOT"] = str(root)
    import dagster as dg

    from memory_assets.core.index import freshness
    from memory_assets.core.ops.users import list_users, user_settings
    from memory_assets.defs.homes import sensors
    from memory_assets.defs.resources import MemoryHomeResource

    if not sensors.__file__.startswith(str(code)):
        raise SystemExit(f"imported {sensors.__file__}, not from {code}")
    sys.path.insert(1, str(Path(__file__).parent))
    from bench_homes import DAGSTER_YAML, write_day
    from fixtures.sentences import fact_sentences
    from datetime import UTC, datetime

    users = list_users(root)
    texts = iter(fact_sentences(8 * len(users), seed=26))
    today = datetime.now(UTC).date()
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-look-dh-") as dh:
        Path(dh, "dagster.yaml").write_text(DAGSTER_YAML)
        with dg.DagsterInstance.from_config(dh) as instance:
            memory = MemoryHomeResource()
            context = dg.build_sensor_context(instance=instance, resources={"memory": memory})

            def looks(phase: str) -> None:
                tick = sensors.Tick()
                start = time.perf_counter()
                for user in users:
                    sensors._look_at(context, memory, user, tick)
                out.setdefault(phase, []).append(1000 * (time.perf_counter() - start) / len(users))

            def change(label: str) -> None:
                for k, user in enumerate(users):
                    write_day(user_settings(root, user), today, [next(texts)], f"{label}{k:05d}")

            looks("first")
            for n in range(3):
                change(f"chg{n}")
                looks("changed")
            real_clock = freshness.clock
            freshness.clock = lambda: real_clock() + 660  # type: ignore[assignment]
            change("due")
            looks("optimize due")
    return {phase: statistics.mean(values) for phase, values in out.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the git revision to compare with (e.g. HEAD~3)")
    parser.add_argument("--homes", type=int, default=100, help="homes looked at (100)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both sides (2)")
    parser.add_argument("--side", help=argparse.SUPPRESS)  # internal: code directory of one side
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(one_side(Path(args.side), Path(args.root))))
        return 0

    from bench_homes import make_root, template_home

    with tempfile.TemporaryDirectory(prefix="bench-look-") as tmp:
        work = Path(tmp)
        other = work / "other"
        other.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.against, "memory_assets"], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(other)], input=archive.stdout, check=True)
        log("the template home (3 days of logs, indexed with the bundled model)")
        template = template_home(work)
        sides = {"this tree": ROOT, args.against: other}
        results: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
        for n in range(args.rounds):
            for name, code in sides.items() if n % 2 == 0 else reversed(sides.items()):
                root = work / f"root{n}-{len(results[name])}-{'this' if code == ROOT else 'other'}"
                make_root(template, root, args.homes)
                done = subprocess.run(
                    [sys.executable, __file__, "--against", args.against, "--side", str(code), "--root", str(root)],
                    capture_output=True, text=True, check=False,
                )  # fmt: skip
                if done.returncode != 0:
                    sys.stderr.write(done.stderr[-4000:])
                    raise SystemExit(f"the look of {name} failed")
                results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
                log(f"round {n + 1}, {name}: {results[name][-1]}")

    median: dict[str, dict[str, float]] = {
        name: {phase: statistics.median(r[phase] for r in runs) for phase in PHASES}
        for name, runs in results.items()
    }
    this, that = median["this tree"], median[args.against]
    print(f"One look at a home, mean ms a home ({args.homes} homes, median of {args.rounds} rounds):")
    print(
        table(
            [[phase, f"{that[phase]:.1f}", f"{this[phase]:.1f}", f"{this[phase] / that[phase]:.2f}x"] for phase in PHASES],
            ["phase", args.against, "this tree", "this tree / other"],
        )
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
