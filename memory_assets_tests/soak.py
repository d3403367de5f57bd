"""The soak: every writer of a home at once, with random SIGKILLs, ``facts_accounted_for`` as the oracle.

    python -m memory_assets_tests.soak [--rounds 20] [--seconds 6] [--home DIR] [--seed N]

Each round starts real processes on one home and SIGKILLs them at random moments:

* ``today`` and ``past``: the write path (``process_turn``) writing unique facts to today, and to
  days one to ten days back (``--at`` replays, late turns); a fact counts as *acknowledged* once
  ``process_turn`` returned for it (the writer records it only then);
* ``ingest``: appends user turns to a transcript (dated up to five days back) and runs
  ``ingest_transcripts`` (the rule extractor) over them; a turn counts once its line is on disk;
* ``dream``: ``run_dream`` (the rule consolidator) again and again, forced;
* ``maintain``: ``reconcile`` (retire, sweep with the model, optimize), and ``forget`` of a random
  acknowledged fact now and then (a person's removal, recorded as forgotten).

After the round's processes are dead, the home is settled the way the next ordinary run would: a
dream tick (which settles a run a kill interrupted), then a sweep of the index. Then it counts:

* **lost**: acknowledged facts (and transcript turns' names) in no daily log;
* **stranded**: fact lines ``facts_accounted_for`` finds in no state (indexed, folded into a page
  that holds them, forgotten by a person);
* **double-counted**: claims on a page confirmed more than once (every fact is written once, with
  words of its own, so any ``(confirmed Nx)`` marker is a mention counted twice).

It prints one line a round and a total, and exits 1 when anything was lost, stranded or counted
twice. ``memory_assets_tests/test_soak.py`` runs it (marked slow).
"""

import argparse
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROLES = ("today", "past", "ingest", "dream", "maintain")
SYLLABLES = ("ka", "ru", "phi", "lo", "ten", "mar", "vo", "qui", "zel", "bri", "dun", "sa", "wex", "tor")
REPO = Path(__file__).resolve().parents[1]


def word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(3))


def unique_fact(rng: random.Random, tag: str) -> str:
    """A fact whose words no other fact shares, so no rule may relate two of them."""
    return f"{word(rng).capitalize()} {word(rng)} {word(rng)} {word(rng)} {word(rng)} {tag}"


# -- the workers (each a real process) -------------------------------------------------------------
def _home(path: str):  # noqa: ANN202 (the Home type loads lancedb)
    from memory_assets.core.home import Home
    from memory_assets.core.settings import Settings

    return Home(Settings.load(path)).ready()


def work_write(home_dir: str, out: Path, seed: int, past: bool) -> None:
    from memory_assets.core.write_path.extraction import ExtractedFact, GivenFacts, Turn
    from memory_assets.core.write_path.process import process_turn

    rng = random.Random(seed)
    home = _home(home_dir)
    ready(out)
    n = 0
    while True:
        text = unique_fact(rng, f"w{seed}n{n}")
        at = datetime.now(UTC) - timedelta(days=rng.randint(1, 10) if past else 0)
        with out.open("a") as fh:
            fh.write(json.dumps({"intent": text}) + "\n")
        process_turn(
            Turn(text, chat_id=f"soak{seed}", at=at),
            home.settings,
            extractor=GivenFacts([ExtractedFact(text, "general")]),
            store=home.store,
            embedder=None,  # the index catches up in the sweep; the write is what is under test
        )
        with out.open("a") as fh:
            fh.write(json.dumps({"acked": text}) + "\n")
        n += 1
        time.sleep(rng.random() * 0.05)


