"""Ranking variants asked of the homes bench_e2e.py built: can one meet both dev sets' targets?

    .venv/bin/python benchmarks/bench_ranking_variants.py --e2e-root /work/e2e-clean \\
        --locomo PATH/locomo10.json --grid grid.json

Issue 25's LongMemEval target (the raw-turn cosine anchor + 10 points) is all 40 dev questions.
This asks the ``now`` homes that ``bench_e2e.py --root DIR`` built through the service, in
process (``bench_turn_unit.ask``: limit 10, the question's ``today``, a hit as bench_e2e scores
it), once with the shipped ranking and then once for each point of a grid. Each point holds
``Ranking`` fields (``turn_bm25``, ``turn``, ``importance``, ...) and two scoring rules that are
NOT in the product. They are applied here for the measurement only, by wrapping the scorer:

* ``tau`` (0: off): the priors count only as far as the row matches the question on meaning. A
  row's importance term, and its recency term on a current-state question when ``gate_recency``
  is set, is scaled by ``min(1, cosine / tau)``.
* ``alpha`` (0: off): the BM25 fraction is taken over ``max(the best candidate's score, alpha x
  the sum of the query terms' idf)``, an ideal match, so loose words earn little when the
  question's own words are in no candidate.

Each point is asked on the LongMemEval dev sample first, and on LoCoMo's dev split only when it
finds all 40. Stdout gets one line per point and a summary: how many points find all 40, and the
LoCoMo range among them.
"""

# ruff: noqa: I001  (_common must be imported first: it sets LANCEDB_LOG / HF_HUB_OFFLINE)
import _common  # noqa: F401

import argparse
import contextlib
import dataclasses
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bench_e2e as e2e
import bench_locomo
from bench_turn_unit import ask

RULES = ("tau", "gate_recency", "alpha")  # a point's keys that are not Ranking fields


@contextlib.contextmanager
def rules(tau: float, gate_recency: bool, alpha: float) -> Iterator[None]:
    """The two scoring rules above, in force inside the block (the shipped ones outside it)."""
    from memory_assets.core.search.lexical import Lexical
    from memory_assets.core.search.ranking import Scorer

    fraction, score = Lexical.fraction, Scorer.score

    def ideal_fraction(self: Lexical, value: float) -> float:
        den = max(self.best, alpha * sum(self.idf.values()))
        return min(value / den, 1.0) if den > 0 else 0.0

    def gated_score(self: Scorer, kept: Any, lexical: Any) -> Any:
        out = score(self, kept, lexical)
        for s in out:
            short = 1.0 - min(1.0, max(0.0, s.semantic / tau))
            s.score -= self.ranking.importance * s.importance * short
            if gate_recency and self.current:
                s.score -= self.ranking.recency * s.recency * short
        return out

    try:
        if alpha:
            Lexical.fraction = ideal_fraction  # type: ignore[method-assign]
        if tau:
            Scorer.score = gated_score  # type: ignore[method-assign]
        yield
    finally:
        Lexical.fraction, Scorer.score = fraction, score  # type: ignore[method-assign]


def recall(hits: dict[str, list[bool]]) -> float:
    every = [x for per in hits.values() for x in per]
    return 100 * sum(every) / len(every)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--e2e-root", type=Path, required=True, help="a bench_e2e.py --root with its now side built"
    )
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo's data/locomo10.json")
    parser.add_argument("--longmemeval", type=Path, default=e2e.LONGMEMEVAL_DEFAULT)
    parser.add_argument("--grid", type=Path, required=True, help="a JSON list of points (see the docstring)")
    args = parser.parse_args()
    from memory_assets.core.search.ranking import RANKING

    homes, records = args.e2e_root / "now", args.e2e_root / "records" / "now"
    if not (homes / "users").is_dir() or not records.is_dir():
        raise SystemExit(
            f"{args.e2e_root}: no built now side (run bench_e2e.py --root {args.e2e_root} first)"
        )
    lme = e2e.longmemeval_set(args.longmemeval)
    locomo = e2e.locomo_set(args.locomo, bench_locomo.DEV_SPLIT)
    points = json.loads(args.grid.read_text(encoding="utf-8"))
    print(f"shipped ranking: LongMemEval {recall(ask(homes, records, lme)):.1f}, "
          f"LoCoMo {recall(ask(homes, records, locomo)):.1f}", flush=True)  # fmt: skip
    all_40: list[float] = []
    for point in points:
        ranking = dataclasses.replace(RANKING, **{k: v for k, v in point.items() if k not in RULES})
        with rules(float(point.get("tau", 0)), bool(point.get("gate_recency")), float(point.get("alpha", 0))):
            at_lme = recall(ask(homes, records, lme, ranking))
            line = f"{json.dumps(point)} LongMemEval {at_lme:.1f}"
            if at_lme >= 100.0:
                at_locomo = recall(ask(homes, records, locomo, ranking))
                all_40.append(at_locomo)
                line += f" LoCoMo {at_locomo:.1f}"
        print(line, flush=True)
    span = f", LoCoMo {min(all_40):.1f}-{max(all_40):.1f} among them" if all_40 else ""
    print(f"\n{len(points)} points; {len(all_40)} find all {len(lme.questions)} LongMemEval questions{span}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
