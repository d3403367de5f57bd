"""The table's writer: what a prune removes, and what it keeps for the readers still on a version."""

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memory_assets.core.index.rows import IndexRow
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.index.table_writer import CUTOFF_MARGIN, TableWriter, cleanup_age
from memory_assets.core.settings import Settings
from memory_assets.core.sources import ARCHIVE

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def _versions(*ages_s: float) -> list[dict[str, object]]:
    """``list_versions()`` entries committed that many seconds before ``NOW`` (oldest first), with
    LanceDB's naive UTC timestamps."""
    return [
        {"version": n + 1, "timestamp": (NOW - timedelta(seconds=age)).replace(tzinfo=None), "metadata": {}}
        for n, age in enumerate(ages_s)
    ]


def test_a_version_is_kept_for_the_grace_after_a_newer_one_replaced_it_however_old_it_is() -> None:
    """LanceDB prunes by commit time: a version committed a day ago and replaced a second ago would
    go at once, from under the reader that opened it as the latest. The age handed to it keeps it."""
    day = 86_400.0
    grace = timedelta(seconds=30)
    versions = _versions(2 * day, day, 1.0)  # v2 was the latest until a second ago
    age = cleanup_age(versions, grace, NOW)
    assert age is not None and NOW - age == NOW - timedelta(seconds=day) - CUTOFF_MARGIN  # v1 goes, v2 stays
    # the latest stays whatever its age (LanceDB never removes it): an age of zero keeps it alone
    assert cleanup_age(_versions(2 * day, day), grace, NOW) == timedelta(0)
    # the cutoff falls half way between two versions, never closer to the one kept than the margin
    assert cleanup_age(_versions(50, 44, 10), grace, NOW) == timedelta(seconds=47)
    # versions committed together (a reindex's delete and add) are kept together
    assert cleanup_age(_versions(50, 40.5, 40, 10), grace, NOW) == timedelta(seconds=45.25)
    assert cleanup_age(_versions(40.5, 40, 10), grace, NOW) is None  # nothing can go
    # only the latest must stay: exactly that
    assert cleanup_age(_versions(300, 200, 100), grace, NOW) == timedelta(0)
    # no grace: everything but the latest
    assert cleanup_age(versions, timedelta(0), NOW) == timedelta(0)


def _row(n: int, content: str) -> IndexRow:
    return IndexRow(
        id=f"row-{n}",
        content=content,
        source_type=ARCHIVE,
        source_file="2026-11-01.md",
        chunk_index=n,
        category="general",
        importance=0.5,
        source_date="2026-11-01",
        fact_date="2026-11-01",
        metadata=json.dumps({"n": n}),
    )


def _add(store: MemoryStore, n: int, content: str) -> None:
    vector = np.random.default_rng(n).normal(size=(1, 4)).astype(np.float32)
    TableWriter(store).apply_diff(store.table(), [], [_row(n, content)], vector, [None])


def _holding(directory: Path, text: bytes) -> list[str]:
    return [
        str(path.relative_to(directory))
        for path in directory.rglob("*")
        if path.is_file() and text in path.read_bytes()
    ]


def test_a_prune_keeps_the_versions_replaced_within_the_grace(settings: Settings) -> None:
    grace = timedelta(seconds=8)  # well above an optimize on a loaded machine
    store = MemoryStore(settings.index_uri)
    writer = TableWriter(store)
    writer.table_for_write("test-model", 4)
    _add(store, 0, "Fact 0")
    time.sleep(3)  # commits further apart than a cutoff's gap
    _add(store, 1, "Fact 1")  # it replaced Fact 0's version: more than the grace ago, by the optimize
    time.sleep(grace.total_seconds() + 1)
    _add(store, 2, "Fact 2")  # replacing Fact 1's version just now ...
    latest = store.version()
    _add(store, 3, "Fact 3")  # ... and this one too
    writer.optimize(retention=timedelta(0), grace=grace)
    kept = [int(v["version"]) for v in store.table().list_versions()]
    assert {latest - 1, latest, latest + 1} <= set(kept)  # replaced within the grace, or the latest
    assert latest - 2 not in kept  # replaced more than the grace ago
    time.sleep(grace.total_seconds() + 1)
    assert writer.prune_versions(grace).removed >= 1
    assert len(store.table().list_versions()) == 1  # every version replaced over the grace ago gone


def test_an_erase_prunes_every_older_version_and_the_bytes_go(settings: Settings) -> None:
    """``keep_latest_only``: what an erase calls. A deleted row's bytes stay in the data file of the
    versions before the delete; once the compaction rewrote it and the prune removed them, no file
    of the table holds them."""
    store = MemoryStore(settings.index_uri)
    writer = TableWriter(store)
    writer.table_for_write("test-model", 4)
    _add(store, 0, "Keeps a zanzibar quokka passport in the drawer")
    _add(store, 1, "Walks to work on Tuesdays")
    writer.delete_ids(["row-0"], 10)
    directory = Path(settings.index_uri) / "archival_memories.lance"
    assert _holding(directory, b"quokka")  # deleted, yet still on the disk
    writer.optimize(grace=timedelta(seconds=600))
    pruned = writer.prune_versions(timedelta(seconds=600), keep_latest_only=True)
    assert pruned.done and pruned.removed >= 3 and not pruned.tags
    assert _holding(directory, b"quokka") == []
    assert [c for _, c, _ in store.contents()] == ["Walks to work on Tuesdays"]
    assert len(store.table().list_versions()) == 1
