"""Benchmark the rule-based extractor (``memory_assets.core.write_path.rule_extractor.RuleExtractor``).

Run from the repository root::

    .venv/bin/python benchmarks/bench_extraction.py [--corpus benchmarks/data/extraction_corpus.jsonl]

It runs the extractor over the shipped corpus (``make_extraction_corpus.py`` writes it: first-person
statements with the facts they should give, and non-statements that should give none) and prints,
for the templated corpus and, separately, for the held-out split (hand-written messages added after
the rules existed and never used to tune them):

- **recall**: the share of statements where *every* expected fact has a produced fact whose content
  contains all of its ``must_contain`` strings (case-insensitive), and the looser share of
  statements that gave at least one fact;
- **false positives**: the share of non-statements that gave any fact;
- **category accuracy**: among expected facts that were matched, the share where a matching fact
  has the expected category;

then the throughput over the whole corpus and the time for one 1 MB message, a breakdown by kind,
and a sample of 15 misses and 10 false positives. Targets (on the templated corpus): recall >= 85 %,
false positives <= 5 %. Exit status 1 when a target is missed.

``--locomo PATH`` (LoCoMo's ``data/locomo10.json``, which you download: see ``bench_locomo.py``)
adds the extractor on real turns: every turn of the dev split's conversations (conv-26, conv-30,
conv-41 to conv-43; never the test split) goes in as what the user said, and the turn's
observations are the facts a good extractor would find. An observation counts as **found** when a
fact extracted from its turn shares at least two content words with it, and those shared words are
at least half of the content words of the shorter of the two (content words: ``lexical.tokens``,
lower case with a crude stem and the stop words left out, the two speakers' names left out too,
since the observation names the speaker where the fact says nothing). **False facts**: the turns with
no observation that give any fact. LoCoMo's annotators wrote observations for a selection of turns
only, so this is an upper bound: many such facts are true ("Just signed with a new team").
Aggregates only are printed (``--locomo-misses`` lists a sample of misses to your terminal; never
commit it: the data is CC BY-NC 4.0).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import table  # noqa: E402

from memory_assets.core.search.lexical import tokens  # noqa: E402
from memory_assets.core.write_path.extraction import ExtractedFact, Turn  # noqa: E402
from memory_assets.core.write_path.rule_extractor import MAX_SCAN_CHARS, RuleExtractor  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "data" / "extraction_corpus.jsonl"
RECALL_TARGET = 0.85
FP_TARGET = 0.05

Row = dict[str, Any]


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def pct(n: int, d: int) -> str:
    return f"{100.0 * n / d:.1f} %" if d else "n/a"


def matches(fact: ExtractedFact, must: list[str]) -> bool:
    low = fact.content.lower()
    return all(m.lower() in low for m in must)


@dataclass
class Score:
    statements: int = 0
    full: int = 0  # statements with every expected fact found
    loose: int = 0  # statements with at least one fact
    expected: int = 0
    found: int = 0
    right_category: int = 0
    others: int = 0
    false_pos: int = 0
    misses: list[tuple[Row, list[ExtractedFact]]] = field(default_factory=list)
    fps: list[tuple[Row, list[ExtractedFact]]] = field(default_factory=list)

    def add(self, row: Row, facts: list[ExtractedFact]) -> bool:
        """Count one message; True when it went right."""
        if not row["expected"]:
            self.others += 1
            if facts:
                self.false_pos += 1
                self.fps.append((row, facts))
            return not facts
        self.statements += 1
        self.loose += bool(facts)
        all_found = True
        for exp in row["expected"]:
            self.expected += 1
            hits = [f for f in facts if matches(f, exp["must_contain"])]
            if hits:
                self.found += 1
                self.right_category += any(f.category == exp["category"] for f in hits)
            else:
                all_found = False
        self.full += all_found
        if not all_found:
            self.misses.append((row, facts))
        return all_found


def load(path: Path) -> list[Row]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def describe(row: Row, facts: list[ExtractedFact], with_expected: bool) -> list[str]:
    split = "held-out" if row.get("split") == "heldout" else row.get("kind", "?")
    lines = [f"- [{split}] {row['user']!r}"]
    if with_expected:
        wanted = "; ".join(f"[{e['category']}] " + " + ".join(e["must_contain"]) for e in row["expected"])
        lines.append(f"  expected: {wanted}")
    lines.append(f"  produced: {'; '.join(f'[{f.category}] {f.content}' for f in facts) or '(nothing)'}")
    return lines


@dataclass
class RealScore:
    observations: int = 0
    found: int = 0
    turns_with: int = 0  # turns with at least one observation
    turns_with_fact: int = 0
    turns_without: int = 0
    false_turns: int = 0  # turns without an observation that gave a fact
    facts: int = 0
    misses: list[tuple[str, str, list[str]]] = field(default_factory=list)


def content_words(text: str, names: frozenset[str]) -> set[str]:
    return {w for w in tokens(text) if w not in names}


def covers(fact: str, observation: str, names: frozenset[str]) -> bool:
    """The fact states the observation: two content words shared at least, and at least half of the
    shorter text's content words (the overlap coefficient >= 0.5)."""
    a, b = content_words(fact, names), content_words(observation, names)
    shared = len(a & b)
    return shared >= 2 and shared >= 0.5 * min(len(a), len(b))


