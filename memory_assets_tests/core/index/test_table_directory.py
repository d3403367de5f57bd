"""What a table's directory says without opening the table (``table_directory``): the table's id
from a memo keyed by the directory, kept while the directory is the same table, read again from
the table when the table was rebuilt, its directory replaced, its state written against another
table, a day passed or when asked to verify; the versions, latest version and data files it
holds, as the table's own statistics give them, and when they rule the optimize check out. Real
LanceDB tables indexed with the real model; the table is opened (``MemoryStore.table``) only
where said, counted by a wrapper that calls the real method."""

import json
import shutil
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from memory_assets.core.home import Home
from memory_assets.core.index import table_damage
from memory_assets.core.index.index_state import IndexState
from memory_assets.core.index.maintenance import (
    FRAGMENTS_SOFT,
    OPTIMIZE_EVERY_S,
    VERSIONS_SOFT,
    MaintenanceClock,
)
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.index.table_directory import (
    NO_TABLE,
    VERIFY_EVERY_S,
    Bounds,
    bounds,
    directory_key,
    index_state,
    manifest_version,
)
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.ops.status import init_home
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts

NOW = 1_800_000_000.0


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The URIs of every opening of a table (``MemoryStore.table``, the real method underneath)."""
    calls: list[str] = []
    real = MemoryStore.table

    def table(self: MemoryStore) -> Any:
        calls.append(self.uri)
        return real(self)

    monkeypatch.setattr(MemoryStore, "table", table)
    yield calls


def indexed_home(base: Path, embedder: Embedder, fact: str) -> Settings:
    settings = Settings.load(base, env={})
    init_home(settings)
    write_facts(settings, date(2026, 11, 20), fact)
    Home(settings, embedder).indexer.sweep()
    return settings


def fresh_store(settings: Settings) -> MemoryStore:
    """A store as a sensor's look makes it: nothing opened yet."""
    return MemoryStore.of(settings)


def test_no_table_directory_is_no_table_and_opens_nothing(tmp_path: Path, opened: list[str]) -> None:
    settings = Settings.load(tmp_path / "home", env={})
    init_home(settings)
    store = fresh_store(settings)
    assert directory_key(store) == NO_TABLE
    state, memo, was_opened = index_state(store, settings.index_state_path, None, NOW)
    assert (state.table, state.files, memo, was_opened) == (None, {}, None, False)
    assert opened == []


def test_the_memo_stands_for_the_table_until_it_is_rebuilt(
    tmp_path: Path, embedder: Embedder, opened: list[str]
) -> None:
    settings = indexed_home(tmp_path / "home", embedder, "Ada keeps a ledger of every sunrise")
    table_id = fresh_store(settings).table_id
    assert table_id
    opened.clear()

    state, memo, was_opened = index_state(fresh_store(settings), settings.index_state_path, None, NOW)
    assert was_opened and len(opened) == 1
    assert memo == [directory_key(fresh_store(settings)), table_id, NOW]
    assert state.discarded is None and "archive:2026-11-20.md" in state.files

    # The same table: its id comes from the memo, and the table is not opened.
    again, memo2, was_opened = index_state(fresh_store(settings), settings.index_state_path, memo, NOW)
    assert (again.files, memo2, was_opened) == (state.files, memo, False)
    assert len(opened) == 1
    # Asked to verify (the caller opens the table anyway): opened, and the id read again.
    _, memo3, was_opened = index_state(
        fresh_store(settings), settings.index_state_path, memo, NOW + 60, verify=True
    )
    assert was_opened and memo3 == [memo[0], table_id, NOW + 60] and len(opened) == 2
    # A day after it was last read, it is read again (a table overwritten file by file in place).
    later = NOW + VERIFY_EVERY_S - 1
    assert index_state(fresh_store(settings), settings.index_state_path, memo, later)[2] is False
    _, memo4, was_opened = index_state(fresh_store(settings), settings.index_state_path, memo, later + 1)
    assert was_opened and memo4 == [memo[0], table_id, later + 1] and len(opened) == 3

    # Rebuilt in place (``reindex --rebuild``): a new table id, the state written against it. The
    # directory's key changed, so the table is opened and the new id read; the state stands.
    Home(settings, embedder).indexer.sweep(rebuild=True)
    rebuilt_id = fresh_store(settings).table_id
    assert rebuilt_id and rebuilt_id != table_id
    assert directory_key(fresh_store(settings)) != memo[0]
    opened.clear()
    state, memo5, was_opened = index_state(fresh_store(settings), settings.index_state_path, memo, NOW)
    assert was_opened and memo5 is not None and memo5[1] == rebuilt_id
    assert state.discarded is None and "archive:2026-11-20.md" in state.files