def work_ingest(home_dir: str, out: Path, seed: int) -> None:
    from memory_assets.core.write_path.extractor_choice import make_extractor
    from memory_assets.core.write_path.ingest import ingest_transcripts

    rng = random.Random(seed)
    home = _home(home_dir)
    transcript = home.settings.home / "transcripts" / f"soak-{seed}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    ready(out)
    n = 0
    while True:
        for _ in range(rng.randint(1, 3)):
            name = word(rng).capitalize() + word(rng)
            at = datetime.now(UTC) - timedelta(days=rng.randint(0, 5), minutes=rng.randint(0, 600))
            line = {"ts": at.isoformat(), "role": "user", "content": f"I own a kayak called {name}."}
            with transcript.open("a") as fh:
                fh.write(json.dumps(line) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            with out.open("a") as fh:
                fh.write(json.dumps({"turn": name}) + "\n")
            n += 1
        ingest_transcripts(home.settings, make_extractor(home.settings), store=home.store, embedder=None)


def work_dream(home_dir: str, out: Path) -> None:
    from memory_assets.core.dream.rule_consolidator import RuleConsolidator
    from memory_assets.core.dream.runner import run_dream

    home = _home(home_dir)
    ready(out)
    while True:
        run_dream(home.settings, RuleConsolidator(), force=True)
        time.sleep(0.05)


def work_maintain(home_dir: str, out: Path, seed: int, work: Path) -> None:
    from memory_assets.core.index.target import Target
    from memory_assets.core.reconcile import ReconcileError, forget, reconcile

    rng = random.Random(seed)
    home = _home(home_dir)
    home.indexer.embedder.embed(["warm up"])  # the model loaded before the round's clock starts
    ready(out)
    first = True
    while True:
        facts = [
            t
            for path in sorted(work.glob("today-*.jsonl")) + sorted(work.glob("past-*.jsonl"))
            for t in _acked(path)
        ]
        if facts and (first or rng.random() < 0.5):  # a person forgets a fact now and then
            text = rng.choice(facts)
            with out.open("a") as fh:
                fh.write(json.dumps({"forget": text}) + "\n")
            with contextlib.suppress(ReconcileError):  # a fact forgotten already, say
                forget(home.settings, home.indexer, Target(text=text))
            with out.open("a") as fh:
                fh.write(json.dumps({"forgotten": text}) + "\n")
        first = False
        reconcile(home.settings, home.indexer)


def ready(out: Path) -> None:
    """Tell the harness this worker is set up (its imports and model cost no round time)."""
    out.with_suffix(".ready").touch()


def _records(path: Path, key: str) -> list[str]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a line a kill cut short
        if key in value:
            out.append(value[key])
    return out


def _acked(path: Path) -> list[str]:
    return _records(path, "acked")


# -- the harness ---------------------------------------------------------------------------------
@dataclass
class Totals:
    rounds: int = 0
    written: int = 0
    acknowledged: int = 0
    turns: int = 0
    kills: int = 0
    indexed: int = 0  # fact lines in each state after the round (the oracle's counts)
    folded: int = 0
    forgotten: int = 0
    lost: list[str] = field(default_factory=list)
    stranded: list[str] = field(default_factory=list)
    double_counted: list[str] = field(default_factory=list)

    def line(self, label: str) -> str:
        return (
            f"{label}: facts written {self.written}, acknowledged {self.acknowledged}, transcript turns "
            f"{self.turns}, SIGKILLs {self.kills}; lines indexed {self.indexed}, folded {self.folded}, "
            f"forgotten {self.forgotten}; lost {len(self.lost)}, stranded {len(self.stranded)}, "
            f"double-counted {len(self.double_counted)}"
        )


def _spawn(role: str, home: Path, work: Path, seed: int) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "memory_assets_tests.soak", "--worker", role, "--home", str(home)]
    args += ["--work", str(work), "--seed", str(seed)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    with (work / f"{role}-{seed}.err").open("ab") as err:
        return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=err)


MARKER = re.compile(r"\(confirmed (\d+)x")


