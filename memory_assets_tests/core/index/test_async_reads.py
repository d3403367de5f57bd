import asyncio
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import date

import pytest

from memory_assets.core.index.async_reads import run
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.index.store import MemoryStore
from memory_assets.core.search.retrieval import search
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import write_facts
from memory_assets_tests.core.search.test_retrieval import build


async def _thread_name() -> str:
    await asyncio.sleep(0)
    return threading.current_thread().name


async def _fail() -> None:
    raise ValueError("from the coroutine")


def test_run_uses_the_calling_thread_and_raises_what_the_coroutine_raises() -> None:
    assert run(_thread_name()) == threading.current_thread().name
    assert run(_thread_name()) == threading.current_thread().name  # the thread's loop is reused
    with pytest.raises(ValueError, match="from the coroutine"):
        run(_fail())


def test_run_inside_a_running_event_loop_uses_a_worker_thread() -> None:
    async def caller() -> str:
        return run(_thread_name())

    name = asyncio.run(caller())
    assert name.startswith("memory-async-reads") and name != threading.current_thread().name


def test_search_from_threads_and_from_inside_an_event_loop_returns_the_same_hits(
    settings: Settings, indexer: Indexer
) -> None:
    build(settings, indexer)
    vector = indexer.embedder.embed_query("food allergies")

    def ids() -> list[str]:
        return [h.id for h in search(indexer.store, "food allergies", query_vector=vector)]

    expected = ids()
    assert len(expected) == 3
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert [f.result() for f in [pool.submit(ids) for _ in range(8)]] == [expected] * 8

    async def assistant() -> list[str]:  # an async caller of the synchronous library
        return ids()

    assert asyncio.run(assistant()) == expected


def test_a_reader_sees_what_another_handle_committed_since_its_last_search(
    settings: Settings, indexer: Indexer
) -> None:
    build(settings, indexer)
    reader = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    assert not search(reader, "Grenoble", embedder=None)
    write_facts(settings, date(2026, 11, 28), "Moved to Grenoble for a new job")
    indexer.sweep()  # the indexer's own handle commits
    hits = search(reader, "Grenoble", embedder=None)
    assert [h.content for h in hits] == ["Moved to Grenoble for a new job"]


def test_after_its_own_commits_a_store_searches_without_reading_the_table_facts_again(
    settings: Settings, indexer: Indexer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write path's turn: a search, a commit through the same store, a search. The second
    search brings the table facts forward through the commit (one more row) instead of asking
    the synchronous handle; after another handle's commit it reads them again."""
    build(settings, indexer)
    store = indexer.store
    assert search(store, "Hetzner", embedder=None)
    reads: list[int] = []
    real = MemoryStore.read_facts
    monkeypatch.setattr(MemoryStore, "read_facts", lambda self: reads.append(1) or real(self))
    write_facts(settings, date(2026, 11, 28), "Moved to Grenoble for a new job")
    indexer.reindex_day(date(2026, 11, 28))  # a commit through the same store
    assert [h.content for h in search(store, "Grenoble", embedder=None)] == [
        "Moved to Grenoble for a new job"
    ]
    facts, _ = run(store.read_latest())
    assert reads == [] and facts.rows == store.count() == 4
    other = Indexer(settings, embedder=indexer.embedder)  # another handle's commit
    write_facts(settings, date(2026, 11, 29), "Sold the Hetzner VPS")
    other.reindex_day(date(2026, 11, 29))
    assert "Sold the Hetzner VPS" in [h.content for h in search(store, "Hetzner VPS", embedder=None)]
    assert reads and run(store.read_latest())[0].rows == 5


def test_a_forked_child_runs_on_a_loop_of_its_own() -> None:
    import multiprocessing

    run(_thread_name())  # this thread now has a loop the child must not reuse
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        assert pool.apply(_child_runs) == "ok"


def _child_runs() -> str:
    from memory_assets.core.index import async_reads

    assert getattr(async_reads._LOCAL, "runner", None) is None
    run(_thread_name())
    return "ok"


def test_a_long_lived_reader_follows_a_rebuild_made_by_another_process(
    settings: Settings, indexer: Indexer
) -> None:
    """A LanceDB handle never moves back to a lower version: after another process drops and
    recreates the table (``reindex --rebuild``), it would keep reading the old table's deleted
    files. The store sees the new table directory and opens it afresh."""
    build(settings, indexer)
    for day in range(1, 9):  # more commits than the rebuild will make
        write_facts(settings, date(2026, 10, day), f"Walked {day} km on the first of October's days")
        indexer.sweep()
    reader = MemoryStore(settings.index_uri, settings.table_name, settings.user_id)
    assert [h.content for h in search(reader, "Hetzner", embedder=None)][:1] == [
        "Deploys the side project on a Hetzner VPS with Docker Compose"
    ]
    old_version = reader.version()
    write_facts(settings, date(2026, 11, 28), "Moved the side project from Hetzner to a Raspberry Pi")
    env = {**os.environ, "MEMORY_HOME": str(settings.home)}
    subprocess.run(
        [sys.executable, "-m", "memory_assets.cli", "--home", str(settings.home), "reindex", "--rebuild"],
        check=True,
        env=env,
        capture_output=True,
    )
    assert reader.version() < old_version  # the rebuilt table's history starts again
    hits = search(reader, "Hetzner Raspberry", embedder=None)
    assert "Moved the side project from Hetzner to a Raspberry Pi" in [h.content for h in hits]
    assert reader.count() == indexer.store.count() == 12