def test_a_table_recreated_behind_the_state_discards_the_state(tmp_path: Path, embedder: Embedder) -> None:
    """The table dropped and created again with nothing rewriting the index state (the state still
    names the old table): the memo's id would take the state as current; the directory's key
    changed, so the new id is read and the state is discarded."""
    settings = indexed_home(tmp_path / "home", embedder, "Ada keeps a ledger of every sunrise")
    _, memo, _ = index_state(fresh_store(settings), settings.index_state_path, None, NOW)
    assert memo is not None
    indexer = Home(settings, embedder).indexer
    with indexer.table_lock():
        indexer._writer.recreate(embedder.model_name, embedder.dimension)
    assert json.loads(settings.index_state_path.read_text())["table"] == memo[1]  # untouched

    state, memo2, was_opened = index_state(fresh_store(settings), settings.index_state_path, memo, NOW)
    assert was_opened and memo2 is not None and memo2[1] != memo[1]
    assert state.files == {} and state.discarded is not None


def test_a_replaced_table_directory_changes_the_key(tmp_path: Path, embedder: Embedder) -> None:
    """Another table's directory moved into the table's place (a restore from a copy, a home copied
    over another) with its rebuild marker left as it was: the state, which names the old table, is
    discarded because the key of the directory changed."""
    settings = indexed_home(tmp_path / "home", embedder, "Ada keeps a ledger of every sunrise")
    other = indexed_home(tmp_path / "other", embedder, "Ada keeps a ledger of every sunrise")
    _, memo, _ = index_state(fresh_store(settings), settings.index_state_path, None, NOW)
    assert memo is not None
    here = table_damage.table_dir(settings.index_uri, settings.table_name)
    there = table_damage.table_dir(other.index_uri, other.table_name)
    assert here is not None and there is not None
    marker = fresh_store(settings).handle.generation_path()
    marker_before = marker.read_bytes() if marker is not None and marker.exists() else None

    shutil.rmtree(here)
    shutil.copytree(there, here)
    assert (marker.read_bytes() if marker is not None and marker.exists() else None) == marker_before
    assert directory_key(fresh_store(settings)) != memo[0]
    state, memo2, was_opened = index_state(fresh_store(settings), settings.index_state_path, memo, NOW)
    other_id = fresh_store(other).table_id
    assert was_opened and memo2 == [directory_key(fresh_store(settings)), other_id, NOW]
    assert state.files == {} and state.discarded is not None


def test_a_state_written_against_another_table_is_checked_against_the_table(
    tmp_path: Path, embedder: Embedder, opened: list[str]
) -> None:
    """The state naming another table than the memo (the indexer rebuilt or migrated the table and
    wrote its state, a restore reset it): the table is opened to know which is right."""
    settings = indexed_home(tmp_path / "home", embedder, "Ada keeps a ledger of every sunrise")
    state, memo, _ = index_state(fresh_store(settings), settings.index_state_path, None, NOW)
    assert memo is not None
    IndexState(table="another-table", files=dict(state.files)).save(settings.index_state_path)
    opened.clear()
    again, memo2, was_opened = index_state(fresh_store(settings), settings.index_state_path, memo, NOW)
    assert was_opened and len(opened) >= 1 and memo2 == memo
    assert again.files == {} and again.discarded is not None


