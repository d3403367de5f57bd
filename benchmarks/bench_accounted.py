"""What ``facts_accounted_for`` costs on a 100k-fact home, beside the reconcile it runs after.

    .venv/bin/python benchmarks/bench_accounted.py [--facts 100000] [--days 365] [--repeat 3]

The home: ``--facts`` fact lines over ``--days`` daily logs. Half the days are folded, the way a
dream run leaves them: a ``run`` record in the fold ledger naming, for every line, one of 200
``3_Personal``-style pages that holds it, and those pages; the other half are indexed, one row a
line (the table is written directly with random unit vectors: the check reads only the archive
rows' ids). Every figure is measured in the same process, interleaved, ``--repeat`` times:

* ``facts_accounted_for`` (every line's state, every folded line looked up in its page);
* ``rows_match_logs``, the existing check that plans every log, for scale;
* a reconcile with nothing to retire (the sweep over every file, then optimize), which the check
  runs after in the ``reconcile`` job.

It prints the medians and the ratios check / reconcile and check / rows_match_logs.
"""

import argparse
import json
import statistics
import tempfile
import time
import zlib
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import _common  # noqa: F401  (the quiet, offline environment first)
import numpy as np
from _common import log, table
from fixtures.sentences import fact_sentences

from memory_assets.core.audit.checks import rows_match_logs
from memory_assets.core.audit.facts_accounted import facts_accounted_for
from memory_assets.core.capture.daily_log import LogFact, append_facts
from memory_assets.core.home import Home
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.rows import plan_archive
from memory_assets.core.index.table_writer import TableWriter
from memory_assets.core.knowledge.folds import append_record, ensure_ledger, load_folds
from memory_assets.core.knowledge.tombstones import Tombstones
from memory_assets.core.ops.status import init_home
from memory_assets.core.reconcile import reconcile
from memory_assets.core.settings import Settings

PAGES = 200
DIM = 384


def build(root: Path, facts: int, days: int) -> Settings:
    settings = Settings.load(root / "home", env={})
    init_home(settings)
    texts = [t for _, t in fact_sentences(facts, seed=11)]
    first = date(2025, 1, 1)
    per_day = max(1, facts // days)
    for d in range(days):
        chunk = texts[d * per_day : (d + 1) * per_day]
        if not chunk:
            break
        day = first + timedelta(days=d)
        for start in range(0, len(chunk), 5):  # blocks of five facts, as turns write them
            at = datetime(day.year, day.month, day.day, 8 + start // 60 % 12, start % 60, tzinfo=UTC)
            append_facts(
                settings.archive_dir,
                f"c{start:05d}",
                [LogFact(t, "general") for t in chunk[start : start + 5]],
                now=at,
            )
    ensure_ledger(settings)
    # Fold every other day into 200 pages, recorded in one run, as a dream leaves them.
    folded: dict[str, dict[str, list[int]]] = {}
    bullets: dict[str, list[str]] = {}
    read: dict[str, list[int]] = {}
    tombs = Tombstones()
    for n, path in enumerate(sorted(settings.archive_dir.glob("*.md"))):
        day = date.fromisoformat(path.stem)
        plan = plan_archive(path, day, tombs, None)
        if n % 2 == 0:
            data = path.read_bytes()
            read[path.name] = [data.count(b"\n"), len(data)]
            for row in plan.rows:
                page = f"3_Personal/Page{zlib.crc32(row.content.encode()) % PAGES:03d}.md"
                folded.setdefault(page, {}).setdefault(path.name, []).append(row.chunk_index)
                bullets.setdefault(page, []).append(row.content)
    for page, lines in bullets.items():
        target = settings.notebook_dir / page
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("---\ntitle: x\n---\n\n## Key Facts\n\n" + "".join(f"- {t}\n" for t in lines))
    append_record(
        settings.folds_path, {"kind": "run", "run": "bench", "days": [], "read": read, "folded": folded}
    )
    store = Home(settings).store
    # Every row the home plans (the unfolded days' lines, the pages' claims), written directly.
    index_rows = [row for plan in Indexer(settings, store).plan_everything() for row in plan.rows]
    writer = TableWriter(store)
    tbl = writer.table_for_write("bench-random", DIM)
    rng = np.random.default_rng(5)
    for b in range(0, len(index_rows), 10_000):
        part = index_rows[b : b + 10_000]
        vectors = rng.standard_normal((len(part), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        writer.apply_diff(tbl, [], part, vectors, [None] * len(part))
    log(
        f"home: {sum(len(v) for f in folded.values() for v in f.values()):,} folded lines on {len(bullets)} "
        f"pages, {len(index_rows):,} rows, ledger records {load_folds(settings).records}"
    )
    return settings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = build(Path(tmp), args.facts, args.days)
        store = Home(settings).store
        indexer = Indexer(settings, store)
        reconcile(settings, indexer)  # the first diffs every file and records its digest: steady state after
        times: dict[str, list[float]] = {"facts_accounted_for": [], "rows_match_logs": [], "reconcile": []}
        outcome = None
        for _ in range(args.repeat):
            start = time.perf_counter()
            outcome = facts_accounted_for(settings, store)
            times["facts_accounted_for"].append(time.perf_counter() - start)
            start = time.perf_counter()
            rows_match_logs(settings, store)
            times["rows_match_logs"].append(time.perf_counter() - start)
            start = time.perf_counter()
            reconcile(settings, indexer)
            times["reconcile"].append(time.perf_counter() - start)
        assert outcome is not None
        log(f"check: {outcome.summary}")
        med = {k: statistics.median(v) for k, v in times.items()}
        rows = [[k, f"{v:.2f} s", f"{min(times[k]):.2f}-{max(times[k]):.2f} s"] for k, v in med.items()]
        print(table(rows, ["step", "median", "range"]))
        print(
            f"facts_accounted_for / reconcile = {med['facts_accounted_for'] / med['reconcile']:.2f}x; "
            f"facts_accounted_for / rows_match_logs = {med['facts_accounted_for'] / med['rows_match_logs']:.2f}x"
        )
        print(json.dumps({"passed": outcome.passed, **outcome.metadata}))


if __name__ == "__main__":
    main()
