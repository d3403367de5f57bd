"""The write path's cost per turn, on a home whose index holds 50,000 rows.

    .venv/bin/python benchmarks/bench_write_path.py                       # 50k rows, 100 turns
    .venv/bin/python benchmarks/bench_write_path.py --rows 10000          # smaller
    .venv/bin/python benchmarks/bench_write_path.py --optimize-above 16   # with the sensor's compaction
    .venv/bin/python benchmarks/bench_write_path.py --with-vault          # a home the dream has run on

The home: 50,000 index rows (2,000 real sentences embedded by the bundled model, the rest
word-level variants of them, as in bench_index.py), optimized with its ANN index as a home of
that size is. Then 100 turns, each a user message from the shipped extraction corpus, go through
``process_turn`` with the default (rule-based) extractor, each timed by step:

* own work: everything the write path does itself (recall's queries, classifying, the durable
  append, the day's diff against the table, the confirmation line), excluding the extractor and
  the embedding model (the query embedding and the new lines' embeddings), which are measured
  separately. Target: p50 <= 20 ms.
* end to end: the whole call, extraction and embedding included.

Every turn's reindex commits a fragment, and full text searches new rows flat until an optimize
folds them in, so the recall slows turn by turn: the full-text floor is printed before the turns
and after them. By default nothing optimizes between turns; ``--optimize-above N`` optimizes (not
timed) whenever the table has more than N fragments, as the optimize sensor does in a deployment.

The home has no vault by default, so every turn with an important fact runs MEMORY.md's legacy
per-turn writer (the worst case: a large index from before any dream). ``--with-vault`` gives it
one ``3_Personal/`` page first, as any home the dream has run on has; the writer then stands down.

Figures go to stdout, progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from _common import log, percentile, table

from fixtures.sentences import fact_sentences
from bench_index import synth_rows
from memory_assets.core.home import Home
from memory_assets.core.ops.status import init_home
from memory_assets.core.models.embedder import shared_embedder
from memory_assets.core.index.table_writer import TableWriter
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.knowledge.personal_pages import PERSONAL_DIR
from memory_assets.core.write_path.extraction import Turn
from memory_assets.core.write_path.process import process_turn
from memory_assets.core.write_path.rule_extractor import RuleExtractor
from memory_assets.core.index.maintenance import FRAGMENTS_SOFT
from memory_assets.core.settings import Settings

CORPUS = Path(__file__).parent / "data" / "extraction_corpus.jsonl"
TARGET_MS = 20.0


class TimedEmbedder:
    """The shared embedder, with the time spent in it (query and rows) counted apart."""

    def __init__(self, inner: object):
        self.inner = inner
        self.seconds = 0.0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)  # type: ignore[attr-defined]
        finally:
            self.seconds += time.perf_counter() - start

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class CallTimer:
    """Time spent inside LanceDB and in fsync during the turns, measured at the boundary: every
    synchronous LanceDB call crosses ``BackgroundEventLoop.run``, and the async API's calls (the
    recall's query and its version checks) are awaited on the caller's thread, timed there and
    only there (on LanceDB's own loop thread they are the synchronous calls already counted)."""

    def __init__(self) -> None:
        self.lancedb = 0.0
        self.calls = 0
        self.fsync = 0.0
        self.syncs = 0

    def reset(self) -> None:
        self.lancedb, self.calls, self.fsync, self.syncs = 0.0, 0, 0.0, 0

    def install(self) -> None:
        import threading

        import lancedb.background_loop as background
        import lancedb.query as lance_query
        import lancedb.table as lance_table

        timer = self
        run = background.BackgroundEventLoop.run

        def timed_run(loop: object, future: object) -> object:
            start = time.perf_counter()
            try:
                return run(loop, future)  # type: ignore[arg-type]
            finally:
                timer.lancedb += time.perf_counter() - start
                timer.calls += 1

        background.BackgroundEventLoop.run = timed_run  # type: ignore[method-assign]

        def timed_async(cls: type, name: str) -> None:
            method = getattr(cls, name)

            async def wrapper(*args: object, **kwargs: object) -> object:
                if threading.current_thread().name == "LanceDBBackgroundEventLoop":
                    return await method(*args, **kwargs)
                start = time.perf_counter()
                try:
                    return await method(*args, **kwargs)
                finally:
                    timer.lancedb += time.perf_counter() - start
                    timer.calls += 1

            setattr(cls, name, wrapper)

        timed_async(lance_query.AsyncQueryBase, "to_arrow")
        for name in ("version", "checkout_latest", "schema", "count_rows", "list_indices"):
            timed_async(lance_table.AsyncTable, name)
        fsync = os.fsync

        def timed_fsync(fd: int) -> None:
            start = time.perf_counter()
            try:
                fsync(fd)
            finally:
                timer.fsync += time.perf_counter() - start
                timer.syncs += 1

        os.fsync = timed_fsync


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument(
        "--optimize-above",
        type=int,
        default=0,
        metavar="N",
        help="between turns (not timed), optimize when the table has more than N fragments, as the "
        f"optimize sensor does at {FRAGMENTS_SOFT}; default 0: never (the turns pile fragments up)",
    )
    parser.add_argument(
        "--with-vault",
        action="store_true",
        help="write one 3_Personal/ page before the turns (a home the dream has run on): MEMORY.md's "
        "per-turn writer stands down; default: no vault, the writer runs on every important fact",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_write_path_"))
    try:
        settings = Settings.load(root / "home", env={})
        init_home(settings)
        emb = shared_embedder()
        log(f"building a {args.rows:,}-row index")
        base = fact_sentences(2000, seed=44)
        rows, vectors = synth_rows(base, emb.embed([t for _, t in base]), args.rows, 0.03, per_file=100)
        store = Home(settings).store
        table_ = TableWriter(store).table_for_write(emb.model_name, emb.dimension)
        for b in range(0, args.rows, 10_000):
            part = rows[b : b + 10_000]
            TableWriter(store).apply_diff(table_, [], part, vectors[b : b + 10_000], [None] * len(part))
        start = time.perf_counter()
        TableWriter(store).optimize()
        log(
            f"optimized ({'ANN index' if store.has_ann_index() else 'brute force'}) in {time.perf_counter() - start:.1f} s"
        )
        if args.with_vault:
            page = settings.notebook_dir / PERSONAL_DIR / "Profile.md"
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(
                "---\nstatus: stable\nupdated: 2026-10-31\n---\n- Lives in Lisbon. (confirmed 3x, last 2026-10-31)\n"
            )
            Indexer(settings, store, emb).reindex_key(f"notebook:{PERSONAL_DIR}/Profile.md")
        statements = [
            json.loads(line)["user"]
            for line in CORPUS.read_text().splitlines()
            if json.loads(line)["expected"]
        ]
        # Full text slows as the turns' commits add fragments (new rows are searched flat until an
        # optimize folds them in): the floor is measured before the turns and after them.
        fts_before = full_text_floor(store, settings, statements)
        extractor = RuleExtractor()
        timed = TimedEmbedder(emb)
        day0 = datetime(2026, 11, 1, 9, tzinfo=UTC)
        own, total, extract, embed, outcomes = [], [], [], [], {"new": 0, "revision": 0, "confirmation": 0}
        steps: dict[str, list[float]] = {}
        reindex_own: list[float] = []
        optimized = 0
        calls = CallTimer()
        calls.install()
        in_lancedb: list[float] = []
        in_fsync: list[float] = []
        rest: list[float] = []
        lancedb_calls: list[int] = []
        fsyncs: list[int] = []
        for n in range(args.turns):
            text = statements[n % len(statements)]
            timed.seconds = 0.0
            calls.reset()
            start = time.perf_counter()
            result = process_turn(
                Turn(text, chat_id="bench000", at=day0 + timedelta(hours=n)),
                settings,
                extractor=extractor,
                store=store,
                embedder=timed,  # type: ignore[arg-type]
            )
            elapsed = time.perf_counter() - start
            total.append(elapsed * 1000)
            extract.append(result.timings["extract"] * 1000)
            embed.append(timed.seconds * 1000)
            own.append((elapsed - result.timings["extract"] - timed.seconds) * 1000)
            in_lancedb.append(calls.lancedb * 1000)
            in_fsync.append(calls.fsync * 1000)
            rest.append(own[-1] - in_lancedb[-1] - in_fsync[-1])
            lancedb_calls.append(calls.calls)
            fsyncs.append(calls.syncs)
            if args.optimize_above and store.stats().fragments > args.optimize_above:
                Indexer(settings, store).optimize()  # another process's run in a deployment
                optimized += 1
            for key, value in result.counts().items():
                outcomes[key] += value
            for step, seconds in result.timings.items():
                steps.setdefault(step, []).append(seconds * 1000)
            if "reindex" in result.timings:  # less the new lines' embedding (the only embedding here)
                reindex_own.append((result.timings["reindex"] - timed.seconds) * 1000)
        fragments = store.stats().fragments
        fts_after = full_text_floor(store, settings, statements)
        floor = lancedb_floor(store)
        p50 = percentile(own, 50)
        print("# memory-assets write-path benchmark\n")
        print(
            f"command : .venv/bin/python benchmarks/bench_write_path.py --rows {args.rows} --turns {args.turns}"
            + (f" --optimize-above {args.optimize_above}" if args.optimize_above else "")
            + (" --with-vault" if args.with_vault else "")
        )
        print(
            f"started : {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC; 2 cores shared, 1-min load {os.getloadavg()[0]:.2f}"
        )
        print(
            f"home    : {store.count():,} index rows ({'IVF_HNSW_SQ' if store.has_ann_index() else 'no ANN'}); "
            f"{args.turns} turns from {CORPUS.name}, rule-based extraction; facts: {outcomes}; "
            + (
                "a vault page (MEMORY.md's per-turn writer stands down); "
                if args.with_vault
                else "no vault (MEMORY.md's per-turn writer runs); "
            )
            + (
                f"optimized {optimized} time(s) between turns (above {args.optimize_above} fragments)\n"
                if args.optimize_above
                else "no optimize between turns\n"
            )
        )
        print(
            table(
                [
                    [
                        "own work (excl. extraction, embedding)",
                        f"{p50:.1f}",
                        f"{percentile(own, 95):.1f}",
                        f"p50 <= {TARGET_MS:.0f} ms: {'ok' if p50 <= TARGET_MS else 'MISSED'}",
                    ],
                    [
                        "extraction (rules)",
                        f"{percentile(extract, 50):.1f}",
                        f"{percentile(extract, 95):.1f}",
                        "",
                    ],
                    [
                        "embedding (query + new lines)",
                        f"{percentile(embed, 50):.1f}",
                        f"{percentile(embed, 95):.1f}",
                        "",
                    ],
                    ["end to end", f"{percentile(total, 50):.1f}", f"{percentile(total, 95):.1f}", ""],
                ],
                ["per turn", "p50 ms", "p95 ms", "note"],
            )
        )
        print(
            "\nown work by where the time went, per turn (measured in the turn: LanceDB calls timed where "
            "they are made, fsync timed in the kernel call; the rest is memory-assets' own Python: "
            "parsing, planning, diffing, classifying, ranking, locks, file writes):"
        )
        print(
            table(
                [
                    [
                        "inside LanceDB (queries, commits, version checks)",
                        f"{percentile(in_lancedb, 50):.1f}",
                        f"{percentile(in_lancedb, 95):.1f}",
                        f"{percentile(lancedb_calls, 50):.0f}",
                    ],
                    [
                        "fsync (log append, MEMORY.md)",
                        f"{percentile(in_fsync, 50):.1f}",
                        f"{percentile(in_fsync, 95):.1f}",
                        f"{percentile(fsyncs, 50):.0f}",
                    ],
                    [
                        "the rest (memory-assets' Python)",
                        f"{percentile(rest, 50):.1f}",
                        f"{percentile(rest, 95):.1f}",
                        "",
                    ],
                ],
                ["own work", "p50 ms", "p95 ms", "calls p50"],
            )
        )
        print(
            "\nby step (embedding included where a step embeds; memory_md only on turns with an important fact):"
        )
        print(
            table(
                [
                    *(
                        [step, f"{percentile(v, 50):.1f}", f"{percentile(v, 95):.1f}", len(v)]
                        for step, v in steps.items()
                    ),
                    [
                        "reindex, own (less its embedding)",
                        f"{percentile(reindex_own, 50):.1f}",
                        f"{percentile(reindex_own, 95):.1f}",
                        len(reindex_own),
                    ],
                ],
                ["step", "p50 ms", "p95 ms", "turns"],
            )
        )
        print(
            "\nthe floor: LanceDB's own calls on the same table, 30 each, no memory-assets code "
            "(a day's reindex needs one add commit, and a scan of the day's ids only after another "
            "process's commit; the recall one full-text query; MEMORY.md's refresh no scan unless "
            "another process committed):"
        )
        print(
            table(
                [[k, f"{percentile(v, 50):.1f}", f"{percentile(v, 95):.1f}"] for k, v in floor.items()],
                ["LanceDB call", "p50 ms", "p95 ms"],
            )
        )
        print(
            f"\nfull text before the turns (table just optimized) and after them ({fragments} fragments), "
            f"{len(statements[:FLOOR_QUERIES])} of the turns' messages each: LanceDB's query alone, and "
            "the recall's full_text() as the write path calls it:"
        )
        print(
            table(
                [
                    [k, f"{percentile(fts_before[k], 50):.1f}", f"{percentile(fts_after[k], 50):.1f}"]
                    for k in fts_before
                ],
                ["query", "before p50 ms", "after p50 ms"],
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


FLOOR_QUERIES = 30


def full_text_floor(store: MemoryStore, settings: Settings, statements: list[str]) -> dict[str, list[float]]:
    """The recall's query at this moment: LanceDB's full-text query (k=10) on the turns' first
    messages, and ``keyword_search`` exactly as the write path's recall calls it."""
    from memory_assets.core.search.retrieval import keyword_search
    from memory_assets.core.write_path.process import RECALL_QUERY_CHARS

    tbl = store.table()
    out: dict[str, list[float]] = {"full-text query, k=10": [], "recall's full_text()": []}
    for text in statements[:FLOOR_QUERIES]:
        query = text[:RECALL_QUERY_CHARS]
        words = " ".join("".join(c if c.isalnum() else " " for c in query).split())
        start = time.perf_counter()
        tbl.search(words, query_type="fts").limit(10).to_arrow()
        out["full-text query, k=10"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        keyword_search(store, query, settings=settings, limit=settings.known_facts_limit)
        out["recall's full_text()"].append((time.perf_counter() - start) * 1000)
    return out


def lancedb_floor(store: MemoryStore, reps: int = 30) -> dict[str, list[float]]:
    """What LanceDB alone costs per call on this table: the lower bound under the write path's steps."""
    import pyarrow as pa

    tbl = store.table()
    one = tbl.search().where("source_type = 'archive_log'").limit(1).to_arrow()
    one = one.drop_columns([c for c in one.column_names if c.startswith("_")])
    out: dict[str, list[float]] = {
        "add one row (commit)": [],
        "delete by id (commit)": [],
        "scan one day's ids": [],
    }
    out["full-text query, k=10"] = []
    day_file = one.column("source_file")[0].as_py()
    for n in range(reps):
        row = one.set_column(one.schema.get_field_index("id"), "id", pa.array([f"floor-{n}"]))
        start = time.perf_counter()
        tbl.add(row)
        out["add one row (commit)"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        tbl.search().where(f"source_file = '{day_file}'").select(["id"]).limit(10_000).to_arrow()
        out["scan one day's ids"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        tbl.search("reminded water", query_type="fts").limit(10).to_arrow()
        out["full-text query, k=10"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        tbl.delete(f"id = 'floor-{n}'")
        out["delete by id (commit)"].append((time.perf_counter() - start) * 1000)
    return out


if __name__ == "__main__":
    sys.exit(main())
