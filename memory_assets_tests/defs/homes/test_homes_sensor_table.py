"""The homes sensor keeps each home's table id in the home's cursor, keyed by the table
directory (``core/index/table_directory.py``): a look at a home opens no table while its table is
the same, and a table rebuilt or replaced behind the index state is still noticed and reindexed.
Real homes indexed with the real model, a real instance, the batches requested run as the daemon
runs them; tables opened are counted by a wrapper around the real ``MemoryStore.table``."""

import shutil
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from memory_assets.core.home import Home
from memory_assets.core.index import freshness, table_damage
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.index.table_directory import directory_key
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.root_feed import load_home_state, note_change
from memory_assets.core.ops.users import open_user_home
from memory_assets.core.settings import Settings
from memory_assets_tests.defs.homes.test_homes import location, members, run, seed, tick

DAY = date(2026, 11, 20)
FACTS = {"alice": "Alice keeps bees on the roof of her flat", "bob": "Bob plays the cello every Sunday"}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> Path:
    """Two homes, each with one day indexed."""
    for name in ("MEMORY_HOME", "MEMORY_INDEX_URI", "MEMORY_INDEX_URI_TEMPLATE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORY_DREAM_MIN_FACTS", "1000000")  # the dream's gates shut: index runs only
    monkeypatch.setenv("MEMORY_HOMES_SWEEP_PER_TICK", "1")
    monkeypatch.setenv("MEMORY_UPKEEP_WAIT_S", "0")  # a tick's open batch is requested at its end
    root = tmp_path / "root"
    for user, fact in FACTS.items():
        seed(root, user, DAY, fact)
        open_user_home(root, user, embedder=embedder).indexer.sweep()
    return root


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The index URI of every table opening (the real ``MemoryStore.table`` underneath)."""
    calls: list[str] = []
    real = MemoryStore.table

    def table(self: MemoryStore) -> Any:
        calls.append(self.uri)
        return real(self)

    monkeypatch.setattr(MemoryStore, "table", table)
    yield calls


def reindex_users(result: dg.SensorResult) -> list[str]:
    """The users whose batch member names a day to reindex."""
    return sorted(u for u, m in members(result).items() if any(k.startswith("archive:") for k in m["keys"]))


def batch_of(result: dg.SensorResult, user: str) -> dg.RunRequest:
    """The tick's batch request holding ``user``."""
    [request] = [
        r
        for r in result.run_requests
        if user in {m["user"] for m in r.run_config["ops"]["upkeep_users"]["config"]["members"]}
    ]
    return request


def alice_uri(root: Path) -> str:
    return open_user_home(root, "alice").settings.index_uri


@pytest.mark.slow
def test_a_look_at_a_home_whose_table_is_the_same_opens_no_table(root: Path, opened: list[str]) -> None:
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        assert reindex_users(first) == []  # both homes are indexed
        store = open_user_home(root, "alice").store
        memo = load_home_state(root, "homes_sensor", "alice")["table"]
        assert memo[:2] == [directory_key(store), store.table_id]
        opened.clear()

        state_file = root / "state" / "homes_sensor" / "alice.json"
        before = state_file.stat().st_mtime_ns
        time.sleep(0.01)
        note_change(root, "alice", "turns")
        second = tick(loc, instance, first.cursor)
        assert state_file.stat().st_mtime_ns != before, "alice was not looked at"
        assert reindex_users(second) == []
        assert alice_uri(root) not in opened, "the look at alice opened her table"
        # A change the table does not hold yet is still seen (from the files, as before).
        seed(root, "alice", date(2026, 11, 21), "Alice sold her first jar of honey")
        note_change(root, "alice", "turns")
        third = tick(loc, instance, second.cursor)
        assert reindex_users(third) == ["alice"]
        assert alice_uri(root) not in opened