def real_turns(path: Path, extractor: RuleExtractor) -> RealScore:
    """The extractor on the dev split's real turns (see the module docstring)."""
    import bench_locomo

    score = RealScore()
    for conversation in bench_locomo.load(path, bench_locomo.DEV_SPLIT):
        names = frozenset(t for speaker in conversation.speakers for t in tokens(speaker))
        observed: dict[str, list[str]] = {}
        for session in conversation.sessions:
            for turn, text in session.observations:
                observed.setdefault(turn, []).append(text)
        for turn, text in conversation.turns.items():
            facts = [f.content for f in extractor.extract(Turn(user=text)).facts]
            score.facts += len(facts)
            wanted = observed.get(turn, [])
            if not wanted:
                score.turns_without += 1
                score.false_turns += bool(facts)
                continue
            score.turns_with += 1
            score.turns_with_fact += bool(facts)
            for observation in wanted:
                score.observations += 1
                if any(covers(f, observation, names) for f in facts):
                    score.found += 1
                else:
                    score.misses.append((text, observation, facts))
    return score


def print_real(score: RealScore, show_misses: bool) -> None:
    print(
        "\nreal turns: LoCoMo's dev split, each turn as the user's message, its observations as the facts to find\n"
    )
    print(
        table(
            [
                [
                    "observations found (a fact from their turn covers them)",
                    f"{score.found:,} / {score.observations:,} = {pct(score.found, score.observations)}",
                ],
                [
                    "turns with an observation giving any fact",
                    f"{score.turns_with_fact:,} / {score.turns_with:,} = {pct(score.turns_with_fact, score.turns_with)}",
                ],
                [
                    "turns without an observation giving any fact (upper bound on false facts)",
                    f"{score.false_turns:,} / {score.turns_without:,} = {pct(score.false_turns, score.turns_without)}",
                ],
                ["facts extracted over all turns", f"{score.facts:,}"],
            ],
            ["measure", "value"],
        )
    )
    if show_misses:
        print("\nsample of misses (do not commit: LoCoMo is CC BY-NC 4.0)\n")
        for text, observation, facts in random.Random(0).sample(score.misses, min(30, len(score.misses))):
            print(
                f"- turn: {text!r}\n  observation: {observation}\n  produced: {'; '.join(facts) or '(nothing)'}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument(
        "--repeat", type=int, default=5, help="passes over the corpus for the throughput figure"
    )
    parser.add_argument(
        "--locomo", type=Path, help="LoCoMo's data/locomo10.json: also measure on its dev split's real turns"
    )
    parser.add_argument(
        "--locomo-misses", action="store_true", help="with --locomo, print a sample of misses"
    )
    args = parser.parse_args()

    rows = load(args.corpus)
    extractor = RuleExtractor()
    turns = [Turn(user=r["user"], assistant=r.get("assistant", "")) for r in rows]
    results = [extractor.extract(t).facts for t in turns]

    main_score, held_score = Score(), Score()
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # kind -> [right, total]
    for row, facts in zip(rows, results, strict=True):
        score = held_score if row.get("split") == "heldout" else main_score
        ok = score.add(row, facts)
        by_kind[row.get("kind", "?")][0] += ok
        by_kind[row.get("kind", "?")][1] += 1

    start = time.perf_counter()
    for _ in range(args.repeat):
        for t in turns:
            extractor.extract(t)
    elapsed = time.perf_counter() - start
    big = Turn(user=("I live in Lisbon and I like long walks. " * 30_000)[: 1 << 20])
    start = time.perf_counter()
    big_facts = extractor.extract(big).facts
    big_ms = (time.perf_counter() - start) * 1000.0

    m, h = main_score, held_score
    recall = m.full / m.statements if m.statements else 0.0
    fp_rate = m.false_pos / m.others if m.others else 1.0
    print("# memory-assets extraction benchmark (rule-based extractor)\n")
    print(
        f"command : .venv/bin/python benchmarks/bench_extraction.py --repeat {args.repeat}"
        + (f" --locomo {args.locomo}" if args.locomo else "")
    )
    print(
        f"started : {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC; 2 cores shared, 1-min load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"corpus  : {args.corpus.name}: {len(rows):,} messages. Templated: {m.statements:,} statements "
        f"({m.expected:,} expected facts), {m.others:,} non-statements. Held-out (hand-written after the "
        f"rules, never tuned against): {h.statements:,} statements ({h.expected:,} facts), {h.others:,} "
        "non-statements.\n"
    )

    def cell(n: int, d: int) -> str:
        return f"{n:,} / {d:,} = {pct(n, d)}"

    print(
        table(
            [
                [
                    "recall: statements with every expected fact found",
                    cell(m.full, m.statements),
                    cell(h.full, h.statements),
                    f">= {RECALL_TARGET:.0%}: {verdict(recall >= RECALL_TARGET)}",
                ],
                [
                    "  expected facts found (per fact)",
                    cell(m.found, m.expected),
                    cell(h.found, h.expected),
                    "",
                ],
                [
                    "  statements giving at least one fact (loose)",
                    cell(m.loose, m.statements),
                    cell(h.loose, h.statements),
                    "",
                ],
                [
                    "false positives: non-statements giving any fact",
                    cell(m.false_pos, m.others),
                    cell(h.false_pos, h.others),
                    f"<= {FP_TARGET:.0%}: {verdict(fp_rate <= FP_TARGET)}",
                ],
                [
                    "category accuracy (matched expected facts)",
                    cell(m.right_category, m.found),
                    cell(h.right_category, h.found),
                    "",
                ],
            ],
            ["measure", "templated corpus", "held-out", "target (templated)"],
        )
    )
    print()
    print(
        table(
            [
                [
                    f"throughput, {args.repeat} passes over all {len(turns):,} messages",
                    f"{args.repeat * len(turns) / elapsed:,.0f} messages/s ({elapsed:.2f} s)",
                ],
                [
                    f"one 1 MB message (only the first {MAX_SCAN_CHARS:,} characters are scanned)",
                    f"{big_ms:.1f} ms, {len(big_facts)} facts",
                ],
            ],
            ["speed", "value"],
        )
    )
    print("\nby kind (statements: every expected fact found; non-statements: no fact produced)\n")
    non_kinds = {
        "smalltalk",
        "question",
        "instruction",
        "thirdparty",
        "hypothetical",
        "assistant",
        "heldout-non",
    }
    print(
        table(
            [
                [kind, "non-statement" if kind in non_kinds else "statement", f"{ok} / {n}", pct(ok, n)]
                for kind, (ok, n) in sorted(
                    by_kind.items(), key=lambda kv: (kv[0].startswith("heldout"), kv[0] in non_kinds, kv[0])
                )
            ],
            ["kind", "type", "right", "rate"],
        )
    )
    if args.locomo:
        print_real(real_turns(args.locomo, extractor), args.locomo_misses)
    rng = random.Random(0)
    order = {id(r): i for i, r in enumerate(rows)}
    misses = m.misses + h.misses
    fps = m.fps + h.fps
    sample = sorted(rng.sample(misses, min(15, len(misses))), key=lambda rf: order[id(rf[0])])
    print(
        f"\nsample of misses ({len(sample)} of {len(misses)}: {len(m.misses)} templated, {len(h.misses)} held-out)\n"
    )
    for row, facts in sample:
        print("\n".join(describe(row, facts, with_expected=True)))
    sample = sorted(rng.sample(fps, min(10, len(fps))), key=lambda rf: order[id(rf[0])])
    print(
        f"\nsample of false positives ({len(sample)} of {len(fps)}: {len(m.fps)} templated, {len(h.fps)} held-out)\n"
    )
    for row, facts in sample:
        print("\n".join(describe(row, facts, with_expected=False)))
    return 0 if recall >= RECALL_TARGET and fp_rate <= FP_TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