def settle_and_count(home: Path, work: Path, totals: Totals) -> None:
    """The next ordinary run's settling, then the oracle (see the module docstring)."""
    from memory_assets.core.audit.facts_accounted import account
    from memory_assets.core.capture.daily_log import list_logs, read_daily_log
    from memory_assets.core.dream.runner import settle_interrupted
    from memory_assets.core.home import Home
    from memory_assets.core.knowledge.vault import list_pages
    from memory_assets.core.settings import Settings
    from memory_assets.core.write_path.extractor_choice import make_extractor
    from memory_assets.core.write_path.ingest import ingest_transcripts

    settings = Settings.load(home)
    settle_interrupted(settings)  # what the next dream tick does first
    live = Home(settings).ready()
    logged = {f.content for _, path in list_logs(settings.archive_dir) for f in read_daily_log(path).facts}
    acked = [
        t for p in sorted(work.glob("today-*.jsonl")) + sorted(work.glob("past-*.jsonl")) for t in _acked(p)
    ]
    written = [
        t
        for p in sorted(work.glob("today-*.jsonl")) + sorted(work.glob("past-*.jsonl"))
        for t in _records(p, "intent")
    ]
    turns = [n for p in sorted(work.glob("ingest-*.jsonl")) for n in _records(p, "turn")]
    totals.written, totals.acknowledged, totals.turns = len(written), len(acked), len(turns)
    totals.lost = [t for t in acked if t not in logged]
    # A transcript turn is acknowledged by the assistant's own append; its fact must reach a log
    # once an ingestion run has passed it. The last round's tail may still be unread: ingest it.
    ingest_transcripts(settings, make_extractor(settings), store=live.store, embedder=live.embedder)
    text_of_logs = "\n".join(
        f.content for _, path in list_logs(settings.archive_dir) for f in read_daily_log(path).facts
    )
    totals.lost += [f"transcript turn {n}" for n in turns if n not in text_of_logs]
    live.indexer.sweep()
    accounting = account(settings, live.store)
    totals.stranded = [s.problem() for s in accounting.stranded]
    totals.indexed, totals.folded, totals.forgotten = (
        accounting.indexed,
        accounting.folded,
        accounting.forgotten,
    )
    doubled = []
    for rel in list_pages(settings.notebook_dir):
        for line in (settings.notebook_dir / rel).read_text(encoding="utf-8", errors="replace").splitlines():
            m = MARKER.search(line)
            if m and int(m.group(1)) > 1:
                doubled.append(f"notebook/{rel}: {line.strip()}")
    totals.double_counted = doubled


def soak(home: Path, rounds: int, seconds: float, seed: int, out=print) -> Totals:  # noqa: ANN001
    from memory_assets.core.ops.status import init_home
    from memory_assets.core.settings import Settings

    rng = random.Random(seed)
    settings = Settings.load(home)
    init_home(settings)
    work = home / "soak-work"
    work.mkdir(exist_ok=True)
    totals = Totals()
    for number in range(1, rounds + 1):
        seeds = {role: seed * 1000 + number * 10 + i for i, role in enumerate(ROLES)}
        procs = {role: _spawn(role, home, work, seeds[role]) for role in ROLES}
        setup = time.monotonic() + 180
        while time.monotonic() < setup and not all(
            (work / f"{role}-{seeds[role]}.ready").exists() or procs[role].poll() is not None
            for role in ROLES
        ):
            time.sleep(0.05)
        start = time.monotonic()
        deadline = start + seconds
        kill_at = {role: start + rng.uniform(0.5, seconds * 1.5) for role in ROLES}
        while procs:
            now = time.monotonic()
            for role, proc in list(procs.items()):
                if now >= kill_at[role] or now >= deadline + 1:
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGKILL)
                        totals.kills += 1
                    proc.wait()
                    del procs[role]
            time.sleep(0.02)
        settle_and_count(home, work, totals)
        totals.rounds = number
        out(totals.line(f"round {number}"))
        for kind in ("lost", "stranded", "double_counted"):
            for item in getattr(totals, kind)[:5]:
                out(f"  {kind}: {item}")
        if totals.lost or totals.stranded or totals.double_counted:
            break
    out(totals.line("total"))
    return totals


def worker(role: str, home: str, work: Path, seed: int) -> None:
    out = work / f"{role}-{seed}.jsonl"
    if role in ("today", "past"):
        work_write(home, out, seed, past=role == "past")
    elif role == "ingest":
        work_ingest(home, out, seed)
    elif role == "dream":
        work_dream(home, out)
    else:
        work_maintain(home, out, seed, work)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=6.0, help="how long a round's processes run")
    parser.add_argument("--home", type=Path, help="the home to soak (default: a new temporary one)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--worker", choices=ROLES, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.worker:
        worker(args.worker, str(args.home), args.work, args.seed)
        return 0
    home = args.home or Path(tempfile.mkdtemp(prefix="memory-soak-")) / "home"
    totals = soak(home, args.rounds, args.seconds, args.seed)
    return 1 if totals.lost or totals.stranded or totals.double_counted else 0


if __name__ == "__main__":
    sys.exit(main())
