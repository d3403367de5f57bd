"""Merge the shards of a LongMemEval run into the whole set's tables.

Usage::

    .venv/bin/python benchmarks/lme_shards.py SHARD.json [SHARD.json ...] [--set longmemeval-s] \
        [--expect N] [--json OUT]

Each ``SHARD.json`` is what ``bench_e2e.py --shard I/N --json PATH`` wrote: one home a question,
so a question's result does not depend on which other questions ran beside it, and the shards'
per-question results (``sets.<set>.per_question.<side>.<qid>``) add up to the whole set's. This
script refuses a question that two shards hold, names the shards (``I/N``) that are missing when
their ``N`` says how many there are, and prints, for each side and level (turn, session): recall@1/5/10
and NDCG@10 over all questions, over all but the abstention questions, and per question type
(@10), each with how many questions it counts. It prints the commit and the command of each
shard: shards run on different commits are flagged, never silently mixed. Last, what the run cost:
the turns posted, the posting's and the asking's wall time summed over the shards (shards run one
after another, each on the whole machine), the index per 1,000 turns over every home, and each
shard's search p50 through the service (a percentile does not merge, so their range is given).

The figures are computed as ``bench_e2e.py`` computes them (``rate``, ``ndcg``): a hit at k is a
rank at most k; a question without NDCG at a level counts 0 there.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from _common import table

KS = (1, 5, 10)
ABSTENTION = "abstention"
LEVELS = ("turn", "session")


def load(paths: list[Path], name: str) -> tuple[dict[str, dict[str, dict[str, Any]]], list[dict[str, Any]]]:
    """{side: {qid: result}} over every shard, and each shard's header; a question in two shards,
    or a shard without the set, is an error naming the files."""
    merged: dict[str, dict[str, dict[str, Any]]] = {}
    where: dict[str, Path] = {}
    heads = []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        got = data.get("sets", {}).get(name)
        if got is None or "per_question" not in got:
            raise SystemExit(f"{path}: no per-question results for {name} (run bench_e2e.py with --json)")
        heads.append(
            {
                "file": str(path),
                "shard": data.get("shard"),
                "commit": data.get("commit"),
                "uncommitted": data.get("uncommitted") or [],
                "build": data.get("build"),
                "command": data.get("command"),
                "questions": got.get("questions"),
                "wall_seconds": data.get("wall_seconds"),
                "seconds": got.get("seconds", {}),
                "index": got.get("index", {}),
                "cost": data.get("cost", {}).get(name, {}),
            }
        )
        for side, per in got["per_question"].items():
            for qid, result in per.items():
                key = f"{side}/{qid}"
                if key in where:
                    raise SystemExit(f"question {qid} ({side}) is in both {where[key]} and {path}")
                where[key] = path
                merged.setdefault(side, {})[qid] = result
    return merged, heads


def missing_shards(heads: list[dict[str, Any]]) -> list[str]:
    """The shards ``I/N`` not given, when every shard names the same ``N``."""
    shards = [h["shard"] for h in heads if h["shard"]]
    counts = {s.partition("/")[2] for s in shards}
    if len(shards) != len(heads) or len(counts) != 1:
        return []
    n = int(counts.pop())
    have = {int(s.partition("/")[0]) for s in shards}
    return [f"{i}/{n}" for i in range(1, n + 1) if i not in have]


def asked(per: dict[str, dict[str, Any]], level: str, kind: str | None) -> list[dict[str, Any]]:
    """The results measured at ``level`` (of ``kind``; "all but abstention"; None: all)."""
    out = [r for r in per.values() if level in r]
    if kind == "all but abstention":
        return [r for r in out if r["kind"] != ABSTENTION]
    return out if kind is None else [r for r in out if r["kind"] == kind]


def rate(rows: list[dict[str, Any]], level: str, k: int) -> float:
    if not rows:
        return float("nan")
    return 100.0 * sum(1 for r in rows if (rank := r[level]["rank"]) is not None and rank <= k) / len(rows)


def ndcg(rows: list[dict[str, Any]], level: str) -> float:
    if not rows:
        return float("nan")
    return sum(r[level]["ndcg"] or 0.0 for r in rows) / len(rows)


def fmt(x: float, digits: int = 1) -> str:
    return "-" if x != x else f"{x:.{digits}f}"


def figures(merged: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    kinds = sorted({r["kind"] for per in merged.values() for r in per.values()} - {ABSTENTION})
    rows_of = [
        *kinds,
        *(
            [ABSTENTION]
            if any(r["kind"] == ABSTENTION for per in merged.values() for r in per.values())
            else []
        ),
        "all but abstention",
        None,
    ]
    out: dict[str, Any] = {}
    for side, per in merged.items():
        for level in LEVELS:
            for kind in rows_of:
                rows = asked(per, level, kind)
                out.setdefault(side, {}).setdefault(level, {})[kind or "all"] = {
                    "questions": len(rows),
                    **{f"@{k}": rate(rows, level, k) for k in KS},
                    "ndcg@10": ndcg(rows, level),
                }
    return out


def cost(heads: list[dict[str, Any]], side: str = "now") -> dict[str, Any]:
    """What the shards cost together, for the memory's side (posted through the service)."""
    turns = sum(h["index"].get(side, {}).get("turns", 0) for h in heads)
    posting = sum(h["seconds"].get(side, {}).get("posting_wall", 0.0) for h in heads)
    asking = sum(h["seconds"].get(side, {}).get("asking", 0.0) for h in heads)
    index_bytes = sum(h["index"].get(side, {}).get("index_bytes", 0) for h in heads)
    p50s = [h["cost"]["http_search_ms_p50"] for h in heads if "http_search_ms_p50" in h["cost"]]
    return {
        "turns": turns,
        "homes": sum(h["questions"] or 0 for h in heads),
        "wall_s": sum(h["wall_seconds"] or 0.0 for h in heads),
        "posting_wall_s": posting,
        "turns_per_s": turns / posting if posting else float("nan"),
        "asking_s": asking,
        "index_mb_per_1000_turns": index_bytes / 1e6 / turns * 1000 if turns else float("nan"),
        "search_p50_ms": [min(p50s), max(p50s)] if p50s else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("shards", nargs="+", type=Path, help="the shards' --json files")
    parser.add_argument("--set", default="longmemeval-s", help="the set (longmemeval-s)")
    parser.add_argument("--expect", type=int, help="fail unless the shards hold this many questions")
    parser.add_argument("--json", type=Path, help="also write the merged figures here")
    args = parser.parse_args()
    merged, heads = load(args.shards, args.set)
    commits = Counter(h["commit"] for h in heads)
    print(f"# {args.set}, merged from {len(heads)} shard(s)\n")
    for h in heads:
        dirty = f" with uncommitted changes to {', '.join(h['uncommitted'])}" if h["uncommitted"] else ""
        wall = f"{h['wall_seconds'] / 60:.0f} min" if h["wall_seconds"] else "?"
        print(
            f"- shard {h['shard']}: {h['questions']} questions, commit {h['commit']}{dirty}, build {h['build']}, {wall}"
        )
        print(f"  {h['command']}")
    if len(commits) > 1:
        print(
            f"\nNOTE: the shards ran on {len(commits)} commits (above); their figures are merged as they are"
        )
    gone = missing_shards(heads)
    counts = {side: len(per) for side, per in merged.items()}
    print(f"\nquestions per side: {', '.join(f'{s} {n}' for s, n in counts.items())}")
    if gone:
        print(f"shards missing: {', '.join(gone)}: these figures are NOT the whole set's")
    if args.expect is not None and any(n != args.expect for n in counts.values()):
        print(f"error: expected {args.expect} questions a side", file=sys.stderr)
        return 1
    figs = figures(merged)
    for level in LEVELS:
        print(
            f"\n## {level} level (a hit at k: one of the first k rows is, or was written from, "
            + ("an evidence turn)" if level == "turn" else "a turn of an evidence session)")
            + "\n"
        )
        rows = []
        for side in figs:
            for kind in ("all", "all but abstention"):
                f = figs[side][level][kind]
                rows.append(
                    [side, kind, f["questions"], *(fmt(f[f"@{k}"]) for k in KS), fmt(f["ndcg@10"], 3)]
                )
        print(table(rows, ["side", "questions", "how many", *(f"@{k}" for k in KS), "NDCG@10"]))
        print()
        kinds = [k for k in next(iter(figs.values()))[level] if k not in ("all", "all but abstention")]
        rows = []
        for kind in kinds:
            rows.append(
                [kind, next(iter(figs.values()))[level][kind]["questions"]]
                + [f"{fmt(figs[s][level][kind]['@5'])} / {fmt(figs[s][level][kind]['@10'])}" for s in figs]
            )
        print(table(rows, ["type", "n", *(f"{s} @5 / @10" for s in figs)]))
    spent = cost(heads)
    p50 = spent["search_p50_ms"]
    print(
        f"\n## what it cost (the memory's side, summed over the shards)\n\n"
        f"{spent['turns']:,} turns posted into {spent['homes']} homes in {spent['posting_wall_s'] / 60:.0f} min of "
        f"posting ({spent['turns_per_s']:.1f} turns/s), questions asked in {spent['asking_s']:.0f} s; "
        f"the shards' wall time {spent['wall_s'] / 60:.0f} min in all (cosine's embedding included); "
        f"index {fmt(spent['index_mb_per_1000_turns'], 2)} MB per 1,000 turns; "
        + (
            f"search p50 through the service {p50[0]:.0f}-{p50[1]:.0f} ms (per shard)"
            if p50
            else "no search p50"
        )
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"set": args.set, "shards": heads, "missing": gone, "figures": figs, "cost": spent}, indent=1
            )
            + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
