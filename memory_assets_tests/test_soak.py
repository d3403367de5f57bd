"""The soak (``memory_assets_tests/soak.py``): writers on today and past days, transcript ingestion,
the dream, the reconcile and forget, all at once on one home with random SIGKILLs;
``facts_accounted_for`` is the oracle. Nothing acknowledged may be lost, no fact line stranded,
no mention counted twice, and the dream and a person must have done real work. The suite runs 8
rounds (a round costs its processes' start, the model's among them); the 20-round run the issue
asks for is ``python -m memory_assets_tests.soak --rounds 20``, whose figures docs/benchmarks.md
quotes."""

from pathlib import Path

import pytest

from memory_assets_tests.soak import soak


@pytest.mark.slow
def test_rounds_of_every_writer_with_random_sigkills_lose_strand_and_double_count_nothing(
    tmp_path: Path,
) -> None:
    lines: list[str] = []
    totals = soak(tmp_path / "home", rounds=8, seconds=4.0, seed=7, out=lines.append)
    print("\n".join(lines))
    assert totals.rounds == 8, lines[-6:]
    assert (totals.lost, totals.stranded, totals.double_counted) == ([], [], []), lines[-6:]
    assert totals.acknowledged > 200 and totals.turns > 100 and totals.kills >= 30
    assert totals.folded > 100 and totals.forgotten > 0  # the dream folded, a person forgot