@pytest.mark.slow
def test_a_table_rebuilt_behind_the_sensor_is_noticed_and_reindexed(
    root: Path, embedder: Embedder, opened: list[str]
) -> None:
    """Alice's table dropped and created again, empty, with her index state left naming the old
    table: the memo's id would call her day current; the table directory's key changed, so the
    sensor reads the new id, finds her day stale and puts it in her batch, which refills the table."""
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        memo = load_home_state(root, "homes_sensor", "alice")["table"]
        home = open_user_home(root, "alice", embedder=embedder)
        with home.indexer.table_lock():
            home.indexer._writer.recreate(embedder.model_name, embedder.dimension)
        assert home.store.count() == 0

        opened.clear()
        note_change(root, "alice", "rebuilt")
        second = tick(loc, instance, first.cursor)
        assert alice_uri(root) in opened  # the key changed: the table was opened to read its id
        assert members(second)["alice"]["keys"] == [f"archive:{DAY.isoformat()}.md"]
        assert run(loc, instance, batch_of(second, "alice")).success
        contents = [c for _, c, _ in open_user_home(root, "alice").store.contents()]
        assert FACTS["alice"] in contents

        new_memo = load_home_state(root, "homes_sensor", "alice")["table"]
        assert new_memo[1] == open_user_home(root, "alice").store.table_id != memo[1]
        note_change(root, "alice", "turns")
        third = tick(loc, instance, second.cursor)  # current again: nothing more requested
        assert reindex_users(third) == []


@pytest.mark.slow
def test_a_replaced_table_directory_is_noticed_and_reindexed(root: Path, embedder: Embedder) -> None:
    """Alice's table directory replaced by another table of the same rows (rebuilt elsewhere and
    moved into place, as a restore from a copy moves one): her index state names the old table, so
    the sensor must reindex her day; then the state names the new table and she is current."""
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        memo = load_home_state(root, "homes_sensor", "alice")["table"]
        settings = open_user_home(root, "alice").settings
        here = table_damage.table_dir(settings.index_uri, settings.table_name)
        assert here is not None
        scratch = root.parent / "scratch"
        shutil.copytree(settings.home, scratch, symlinks=True)
        copy = Home(Settings.load(scratch, env={}), embedder)
        copy.indexer.sweep(rebuild=True)  # same rows, a new table id; alice's state is untouched
        new_id = copy.store.table_id
        assert new_id and new_id != memo[1]
        shutil.rmtree(here)
        shutil.move(str(scratch / "index" / here.name), str(here))

        note_change(root, "alice", "restored")
        second = tick(loc, instance, first.cursor)
        assert reindex_users(second) == ["alice"]
        assert run(loc, instance, batch_of(second, "alice")).success
        assert load_home_state(root, "homes_sensor", "alice")["table"][1] == new_id

        note_change(root, "alice", "turns")
        third = tick(loc, instance, second.cursor)
        assert reindex_users(third) == []
        assert open_user_home(root, "alice").store.table_id == new_id


@pytest.mark.slow
def test_the_optimize_check_opens_the_table_only_when_its_directory_leaves_a_reason(
    root: Path, embedder: Embedder, opened: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten minutes on, the optimize check is due: alice's table directory holds few files and
    versions and no day has passed since her table counted as optimised, so the check finds nothing
    with no table opened. A day on, her table changed since: the directory leaves the daily reason
    possible, so the table is opened and the optimize is in her batch."""
    now = [freshness.clock()]
    monkeypatch.setattr(freshness, "clock", lambda: now[0])
    with location(MEMORY_ROOT=str(root)) as loc, dg.instance_for_test() as instance:
        first = tick(loc, instance, None)
        checked_at, optimized_at, version = load_home_state(root, "homes_sensor", "alice")["optimize"]
        assert checked_at == optimized_at == now[0] and version is not None  # the first look

        opened.clear()
        now[0] += 11 * 60
        note_change(root, "alice", "turns")
        second = tick(loc, instance, first.cursor)
        assert load_home_state(root, "homes_sensor", "alice")["optimize"] == [now[0], optimized_at, version]
        assert alice_uri(root) not in opened
        assert not any(m["optimize"] for m in members(second).values())

        seed(root, "alice", date(2026, 11, 21), "Alice sold her first jar of honey")
        open_user_home(root, "alice", embedder=embedder).indexer.sweep()
        now[0] += 25 * 3600
        note_change(root, "alice", "turns")
        third = tick(loc, instance, second.cursor)
        assert alice_uri(root) in opened
        [reason] = members(third)["alice"]["optimize"]
        assert "a day since the last optimize" in reason
        latest = open_user_home(root, "alice").store.stats().version
        assert load_home_state(root, "homes_sensor", "alice")["optimize"] == [now[0], now[0], latest]
