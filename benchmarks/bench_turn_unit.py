"""The recall tier's unit, measured: the message alone against the message with words of the answer.

    .venv/bin/python benchmarks/bench_turn_unit.py --e2e-root /work/e2e-root --locomo PATH/locomo10.json
    .venv/bin/python benchmarks/bench_turn_unit.py --e2e-root /work/e2e-root --locomo PATH --context-words 60,120
    .venv/bin/python benchmarks/bench_turn_unit.py ... --work /work/unit --reuse      # ask the copies again

A transcript row embeds one user message (``TURN_CONTEXT_WORDS`` = 0, design §4.11), or that
message with the first N words of the assistant's answer after it (the row's text stays the
message). Which unit finds more is measured on the homes ``bench_e2e.py`` built through the real
service (``--e2e-root``: its ``now`` side and its records; both dev sets): for each unit, a copy of
those homes has every transcript's rows written again by the project's ``Indexer`` with that
setting (the same code the service runs after a turn's acknowledgement; a row's id covers its
embedded text, so every row is replaced when N > 0), is optimized, and then every dev question is
asked in process with ``search()`` (limit 10, the question's ``today``), scored as
``bench_e2e.py`` scores a hit. N = 0 is the control: the same copy, optimize and asking, with
the rows as the service wrote them. The facts are the same in every copy.

Rewriting a copy re-embeds every message (about 22,000 on the two sets: half an hour on the
2-core machine); ``--reuse`` asks copies already written under ``--work`` again. The copies hold
LoCoMo's text (CC BY-NC 4.0): keep ``--work`` outside the repository.

Figures to stdout (recall @10 at the turn level, per set and question type), progress to stderr.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import functools
import shutil
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import bench_e2e as e2e
import bench_locomo
from _common import log, table


def rewrite(copy: Path, context_words: int) -> None:
    """Every transcript of every home under ``copy`` indexed again with ``context_words``."""
    import memory_assets.core.index.rows as rows
    from memory_assets.core.home import Home
    from memory_assets.core.index.indexer import Indexer
    from memory_assets.core.ops.users import list_users, user_settings
    from memory_assets.core.sources import IndexKey

    rows.TURN_CONTEXT_WORDS = context_words  # plan_transcript's default, read at each call
    start = time.perf_counter()
    users = list_users(copy)
    for n, user in enumerate(users, 1):
        settings = user_settings(copy, user)
        home = Home(settings)
        indexer = Indexer(settings, home.store, home.write_path_embedder())
        rels = sorted(
            p.relative_to(settings.transcripts_dir).as_posix()
            for p in settings.transcripts_dir.rglob("*.jsonl")
        )
        keys = [str(IndexKey.for_transcript(rel)) for rel in rels]
        for at in range(0, len(keys), 200):
            indexer.reindex_keys(keys[at : at + 200])
        indexer.optimize()
        log(
            f"  N={context_words}: {n}/{len(users)} {user}, {len(keys)} transcripts ({time.perf_counter() - start:.0f} s)"
        )


@functools.lru_cache(maxsize=4096)
def _query_vector(text: str) -> Any:
    from memory_assets.core.models.embedder import shared_embedder

    return shared_embedder().embed_query(text)


def ask(copy: Path, records: Path, dev: e2e.DevSet, ranking: Any = None) -> dict[str, list[bool]]:
    """Per question type, whether each question was hit at 10 (turn level). ``ranking``: the
    ``Ranking`` to search with (None: the shipped one)."""
    from memory_assets.core.home import Home
    from memory_assets.core.ops.users import user_settings
    from memory_assets.core.search.ranking import RANKING
    from memory_assets.core.search.filters import SearchFilters
    from memory_assets.core.search.retrieval import search

    recs = {u: e2e.read_record(records / f"{u}.jsonl") for u in dev.homes}
    maps = e2e.Maps(dev.chat_turn(), {u: r.written for u, r in recs.items()})
    homes = {}
    for user in dev.homes:
        settings = user_settings(copy, user)
        homes[user] = (settings, Home(settings).store)
    hits: dict[str, list[bool]] = {}
    for q in dev.questions:
        vector = _query_vector(q.text)
        found: list[tuple[str, dict]] = []
        for user in q.homes:
            settings, store = homes[user]
            found += [
                (user, h.to_dict())
                for h in search(
                    store, q.text, SearchFilters(limit=10, today=date.fromisoformat(q.today)),
                    query_vector=vector, settings=settings, log_recall=False, ranking=ranking or RANKING,
                )
            ]  # fmt: skip
        found.sort(key=lambda r: -float(r[1].get("score", 0.0)))  # two homes: merged by score
        rank, _ = e2e.first_hit(found[:10], maps, q.evidence["turn"])
        hits.setdefault(q.kind, []).append(rank is not None)
    return hits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--e2e-root", type=Path, required=True, help="a bench_e2e.py --root with its now side built"
    )
    parser.add_argument("--locomo", type=Path, help="LoCoMo's data/locomo10.json (else LongMemEval only)")
    parser.add_argument("--longmemeval", type=Path, default=e2e.LONGMEMEVAL_DEFAULT)
    parser.add_argument("--context-words", default="60", help="the units against the message alone (60)")
    parser.add_argument("--work", type=Path, help="where the copies go (default: a temporary directory)")
    parser.add_argument("--reuse", action="store_true", help="ask the copies already under --work")
    args = parser.parse_args()
    if args.reuse and not args.work:
        parser.error("--reuse needs --work")
    source = args.e2e_root / "now"
    records = args.e2e_root / "records" / "now"
    if not (source / "users").is_dir() or not records.is_dir():
        raise SystemExit(
            f"{args.e2e_root}: no built now side (run bench_e2e.py --root {args.e2e_root} first)"
        )
    units = [0, *(int(n) for n in args.context_words.split(",") if int(n) > 0)]
    sets = [e2e.longmemeval_set(args.longmemeval)]
    if args.locomo:
        sets.insert(0, e2e.locomo_set(args.locomo, bench_locomo.DEV_SPLIT))
    work = args.work or Path(__import__("tempfile").mkdtemp(prefix="bench-turn-unit-"))
    results: dict[int, dict[str, dict[str, list[bool]]]] = {}
    try:
        for n in units:
            copy = work / f"unit-{n}" / "now"
            if not args.reuse:
                shutil.rmtree(copy.parent, ignore_errors=True)
                log(f"copying {source} for N={n}")
                shutil.copytree(source, copy, symlinks=True)
                rewrite(copy, n)
            results[n] = {dev.name: ask(copy, records, dev) for dev in sets}
            log(f"N={n} asked")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    for dev in sets:
        kinds = list(dev.kinds)
        rows = []
        for n in units:
            per = results[n][dev.name]
            every = [x for k in kinds for x in per.get(k, [])]
            label = "the message alone (control)" if n == 0 else f"the message and {n} words of the answer"
            rows.append(
                [
                    label,
                    *(f"{100 * sum(per[k]) / len(per[k]):.1f}" for k in kinds if per.get(k)),
                    f"{100 * sum(every) / len(every):.1f}",
                ]
            )
        print(f"\n{dev.name}: turn level recall @10 ({len(dev.questions)} questions)")
        print(table(rows, ["unit", *(k for k in kinds if results[0][dev.name].get(k)), "all"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
