"""A deleted user under the homes sensor (``core/ops/delete_user.py``): at the next tick the user's
partition key is deleted and no entry of the cursor names the user (the queue, the homes due
again, the open batch); a batch requested before the deletion runs after it, skips the user,
records nothing at the root and registers the key again nowhere; a deletion cut short is warned
of without naming the user, and its user is never looked at until it is finished."""

import json
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from memory_assets.core.ops.delete_user import delete_user
from memory_assets.core.ops.users import user_home
from memory_assets_tests.defs.homes.test_homes import location, members, root, run, seed, tick

__all__ = ["root"]  # the fixture, shared with test_homes

ALICE = (date(2026, 11, 10), "Alice keeps bees on the roof of her flat")
BOB = (date(2026, 11, 11), "Bob plays the cello every Sunday morning")


def cursor_names(cursor: str, user: str) -> list[str]:
    """The parts of the sensor's cursor that name ``user``."""
    data = json.loads(cursor)
    found = [part for part in ("queue", "due") if user in data[part]]
    if user in data["batches"]["open"]:
        found.append("open batch")
    return found


@pytest.mark.slow
def test_a_deleted_users_partition_and_cursor_entries_go_at_the_next_tick(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_UPKEEP_WAIT_S", "3600")  # the batch stays open across the ticks
    seed(root, "alice", *ALICE)
    seed(root, "bob", *BOB)
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        assert sorted(instance.get_dynamic_partitions("users")) == ["alice", "bob"]
        assert cursor_names(first.cursor, "alice") == ["open batch"] and not first.run_requests
        assert (root / "state" / "homes_sensor" / "alice.json").exists()

        delete_user(root, "alice", holder="test")

        second = tick(loc, instance, first.cursor)
        assert instance.get_dynamic_partitions("users") == ["bob"]
        assert cursor_names(second.cursor, "alice") == []
        assert cursor_names(second.cursor, "bob") == ["open batch"]
        assert not (root / "state" / "homes_sensor" / "alice.json").exists()  # not looked at again
        third = tick(loc, instance, second.cursor)  # the listing is not repeated; nothing comes back
        assert instance.get_dynamic_partitions("users") == ["bob"] and not third.dynamic_partitions_requests


@pytest.mark.slow
def test_a_batch_planned_before_the_deletion_skips_the_user_and_brings_nothing_back(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(root, "alice", *ALICE)
    seed(root, "bob", *BOB)
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        [request] = first.run_requests
        assert sorted(members(first)) == ["alice", "bob"]
        delete_user(root, "alice", holder="test")
        tick(loc, instance, first.cursor)  # the key goes
        done = run(loc, instance, request)  # the batch, launched before, runs after
        assert done.success  # a user who went is skipped, not a failure
        assert instance.get_dynamic_partitions("users") == ["bob"]
        assert not (root / "state" / "upkeep" / "alice.json").exists()
        assert (root / "state" / "upkeep" / "bob.json").exists()
        assert not user_home(root, "alice").exists()
        assert instance.get_materialized_partitions(dg.AssetKey("archive_index")) == {"bob"}


@pytest.mark.slow
def test_a_deletion_cut_short_is_warned_of_and_its_user_never_looked_at(
    root: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    seed(root, "alice", *ALICE)
    seed(root, "bob", *BOB)
    journal = root / "users" / ".deleting+alice.json"
    # A deletion killed after its first step: the journal written, the home still there.
    journal.write_text('{"receipt": "r", "started_at": "t", "plan": {"home": "h"}}')
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        assert sorted(members(first)) == ["bob"]
        assert not (root / "state" / "homes_sensor" / "alice.json").exists()
    warned = [line for line in capfd.readouterr().err.splitlines() if "cut short" in line]
    assert warned and all("alice" not in line for line in warned)  # Dagster's logs are kept: no id