@pytest.mark.parametrize("change", ["versions", "marker"])
def test_the_key_follows_the_versions_directory_and_the_rebuild_marker(
    tmp_path: Path, embedder: Embedder, change: str
) -> None:
    settings = indexed_home(tmp_path / "home", embedder, "Ada keeps a ledger of every sunrise")
    store = fresh_store(settings)
    before = directory_key(store)
    directory = table_damage.table_dir(settings.index_uri, settings.table_name)
    assert directory is not None and before not in (None, NO_TABLE)
    if change == "versions":  # the versions put back from a copy: another directory
        shutil.copytree(directory / "_versions", directory / "_versions.copy")
        shutil.rmtree(directory / "_versions")
        (directory / "_versions.copy").rename(directory / "_versions")
    else:  # what every rebuild writes
        marker = store.handle.generation_path()
        assert marker is not None
        marker.write_text("another generation\n")
    assert directory_key(fresh_store(settings)) != before


def test_a_table_on_an_object_store_is_not_memoised() -> None:
    assert directory_key(MemoryStore("s3://bucket/index")) is None


def test_the_bounds_of_a_table_directory_are_what_the_table_says(tmp_path: Path, embedder: Embedder) -> None:
    """The versions kept, the latest version and (from above) the fragments, as the table's own
    statistics give them, after several commits; no directory, no table; an object store, unknown."""
    settings = indexed_home(tmp_path / "home", embedder, "Ada keeps a ledger of every sunrise")
    for n in range(3):
        write_facts(settings, date(2026, 11, 21 + n), f"Ada planted {n + 3} pear trees by the river")
        Home(settings, embedder).indexer.sweep()
    stats = fresh_store(settings).stats()
    held = bounds(fresh_store(settings))
    assert held is not None and held.exists
    assert (held.versions, held.version) == (stats.versions, stats.version)
    assert stats.fragments <= held.data_files and stats.versions > 3

    empty = Settings.load(tmp_path / "empty", env={})
    init_home(empty)
    assert bounds(fresh_store(empty)) == Bounds(exists=False)
    assert bounds(MemoryStore("s3://bucket/index")) is None


def test_a_manifest_name_is_its_version_in_either_naming_scheme() -> None:
    assert manifest_version("7.manifest") == 7
    assert manifest_version("18446744073709551614.manifest") == 1
    assert manifest_version("18446744073709551606.manifest") == 9
    assert manifest_version("latest_version_hint.json") is None


def test_the_optimize_check_is_ruled_out_only_when_no_reason_is_possible() -> None:
    day = OPTIMIZE_EVERY_S
    small = Bounds(exists=True, data_files=FRAGMENTS_SOFT, versions=VERSIONS_SOFT, version=12)
    assert MaintenanceClock(0.0, None).ruled_out(Bounds(exists=False), NOW)  # no table: nothing to optimise
    assert MaintenanceClock(NOW - day + 1, 3).ruled_out(small, NOW)  # within a day, within the bounds
    assert MaintenanceClock(NOW - day, 12).ruled_out(small, NOW)  # a day, but the version optimised
    assert not MaintenanceClock(NOW - day, 11).ruled_out(small, NOW)  # a day and the table changed
    assert not MaintenanceClock(NOW, 12).ruled_out(
        Bounds(True, FRAGMENTS_SOFT + 1, 1, 12), NOW
    )  # maybe fragments
    assert not MaintenanceClock(NOW, 12).ruled_out(Bounds(True, 1, VERSIONS_SOFT + 1, 12), NOW)  # versions
    assert not MaintenanceClock(NOW - day, 12).ruled_out(Bounds(True, 1, 1, None), NOW)  # version unknown
    assert not MaintenanceClock(0.0, None).ruled_out(small, NOW)  # the first look records the version
    assert not MaintenanceClock(NOW, 12).ruled_out(None, NOW)  # an object store: ask the table
