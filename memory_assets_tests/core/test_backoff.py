"""The retry policies: a doubling policy's waits up to its most, a schedule's waits in turn and
then none, a setting's first wait, and each use's values."""

from itertools import islice

from memory_assets.core.backoff import (
    LANE_REINDEX_RETRY,
    MODEL_REQUEST_RETRY,
    RUN_RETRY,
    UPKEEP_RETRY,
    Backoff,
)


def test_a_doubling_policy_doubles_up_to_its_most() -> None:
    policy = Backoff("test", first_s=30.0, max_s=200.0)
    assert [policy.wait(n) for n in range(5)] == [30.0, 60.0, 120.0, 200.0, 200.0]
    assert list(islice(policy.retries(), 4)) == [30.0, 60.0, 120.0, 200.0]
    assert [policy.starting_at(10.0).wait(n) for n in range(3)] == [10.0, 20.0, 40.0]


def test_a_schedule_gives_its_waits_in_turn_then_no_more() -> None:
    assert list(LANE_REINDEX_RETRY.retries()) == [5.0, 30.0, 120.0]
    assert LANE_REINDEX_RETRY.wait(7) == 120.0


def test_each_use_keeps_its_values() -> None:
    assert (RUN_RETRY.first_s, RUN_RETRY.max_s) == (30.0, 3600.0)
    assert (UPKEEP_RETRY.first_s, UPKEEP_RETRY.max_s) == (60.0, 3600.0)
    assert RUN_RETRY.wait(20) == UPKEEP_RETRY.wait(20) == 3600.0
    assert [MODEL_REQUEST_RETRY.wait(n) for n in range(4)] == [0.5, 1.0, 2.0, 4.0]
